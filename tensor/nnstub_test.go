package tensor_test

var nnEmbeddingFixtures, nnAttentionFixtures map[string]nnFixtureFunc

package tensor_test

var nnInterpolateFixtures, nnEmbeddingFixtures, nnAttentionFixtures map[string]nnFixtureFunc

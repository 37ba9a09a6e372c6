package tensor_test

var nnPoolFixtures, nnInterpolateFixtures, nnEmbeddingFixtures, nnAttentionFixtures map[string]nnFixtureFunc

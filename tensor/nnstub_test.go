package tensor_test

var nnAttentionFixtures map[string]nnFixtureFunc

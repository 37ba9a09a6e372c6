package nn

// SetFuseFeedForward turns the feed-forward blocks' fused first layer and
// activation on or off for both activations, for the tests and benchmarks
// of package nn_test, and returns a function that restores the previous
// setting.
func SetFuseFeedForward(on bool) (restore func()) {
	old := fuseFeedForward
	fuseFeedForward = map[string]bool{"relu": on, "gelu": on}
	return func() { fuseFeedForward = old }
}

package nn

// SetFuseFeedForward turns the feed-forward blocks' fused first layer and
// activation on or off for the tests and benchmarks of package nn_test,
// returning the previous setting.
func SetFuseFeedForward(on bool) (old bool) {
	old, fuseFeedForward = fuseFeedForward, on
	return old
}

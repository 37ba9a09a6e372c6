package fusion

// SetUseTileRunner turns running groups on the wrapped backend's runtime
// (TileRunner) on or off, for benchmarks that compare the two; it returns
// the previous setting.
func SetUseTileRunner(on bool) bool { return useTileRunner.Swap(on) }

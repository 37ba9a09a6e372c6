package fusion

// SetUseTileRunner turns running groups on the wrapped backend's runtime
// (TileRunner) on or off, for benchmarks that compare the two; it returns
// the previous setting.
func SetUseTileRunner(on bool) bool { return useTileRunner.Swap(on) }

// SegmentKernel names the segment kernel fused groups run on: "avx512",
// "avx2", or "" where this build or CPU has none (their ops then run as
// tile kernels, one op a pass).
func SegmentKernel() string { return segKernel }

// UseSegmentKernel makes fused groups run on segment kernel name (as
// SegmentKernel names them) until restore is called, so that tests check
// each kernel the CPU can run, not only the fastest; ok is false, and
// nothing changes, where it cannot run name. Tests that use it must not
// run in parallel with other fused work.
func UseSegmentKernel(name string) (restore func(), ok bool) {
	prev, ok := setSegmentKernel(name)
	if !ok {
		return func() {}, false
	}
	return func() { setSegmentKernel(prev) }, true
}

//go:build !amd64 || purego

package fusion

// hasSegment: this build has no segment kernel.
const hasSegment = false

// segBlock would be the elements the kernel does at a time.
const segBlock = 128

// runSegment does nothing in this build: segments run op by op.
func runSegment(prog []segInst, n, ahead int) int { return 0 }

// storeFence does nothing in this build.
func storeFence() {}

// segKernel names the segment kernel: none in this build.
const segKernel = ""

// setSegmentKernel selects a segment kernel for tests: only "" (none)
// exists in this build, and ok is false for any other name.
func setSegmentKernel(name string) (prev string, ok bool) { return "", name == "" }

//go:build !amd64 || purego

package fusion

// wideSum: the CPU backend has no sixteen-lane sum kernel in this build.
const wideSum = false

// sumLanesF32 has no kernel in this build.
func sumLanesF32(l *[16]float64, x []float32) bool { return false }

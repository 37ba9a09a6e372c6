//go:build !purego

package fusion

import "github.com/klauspost/cpuid/v2"

// wideSum: the CPU backend sums float32 runs with its sixteen-lane AVX2
// kernel here (backends/cpu: hasAVX2, which asks for AVX2 and FMA3), so
// reduction tails take that order.
var wideSum = cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3)

// sumLanesAVX adds x[16i+k] into lanes[k] for i < n/16 (n a multiple of
// 16), in order, in float64 (see reduce_amd64.s).
//
//go:noescape
func sumLanesAVX(lanes *[16]float64, x *float32, n int)

// sumLanesF32 runs sumLanesAVX where the CPU has AVX2 and reports whether
// it did.
func sumLanesF32(l *[16]float64, x []float32) bool {
	if !wideSum || len(x) < 16 {
		return false
	}
	sumLanesAVX(l, &x[0], len(x)&^15)
	return true
}

//go:build !purego

package cpu

// geluTanhF32AVX2Paired is geluTanhF32AVX2 with the same results bit for
// bit, sixteen lanes an iteration (pairedF32): geluTanhF32AVX2Pairs
// computes the blocks of sixteen whose inputs are all finite.
var geluTanhF32AVX2Paired = pairedF32(16, geluTanhF32AVX2Pairs, geluTanhF32AVX2)

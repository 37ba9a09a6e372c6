//go:build !purego

package cpu

// logF32AVX2Paired is logF32AVX2 with the same results bit for bit,
// sixteen lanes an iteration (pairedF32): logF32AVX2Pairs takes the blocks
// of sixteen whose inputs are all positive and finite, logF32AVX2 the
// rest (blocks with zeros, negatives, ±Inf or NaN, and the last n mod 16).
var logF32AVX2Paired = pairedF32(16, logF32AVX2Pairs, logF32AVX2)

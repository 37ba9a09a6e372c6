// Package sizeclass rounds allocation requests up to the block sizes the
// GPU backends' caching allocators (cuda, vulkan) keep: powers of two from
// a minimum up to 1 MiB, then multiples of 2 MiB, so that freed blocks
// serve later requests of nearby sizes.
package sizeclass

// The classes: powers of two up to SmallLimit, then multiples of LargeStep.
const (
	SmallLimit = 1 << 20
	LargeStep  = 2 << 20
)

// Of returns the size of the block that serves a request of n bytes: min
// (itself a power of two) for n ≤ min, the next power of two up to
// SmallLimit, else n rounded up to a multiple of LargeStep.
func Of(n, min int64) int64 {
	if n <= min {
		return min
	}
	if n <= SmallLimit {
		c := min
		for c < n {
			c <<= 1
		}
		return c
	}
	return (n + LargeStep - 1) / LargeStep * LargeStep
}

//go:build !purego

package fusion

import "github.com/klauspost/cpuid/v2"

// hasSegment: segmentF32 runs here (AVX-512 Foundation).
var hasSegment = cpuid.CPU.Supports(cpuid.AVX512F)

// segmentF32 runs the nprog instructions of prog over n elements (a
// multiple of segBlock), a block at a time (see segment_amd64.s); its
// PREFETCH instructions reach ahead bytes past the block.
//
//go:noescape
func segmentF32(prog *segInst, nprog int, n int, ahead int)

// storeFence orders the non-temporal stores of segmentF32 before any
// later store (SFENCE): a worker runs it after its last tile.
//
//go:noescape
func storeFence()

// segBlock is the elements the kernel does at a time; it does whole
// blocks only.
const segBlock = 128

// runSegment runs prog over the longest prefix of whole blocks of n
// elements, prefetching ahead bytes ahead, and returns how many it did (0
// where the CPU lacks AVX-512).
func runSegment(prog []segInst, n, ahead int) int {
	n &^= segBlock - 1
	if !hasSegment || n == 0 || len(prog) == 0 {
		return 0
	}
	segmentF32(&prog[0], len(prog), n, ahead)
	return n
}

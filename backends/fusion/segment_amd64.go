//go:build !purego

package fusion

import "github.com/klauspost/cpuid/v2"

// The segment kernels: segmentF32 (AVX-512, segment_amd64.s) where the CPU
// has AVX-512 Foundation, else segmentF32AVX2 (segment_avx2_amd64.s) where
// it has AVX2. Both give the same bits (the unfused ones); tests select
// the AVX2 one on AVX-512 machines too (setSegmentKernel).
var (
	hasAVX512Segment = cpuid.CPU.Supports(cpuid.AVX512F)
	hasAVX2Segment   = cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2)
)

// segKernel is the kernel runSegment calls.
var segKernel = defaultSegmentKernel()

// hasSegment: a segment kernel runs here (planSteps builds segments only
// then).
var hasSegment = segKernel != ""

// defaultSegmentKernel is the fastest kernel the CPU runs: "avx512",
// "avx2" or "" (none).
func defaultSegmentKernel() string {
	switch {
	case hasAVX512Segment:
		return "avx512"
	case hasAVX2Segment:
		return "avx2"
	}
	return ""
}

// setSegmentKernel makes runSegment call kernel name ("avx512", "avx2",
// or "" for none) and returns the previous one; ok is false, and nothing
// changes, where the CPU cannot run it. It is for tests, which must not
// run fused groups meanwhile.
func setSegmentKernel(name string) (prev string, ok bool) {
	switch name {
	case "avx512":
		ok = hasAVX512Segment
	case "avx2":
		ok = hasAVX2Segment
	case "":
		ok = true
	}
	if !ok {
		return segKernel, false
	}
	prev, segKernel, hasSegment = segKernel, name, name != ""
	return prev, true
}

// segmentF32 runs the nprog instructions of prog over n elements (a
// multiple of segBlock), a block at a time (see segment_amd64.s); its
// PREFETCH instructions reach ahead bytes past the block.
//
//go:noescape
func segmentF32(prog *segInst, nprog int, n int, ahead int)

// segmentF32AVX2 is segmentF32 in AVX2 registers (segment_avx2_amd64.s),
// half a block at a time, for CPUs without AVX-512.
//
//go:noescape
func segmentF32AVX2(prog *segInst, nprog int, n int, ahead int)

// storeFence orders the non-temporal stores of the segment kernels
// before any later store (SFENCE): a worker runs it after its last tile.
//
//go:noescape
func storeFence()

// segBlock is the elements the kernel does at a time; it does whole
// blocks only.
const segBlock = 128

// runSegment runs prog over the longest prefix of whole blocks of n
// elements, prefetching ahead bytes ahead, and returns how many it did (0
// where the CPU has no segment kernel).
func runSegment(prog []segInst, n, ahead int) int {
	n &^= segBlock - 1
	if !hasSegment || n == 0 || len(prog) == 0 {
		return 0
	}
	if segKernel == "avx2" {
		segmentF32AVX2(&prog[0], len(prog), n, ahead)
	} else {
		segmentF32(&prog[0], len(prog), n, ahead)
	}
	return n
}

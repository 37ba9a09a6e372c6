package cpu

import (
	"math/bits"

	"github.com/klauspost/cpuid/v2"
)

// caches holds data cache sizes in bytes (0 where unknown).
type caches struct{ l1d, l2, l3 int }

// detectCaches reads the cache sizes with CPUID (klauspost/cpuid), which
// works in virtual machines that hide /sys's cache topology.
func detectCaches() caches {
	c := cpuid.CPU.Cache
	return caches{max(c.L1D, 0), max(c.L2, 0), max(c.L3, 0)}
}

// blockSizes derives the GEMM blocks from the caches and row, the bytes in
// a row of the default kernel's B micro-panels: 128 for the AVX-512
// kernels (32 float32 or 16 float64 columns), 64 where the AVX2 kernel
// (16 float32 columns) is the fastest.
//
// kc: with 128-byte rows a kc×NR micro-panel fills L1, rounded down to a
// power of two (256 on 32 and on 48 KiB); with 64-byte rows it fills half
// of L1 (256 on 32 KiB). A power of two splits K = 256, 512, 1024 and 2048
// into equal blocks with no short last one. On a Zen 4 (32 KiB L1, 1 MiB
// L2) kc = 256 against the two thirds of L1 it had before (160),
// alternating, one thread: sgemm n = 256 to 2048 2 to 5% faster, a
// GPT-style training step 2 to 5% faster (d = 256 and 512), bf16 GEMM n =
// 1024 4% faster, ResNet-18 and the MNIST steps even; two threads even.
// The panel does not stay in L1 whole while A streams through it, but
// this core reloads it from L2 faster than it loses to the extra passes
// over C of the shorter blocks. 320 and 384 measured no faster, 512
// slower.
//
// mc makes an mc×kc float32 block of A fill half of L2, nb makes the
// kc×nb block of B a task walks a quarter of L2, and nc makes the packed
// B block fill half of L3. Unknown sizes count as 32 KiB, 512 KiB and 8
// MiB. kc depends only on L1 and the CPU's instruction set, so that every
// kernel this machine runs sums in the same blocks and every assembly
// kernel gives the same bits.
func blockSizes(c caches, row int) (kc, mc, nb, nc int) {
	l1, l2, l3 := c.l1d, c.l2, c.l3
	if l1 <= 0 {
		l1 = 32 << 10
	}
	if l2 <= 0 {
		l2 = 512 << 10
	}
	if l3 <= 0 {
		l3 = 8 << 20
	}
	if row >= 128 {
		kc = 1 << (bits.Len(uint(max(l1/row, 1))) - 1)
	} else {
		kc = l1 / 2 / row / 16 * 16
	}
	kc = min(max(kc, 64), 512)
	mc = min(max(l2/2/(kc*4), 48), 1024)
	nb = min(max(l2/4/(kc*4), 64), 1024)
	nc = min(max(l3/2/(kc*4), 1024), 8192)
	return kc, mc, nb, nc
}

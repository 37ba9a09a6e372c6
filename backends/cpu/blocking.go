package cpu

import "github.com/klauspost/cpuid/v2"

// caches holds data cache sizes in bytes (0 where unknown).
type caches struct{ l1d, l2, l3 int }

// detectCaches reads the cache sizes with CPUID (klauspost/cpuid), which
// works in virtual machines that hide /sys's cache topology.
func detectCaches() caches {
	c := cpuid.CPU.Cache
	return caches{max(c.L1D, 0), max(c.L2, 0), max(c.L3, 0)}
}

// blockSizes derives the GEMM blocks from the caches, assuming 128-byte
// rows of B micro-panels (32 float32 or 16 float64 columns, the AVX-512
// kernels' NR): kc so that a kc×NR micro-panel fills two thirds of L1, mc so
// that an mc×kc float32 block of A fills half of L2, nb so that the kc×nb
// block of B a task walks is a quarter of L2, and nc so that the packed B
// block fills half of L3. Unknown sizes count as 32 KiB, 512 KiB and 8 MiB.
// kc depends only on L1, so that every assembly kernel sums in the same
// blocks and gives the same bits.
func blockSizes(c caches) (kc, mc, nb, nc int) {
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
	kc = min(max(l1*2/3/128/16*16, 64), 512)
	mc = min(max(l2/2/(kc*4), 48), 1024)
	nb = min(max(l2/4/(kc*4), 64), 1024)
	nc = min(max(l3/2/(kc*4), 1024), 8192)
	return kc, mc, nb, nc
}

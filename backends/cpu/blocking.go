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

// blockSizes derives the GEMM blocks from the caches and row, the bytes in
// a row of the default kernel's B micro-panels: 128 for the AVX-512
// kernels (32 float32 or 16 float64 columns), 64 where the AVX2 kernel
// (16 float32 columns) is the fastest. kc makes a kc×NR micro-panel fill
// two thirds of L1 with 128-byte rows, half of it with 64-byte rows (kc =
// 256 on 32 KiB: a power of two, so K = 256, 512, 1024 split into equal
// blocks and no short last block; 336 measured no faster); mc makes an
// mc×kc float32 block of A fill half of L2, nb makes the kc×nb block of B
// a task walks a quarter of L2, and nc makes the packed B block fill half
// of L3. Unknown sizes count as 32 KiB, 512 KiB and 8 MiB. kc depends only
// on L1 and the CPU's instruction set, so that every kernel this machine
// runs sums in the same blocks and every assembly kernel gives the same
// bits.
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
	share := l1 * 2 / 3
	if row < 128 {
		share = l1 / 2
	}
	kc = min(max(share/row/16*16, 64), 512)
	mc = min(max(l2/2/(kc*4), 48), 1024)
	nb = min(max(l2/4/(kc*4), 64), 1024)
	nc = min(max(l3/2/(kc*4), 1024), 8192)
	return kc, mc, nb, nc
}

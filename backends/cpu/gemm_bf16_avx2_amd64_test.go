//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpandPairsAVX2 checks the AVX2 widening of pair panels against
// the portable loop for the panel widths in use and odd ones, leaving the
// floats past the block alone.
func TestExpandPairsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, w := range []int{1, 4, 6, 7, 8, 9, 14, 16, 17, 32} {
		for _, rows := range []int{0, 1, 3, 20} {
			src := make([]uint32, w*rows)
			for i := range src {
				src[i] = r.Uint32()
			}
			want, got := make([]float32, 2*w*rows+5), make([]float32, 2*w*rows+5)
			for i := range want {
				want[i] = float32(i)
				got[i] = want[i]
			}
			expandPairsGo(want, src, w)
			expandPairs(got, src, w)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("w=%d rows=%d: dst[%d] = %#x, want %#x", w, rows, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

// TestRoundSwapPairsAVX2 checks the AVX2 rounding and swapping of panel
// rows against the portable loop, on values that round up, down and to
// even, NaNs (signalling and quiet, either sign), infinities, the largest
// finite values (which round to infinity), subnormals and zeros.
func TestRoundSwapPairsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := rand.New(rand.NewPCG(11, 12))
	special := []uint32{0x7f800001, 0xffbfffff, 0x7fc00000, 0x7f800000, 0xff800000, 0x7f7fffff, 0xff7fffff,
		0x00000001, 0x807fffff, 0, 0x80000000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x3f807fff}
	for _, w := range []int{1, 6, 7, 8, 9, 16, 17} {
		for _, pairs := range []int{0, 1, 2, 9} {
			n := 2 * w * pairs
			want, got := make([]float32, n+3), make([]float32, n+3)
			for i := range want {
				b := r.Uint32()
				if r.IntN(4) == 0 {
					b = special[r.IntN(len(special))]
				}
				want[i] = math.Float32frombits(b)
				got[i] = want[i]
			}
			roundSwapPairsGo(want[:n], w)
			roundSwapPairs(got[:n], w)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("w=%d pairs=%d: v[%d] = %#x, want %#x", w, pairs, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

// TestGEMMBF16WideMatchesPortable checks that the f32 kernels (float32
// micro-kernels on widened panels) give the portable bfloat16 kernel's
// bits on whole products: odd and even K, several K-, M- and N-blocks,
// operands plain or transposed, from float32 and from bfloat16,
// replacing and accumulating, serial and in strips. The f32 kernels'
// K-blocks hold gemmKC values (the float32 GEMM's, so that their float32
// panels take its share of L1), the pair kernels' 2·gemmKC, so the
// portable kernel runs with gemmKC halved: the same K-blocks, whose sums
// are added to C at the same points.
func TestGEMMBF16WideMatchesPortable(t *testing.T) {
	old := [4]int{gemmKC, gemmMC, gemmNB, gemmNC}
	defer func() { gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3] }()
	var wide []bf16Kernel
	for _, k := range kernelsBF16 {
		if k.f32 != nil {
			wide = append(wide, k)
		}
	}
	if len(wide) == 0 {
		t.Skip("no f32 bfloat16 kernel on this CPU")
	}
	be := New(3)
	r := rand.New(rand.NewPCG(13, 14))
	n := 0
	for _, small := range []bool{false, true} {
		gemmKC, gemmMC, gemmNB, gemmNC = old[0]&^1, old[1], old[2], old[3]
		if small {
			gemmKC, gemmMC, gemmNC = 6, 20, 40
		}
		kc := gemmKC
		for _, m := range []int{1, 13, 70} {
			for _, nn := range []int{5, 33, 90} {
				for _, k := range []int{1, 8, 37, 300} {
					n++
					ta, tb, f32, acc := n%2 == 1, n/2%2 == 1, n/4%2 == 1, n%3 == 1
					a, b := newBF16Matrix(r, m, k, ta), newBF16Matrix(r, k, nn, tb)
					want := make([]float32, m*nn)
					for i := range want {
						want[i] = float32(r.NormFloat64())
					}
					got := append([]float32(nil), want...)
					gemmKC = kc / 2
					gemmBF16(be, kernelsBF16[0], m, nn, k, a.src(f32), b.src(f32), bf16Dst{c: want, ld: nn, acc: acc}, false)
					gemmKC = kc
					for _, kern := range wide {
						c := append([]float32(nil), got...)
						gemmBF16(be, kern, m, nn, k, a.src(f32), b.src(f32), bf16Dst{c: c, ld: nn, acc: acc}, n%2 == 0)
						for i := range c {
							if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s small=%v m=%d n=%d k=%d aᵀ=%v bᵀ=%v from-f32=%v acc=%v: c[%d] = %v, portable %v",
									kern.name, small, m, nn, k, ta, tb, f32, acc, i, c[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

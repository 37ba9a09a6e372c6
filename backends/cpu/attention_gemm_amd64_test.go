//go:build !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAttnMulDirect compares the in-place tile products with packing the
// tile and multiplying with the same kernel, bit for bit: tiles read by
// rows, by columns and packed, B packed or (half the cases where its
// columns fill whole panels) read in place, every edge of the 8×32 and
// 6×16 kernels, sums over several K-blocks (gemmKC shrunk), setting and
// adding to C, and each trim of a causal tile (A zero where the trim
// leaves it out; with attnTrimCols only the elements left of the diagonal
// compared), for each set of in-place kernels this CPU runs.
func TestAttnMulDirect(t *testing.T) {
	if len(attnDirectVariants) == 0 {
		t.Skip("no in-place tile kernels on this CPU")
	}
	for _, v := range attnDirectVariants {
		t.Run(v.kern.name, func(t *testing.T) { testAttnMulDirect(t, v) })
	}
}

func testAttnMulDirect(t *testing.T, v attnDirectVariant) {
	kern, mr := v.kern, v.kern.mr
	run := &attnRun[float32]{kern: kern}
	saved := gemmKC
	defer func() { gemmKC = saved }()
	rng := rand.New(rand.NewPCG(7, 7))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	trims := []attnTrim{{attnTrimNone, 0}, {attnTrimCols, 0}, {attnTrimCols, -7}, {attnTrimCols, 20},
		{attnTrimKEnd, 0}, {attnTrimKEnd, 9}, {attnTrimKEnd, -3}, {attnTrimKStart, 0}, {attnTrimKStart, -10}, {attnTrimKStart, 4}}
	for _, kc := range []int{saved, 8} {
		gemmKC = kc
		for _, mc := range []int{1, 5, 6, 7, 8, 9, 64} {
			for _, nb := range []int{1, 16, 17, 32, 33, 64} {
				for _, k := range []int{1, 3, 4, 5, 64, 70} {
					for _, layout := range []string{"rows", "cols", "packed"} {
						for _, acc := range []bool{false, true} {
							for _, trim := range trims {
								if trim.kind != attnTrimCols && trim.kind != attnTrimNone && !acc {
									continue // the products with a k trim add to C
								}
								name := fmt.Sprintf("kc=%d %dx%dx%d %s acc=%v trim=%v B in place=%v", kc, mc, nb, k, layout, acc, trim,
									nb%kern.nr == 0 && (mc+k)%2 == 0)
								// A, mc×k: by rows with a row stride of k+3, or by
								// columns with a column stride of mc+2; room for the
								// rows the kernels read past mc
								ars, acs := k+3, 1
								if layout == "cols" {
									ars, acs = 1, mc+2
								}
								a := fill(roundUp(mc, mr)*ars + k*acs + mr)
								for i := range mc {
									_, k0, k1 := trim.span(i/mr*mr, mr, nb, k)
									for p := range k {
										d := trim.d
										if trim.kind == attnTrimKEnd && p > i+d || trim.kind == attnTrimKStart && i > p+d {
											a[i*ars+p*acs] = 0
										}
										if p < k0 || p >= k1 { // what the trim leaves out is zero
											if a[i*ars+p*acs] != 0 {
												t.Fatalf("%s: trim leaves out A[%d, %d] = %v", name, i, p, a[i*ars+p*acs])
											}
										}
									}
								}
								tmp := make([]float32, gemmKC)
								// B, k×nb, row stride nb+5: packed, and read in place
								// where nb fills whole panels
								bm := fill(k * (nb + 5))
								bp := packOp(make([]float32, packedSize(nb, k, kern.nr)),
									matSrc[float32]{s: bm, rs: 1, cs: nb + 5}, 0, nb, k, kern.nr, tmp)
								bop := attnB[float32]{s: bp}
								if nb%kern.nr == 0 && (mc+k)%2 == 0 {
									bop = attnB[float32]{s: bm, rs: nb + 5}
								}
								c0 := fill(mc * (nb + 1))
								want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
								pa := packOp(make([]float32, packedSize(mc, k, kern.mr)), matSrc[float32]{s: a, rs: ars, cs: acs},
									0, mc, k, kern.mr, tmp)
								run.mul(pa, bp, mc, nb, k, matDst[float32]{s: want, rs: nb + 1, cs: 1}, acc)
								op := attnA[float32]{s: a, rs: ars, cs: acs}
								if layout == "packed" {
									op = attnA[float32]{s: pa, packed: true}
								}
								v.mul(op, bop, mc, nb, k, matDst[float32]{s: got, rs: nb + 1, cs: 1}, acc, trim)
								for i := range mc {
									for j := range nb {
										if trim.kind == attnTrimCols && j > i+trim.d {
											continue
										}
										if !sameBits32(got[i*(nb+1)+j:][:1], want[i*(nb+1)+j:][:1]) {
											t.Fatalf("%s: C[%d, %d] = %v, want %v (packed)", name, i, j, got[i*(nb+1)+j], want[i*(nb+1)+j])
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestPackBF16Layouts packs random matrices, bfloat16 and float32, stored
// row-major (the pairs consecutive: the vector transpose), column-major
// (the panel dimension consecutive: a panel at a time), one column
// broadcast along the pairs (two whole columns at a time) and with
// neither stride 1 (the gathering fallback), into panels of every kernel
// width and of 8 and 16, with partial panels, odd K-blocks and K-blocks
// of more and fewer than 32 elements, and compares every packed word
// (padding included) with the packing written out element by element.
func TestPackBF16Layouts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type layout struct {
		name   string
		rs, cs func(rows, cols int) int
	}
	layouts := []layout{
		{"row-major", func(_, cols int) int { return cols + 3 }, func(int, int) int { return 1 }},
		{"column-major", func(int, int) int { return 1 }, func(rows, _ int) int { return rows + 1 }},
		{"strided", func(_, cols int) int { return 2 * cols }, func(int, int) int { return 2 }},
		// stride 0 along the pairs (a broadcast): whole columns paired
		// into every panel (pairPanelsF32, pairPanelsU16)
		{"column broadcast", func(int, int) int { return 1 }, func(int, int) int { return 0 }},
	}
	for _, w := range []int{8, 14, 16, 32, 64} {
		for _, rn := range []int{1, 7, 16, 17, 33, 70} {
			for _, cn := range []int{1, 2, 15, 31, 32, 33, 64, 67} {
				for _, l := range layouts {
					for _, fromF32 := range []bool{false, true} {
						name := fmt.Sprintf("w=%d rows=%d cols=%d %s from-f32=%v", w, rn, cn, l.name, fromF32)
						// a (rn+2)×(cn+2) matrix, packed from row 1 and column 1
						rows, cols := rn+2, cn+2
						rs, cs := l.rs(rows, cols), l.cs(rows, cols)
						size := (rows-1)*rs + (cols-1)*cs + 1
						src := bf16Src{rs: rs, cs: cs, off: 2}
						f := make([]float32, size+2)
						for i := range f {
							f[i] = float32(r.NormFloat64())
						}
						want := func(i, j int) uint32 { // element (i, j) of the block, as bits
							return uint32(backends.Float32ToBFloat16(f[src.off+(1+i)*rs+(1+j)*cs]))
						}
						if fromF32 {
							src.f32 = f
						} else {
							src.u16 = make([]uint16, len(f))
							for i, v := range f {
								src.u16[i] = backends.Float32ToBFloat16(v)
							}
						}
						kp := (cn + 1) / 2
						panels := (rn + w - 1) / w
						dst := make([]uint32, panels*kp*w+5)
						for i := range dst {
							dst[i] = 0xdeadbeef
						}
						packBF16(dst[:panels*kp*w], src, 1, rn, 1, cn, w, make([]uint16, 2*max(w, cn)))
						for pn := range panels {
							for q := range kp {
								for i := range w {
									var lo, hi uint32
									if row := pn*w + i; row < rn {
										lo = want(row, 2*q)
										if 2*q+1 < cn {
											hi = want(row, 2*q+1)
										}
									}
									if got, wantWord := dst[pn*kp*w+q*w+i], lo|hi<<16; got != wantWord {
										t.Fatalf("%s: panel %d pair %d row %d = %#08x, want %#08x", name, pn, q, i, got, wantWord)
									}
								}
							}
						}
						for _, v := range dst[panels*kp*w:] {
							if v != 0xdeadbeef {
								t.Fatalf("%s: wrote past the panels", name)
							}
						}
					}
				}
			}
		}
	}
}

// TestBF16HelpersEveryLength checks the vector helpers in use (cvtBF16,
// pairBF16, pairF32BF16, cvtRowsBF16, addRowsF32) against their Go versions on every
// length from 0 to 40, so every masked tail, and that they leave the
// elements past the end alone.
func TestBF16HelpersEveryLength(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const guard = 0xdead
	for n := range 41 {
		lo, hi := make([]float32, n), make([]float32, n)
		lu, hu := make([]uint16, n), make([]uint16, n)
		for i := range n {
			lo[i], hi[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			lu[i], hu[i] = uint16(r.Uint32()), uint16(r.Uint32())
		}
		cvt := make([]uint16, n+1)
		cvt[n] = guard
		cvtBF16(cvt[:n], lo)
		for i := range n {
			if want := backends.Float32ToBFloat16(lo[i]); cvt[i] != want {
				t.Fatalf("cvtBF16 n=%d: [%d] = %#04x, want %#04x", n, i, cvt[i], want)
			}
		}
		pairs := make([]uint32, n+1)
		for _, f := range []struct {
			name string
			run  func()
			want func(i int) uint32
		}{
			{"pairBF16", func() { pairBF16(pairs[:n], lu, hu) }, func(i int) uint32 { return uint32(lu[i]) | uint32(hu[i])<<16 }},
			{"pairF32BF16", func() { pairF32BF16(pairs[:n], lo, hi) }, func(i int) uint32 {
				return uint32(backends.Float32ToBFloat16(lo[i])) | uint32(backends.Float32ToBFloat16(hi[i]))<<16
			}},
		} {
			pairs[n] = guard
			f.run()
			for i := range n {
				if pairs[i] != f.want(i) {
					t.Fatalf("%s n=%d: [%d] = %#08x, want %#08x", f.name, n, i, pairs[i], f.want(i))
				}
			}
			if pairs[n] != guard {
				t.Fatalf("%s n=%d: wrote past the end", f.name, n)
			}
		}
		// cvtRowsBF16 of 3 rows of a 3×(n+2) block into one of 3×(n+1)
		block := make([]float32, 3*(n+2))
		for i := range block {
			block[i] = float32(r.NormFloat64())
		}
		rounded := make([]uint16, 3*(n+1))
		for i := range rounded {
			rounded[i] = guard
		}
		cvtRowsBF16(rounded, n+1, block, n+2, 3, n)
		for i := range 3 {
			for j := range n + 1 {
				want := uint16(guard)
				if j < n {
					want = backends.Float32ToBFloat16(block[i*(n+2)+j])
				}
				if got := rounded[i*(n+1)+j]; got != want {
					t.Fatalf("cvtRowsBF16 n=%d: [%d,%d] = %#04x, want %#04x", n, i, j, got, want)
				}
			}
		}
		// addRowsF32 on 3 rows of a 3×(n+2) block
		ldc := n + 2
		c := make([]float32, 3*ldc)
		for i := range c {
			c[i] = float32(r.NormFloat64())
		}
		want := append([]float32(nil), c...)
		addRowsF32Go(want, ldc, hi, 3)
		addRowsF32(c, ldc, hi, 3)
		for i := range c {
			if c[i] != want[i] {
				t.Fatalf("addRowsF32 n=%d: c[%d] = %v, want %v", n, i, c[i], want[i])
			}
		}
	}
}

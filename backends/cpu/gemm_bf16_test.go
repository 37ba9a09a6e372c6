package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// bf16Matrix is a random rows×cols matrix stored row-major, or
// column-major when trans is set, as bfloat16 bits and as the float32
// values before rounding.
type bf16Matrix struct {
	rows, cols int
	trans      bool
	u16        []uint16
	f32        []float32
}

func newBF16Matrix(r *rand.Rand, rows, cols int, trans bool) bf16Matrix {
	m := bf16Matrix{rows: rows, cols: cols, trans: trans, u16: make([]uint16, rows*cols), f32: make([]float32, rows*cols)}
	for i := range m.f32 {
		m.f32[i] = float32(r.NormFloat64())
		m.u16[i] = backends.Float32ToBFloat16(m.f32[i])
	}
	return m
}

func (m bf16Matrix) strides() (rs, cs int) {
	if m.trans {
		return 1, m.rows
	}
	return m.cols, 1
}

// at returns element (i, j) rounded to bfloat16, as float64.
func (m bf16Matrix) at(i, j int) float64 {
	rs, cs := m.strides()
	return float64(backends.BFloat16ToFloat32(m.u16[i*rs+j*cs]))
}

func (m bf16Matrix) src(fromF32 bool) bf16Src {
	rs, cs := m.strides()
	if fromF32 {
		return bf16Src{f32: m.f32, rs: rs, cs: cs}
	}
	return bf16Src{u16: m.u16, rs: rs, cs: cs}
}

// checkBF16Product compares float32 c (m×n, row stride ldc) with the
// float64 product of the bfloat16-rounded a and b. The products of
// bfloat16 values are exact in float32, so the only error is the float32
// summation's: at most k+1 roundings of partial sums bounded by Σ|a·b|.
func checkBF16Product(t *testing.T, what string, a, b bf16Matrix, c []float32, ldc int) {
	t.Helper()
	eps := math.Pow(2, -24)
	bad := 0
	for i := range a.rows {
		for j := range b.cols {
			var want, mag float64
			for p := range a.cols {
				x := a.at(i, p) * b.at(p, j)
				want += x
				mag += math.Abs(x)
			}
			got := float64(c[i*ldc+j])
			tol := float64(a.cols+1)*eps*mag + 1e-30
			if !(math.Abs(got-want) <= tol) {
				if bad < 3 {
					t.Errorf("%s: c[%d,%d] = %v, want %v (tolerance %g)", what, i, j, got, want, tol)
				}
				bad++
			}
		}
	}
}

// TestGEMMBF16EveryKernel runs every bfloat16 micro-kernel usable here
// (the portable one always; the AVX-512 BF16 ones where the CPU has
// VDPBF16PS) on odd sizes that are multiples of no tile, with each
// operand plain or transposed, packed from bfloat16 or from float32, with
// normal and with tiny cache blocks (several K-, M- and N-blocks, an odd
// last K-block), serial and in parallel strips.
func TestGEMMBF16EveryKernel(t *testing.T) {
	old := [4]int{gemmKC, gemmMC, gemmNB, gemmNC}
	defer func() { gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3] }()
	be := New(2)
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 7, 33, 129}
	for _, kern := range kernelsBF16 {
		for _, small := range []bool{false, true} {
			gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3]
			if small {
				gemmKC, gemmMC, gemmNC = 5, 20, 40
			}
			n := 0
			for _, m := range sizes {
				for _, nn := range sizes {
					for _, k := range sizes {
						n++
						ta, tb, f32 := n%2 == 1, n/2%2 == 1, n/4%2 == 1
						a := newBF16Matrix(r, m, k, ta)
						b := newBF16Matrix(r, k, nn, tb)
						ldc := nn + 3
						c := make([]float32, m*ldc)
						for i := range c {
							c[i] = float32(math.NaN()) // every element must be written
						}
						gemmBF16(be, kern, m, nn, k, a.src(f32), b.src(f32), bf16Dst{c: c, ld: ldc}, n%3 == 0)
						checkBF16Product(t, fmt.Sprintf("%s small=%v m=%d n=%d k=%d aᵀ=%v bᵀ=%v from-f32=%v", kern.name, small, m, nn, k, ta, tb, f32), a, b, c, ldc)
						for j := m*ldc - 3; j < m*ldc; j++ {
							if !math.IsNaN(float64(c[j])) {
								t.Fatalf("%s m=%d n=%d k=%d: wrote past the last column", kern.name, m, nn, k)
							}
						}
					}
				}
			}
		}
	}
}

// TestGEMMBF16Accumulates checks that acc adds the product to C.
func TestGEMMBF16Accumulates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, kern := range kernelsBF16 {
		a, b := newBF16Matrix(r, 9, 20, false), newBF16Matrix(r, 20, 35, false)
		c := make([]float32, 9*35)
		for i := range c {
			c[i] = 1
		}
		gemmBF16(New(1), kern, 9, 35, 20, a.src(false), b.src(false), bf16Dst{c: c, ld: 35, acc: true}, false)
		for i := range c {
			c[i]--
		}
		checkBF16Product(t, kern.name+" accumulate", a, b, c, 35)
	}
}

// TestMatmulBF16EveryKernel runs the Matmul reference cases (batches,
// broadcasts, transposed and strided operands and outputs) on BFloat16
// with every bfloat16 kernel, and checks that a BFloat16 output is the
// Float32 output rounded to nearest even: the output's rounding is the
// only one after the float32 sums.
func TestMatmulBF16EveryKernel(t *testing.T) {
	old := kernelBF16
	defer func() { kernelBF16 = old }()
	be := New(2)
	for _, kern := range kernelsBF16 {
		kernelBF16 = kern
		runMatmulCases(t, be, []backends.DType{backends.BFloat16}, kern.name)
		x := makeView(be, backends.BFloat16, transposed, 1, false, 37, 300)
		y := makeView(be, backends.BFloat16, contiguous, 2, false, 300, 45)
		o16 := allocView(be, backends.BFloat16, 37, 45)
		o32 := allocView(be, backends.Float32, 37, 45)
		be.Matmul(o16, x, y)
		be.Matmul(o32, x, y)
		got, f := buf(o16).u16(), buf(o32).f32()
		for i := range got {
			if want := backends.Float32ToBFloat16(f[i]); got[i] != want {
				t.Fatalf("%s: bfloat16 out[%d] = %#04x, want %#04x (float32 %v rounded to nearest even)", kern.name, i, got[i], want, f[i])
			}
		}
	}
}

// TestPackBF16 checks the pair-interleaved layout on a small case by hand:
// 3 rows, 5 columns (an odd last pair) in panels of 2 rows.
func TestPackBF16(t *testing.T) {
	u := make([]uint16, 15)
	for i := range u {
		u[i] = uint16(i + 1) // element (r, c) = 5r + c + 1
	}
	for _, trans := range []bool{false, true} {
		src := bf16Src{u16: u, rs: 5, cs: 1}
		if trans { // the same matrix stored column-major
			v := make([]uint16, 15)
			for r := range 3 {
				for c := range 5 {
					v[c*3+r] = u[r*5+c]
				}
			}
			src = bf16Src{u16: v, rs: 1, cs: 3}
		}
		dst := make([]uint32, 2*3*2)
		packBF16(dst, src, 0, 3, 0, 5, 2, make([]uint16, 16))
		pair := func(lo, hi uint32) uint32 { return lo | hi<<16 }
		want := []uint32{
			pair(1, 2), pair(6, 7), pair(3, 4), pair(8, 9), pair(5, 0), pair(10, 0), // rows 0-1
			pair(11, 12), 0, pair(13, 14), 0, pair(15, 0), 0, // row 2, then padding
		}
		for i := range want {
			if dst[i] != want[i] {
				t.Fatalf("transposed=%v: packed[%d] = %#08x, want %#08x (all %x)", trans, i, dst[i], want[i], dst)
			}
		}
	}
}

// TestRoundBF16 checks the packing's rounding against the backend's
// conversion on ties, NaNs, infinities and overflow.
func TestRoundBF16(t *testing.T) {
	for _, b := range []uint32{0, 0x80000000, 0x3f808000, 0x3f818000, 0x3f808001, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00001, 0x7f800001, 0x00000001} {
		f := math.Float32frombits(b)
		if got, want := roundBF16(f), backends.Float32ToBFloat16(f); got != want {
			t.Errorf("roundBF16(%#08x) = %#04x, want %#04x", b, got, want)
		}
	}
}

// TestMatmulBF16FromFloat32 checks MatmulBF16 on Float32 operands (rounded
// while packing) against Matmul on the same operands rounded to BFloat16
// first: the same bits, into Float32 and into BFloat16 outputs, for a
// transposed operand and a batch; and that it refuses other dtypes.
func TestMatmulBF16FromFloat32(t *testing.T) {
	be := New(2)
	x32 := makeView(be, backends.Float32, transposed, 1, false, 3, 37, 300)
	y32 := makeView(be, backends.Float32, contiguous, 2, false, 3, 300, 45)
	round := func(v backends.View) backends.View {
		o := allocView(be, backends.BFloat16, v.Shape...)
		be.Copy(o, v)
		return o
	}
	x16, y16 := round(x32), round(y32)
	for _, dt := range []backends.DType{backends.Float32, backends.BFloat16} {
		got, want := allocView(be, dt, 3, 37, 45), allocView(be, dt, 3, 37, 45)
		be.MatmulBF16(got, x32, y32)
		be.Matmul(want, x16, y16)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		if g, w := rawSnapshot(got), rawSnapshot(want); string(g) != string(w) {
			t.Errorf("%s out: MatmulBF16 of float32 operands differs from Matmul of bfloat16 ones", dt)
		}
	}
	be.MatmulBF16(allocView(be, backends.Float64, 37, 45), makeView(be, backends.Float64, contiguous, 1, false, 37, 300), y32)
	if err := be.Sync(); err == nil {
		t.Errorf("MatmulBF16 with float64 operands: no error")
	}
}

// TestGEMMBF16StripsMatchSerial runs bfloat16 GEMMs as strips (the shared
// operand packed once, strips claimed by whichever worker is free) on 2
// and 3 forced-parallel workers and requires the serial GEMM's bits: tall
// and wide products, a transposed operand, an odd K, a bias, bfloat16
// output and accumulation, with the cache blocks at their defaults and
// shrunk (several K-, M- and N-blocks in the packed operand).
func TestGEMMBF16StripsMatchSerial(t *testing.T) {
	old := [4]int{gemmKC, gemmMC, gemmNB, gemmNC}
	defer func() { gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3] }()
	r := rand.New(rand.NewPCG(5, 6))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	shapes := []struct{ m, n, k int }{{300, 97, 257}, {65, 700, 131}, {129, 129, 129}, {1000, 33, 70}}
	for _, small := range []bool{false, true} {
		gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3]
		if small {
			gemmKC, gemmMC, gemmNC = 5, 20, 40
		}
		for _, workers := range []int{2, 3} {
			be := forcedBackend(workers, forceParallel)
			for _, kern := range kernelsBF16 {
				for i, s := range shapes {
					a, bm, bias, c0 := fill(s.m*s.k), fill(s.k*s.n), fill(s.n), fill(s.m*s.n)
					A := bf16Src{f32: a, rs: 1, cs: s.m} // stored transposed
					B := bf16Src{f32: bm, rs: s.n, cs: 1}
					want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
					wantU, gotU := make([]uint16, s.m*s.n), make([]uint16, s.m*s.n)
					dst := func(c []float32, u []uint16) bf16Dst {
						d := bf16Dst{c: c, ld: s.n, acc: i%2 == 0, bias: bias}
						if i%2 == 1 {
							d.u16, d.uld = u, s.n
						}
						return d
					}
					gemmBF16Serial(kern, s.m, s.n, s.k, A, B, dst(want, wantU))
					gemmBF16(be, kern, s.m, s.n, s.k, A, B, dst(got, gotU), true)
					name := fmt.Sprintf("%s small=%v workers=%d m=%d n=%d k=%d", kern.name, small, workers, s.m, s.n, s.k)
					for j := range want {
						if math.Float32bits(got[j]) != math.Float32bits(want[j]) || gotU[j] != wantU[j] {
							t.Fatalf("%s: element %d is %v (%#x) in strips, %v (%#x) serially", name, j, got[j], gotU[j], want[j], wantU[j])
						}
					}
				}
			}
		}
	}
}

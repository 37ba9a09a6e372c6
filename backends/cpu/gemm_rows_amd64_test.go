//go:build !purego

package cpu

import (
	"fmt"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// TestGEMMAInPlace compares products whose A is multiplied where it lies,
// by rows or by columns (kernel.asmRows and asmCols, macroTileRows), with
// the same products packing A
// (aInPlace off), bit for bit: M that leaves a last panel of 1 to 7 rows
// at the end of A's buffer (packed there) or inside a larger buffer (read
// in place), N with partial panels (masked stores), K over several
// K-blocks, A a view with a row stride past K, C added to (acc), a bias
// and a fused activation, strips of columns and of rows on 2 workers, and
// an A that shares C's buffer (packed then). It also checks that the
// in-place kernel ran where N is at most aInPlaceMaxN (aColsMaxN).
func TestGEMMAInPlace(t *testing.T) {
	if kernelF32.asmRows == nil {
		t.Skip("no in-place A kernel on this CPU")
	}
	defer func() { aInPlace = true }()
	type shape struct{ m, k, n, pad int }
	shapes := []shape{
		{8, 16, 32, 0}, {9, 16, 32, 0}, {15, 33, 47, 0}, {64, 300, 70, 0}, {100, 64, 100, 5},
		{257, 161, 129, 0}, {31, 480, 256, 3}, {512, 256, 768, 0}, {200, 1024, 96, 0}, {96, 200, 1000, 0},
	}
	for _, s := range shapes {
		for _, workers := range []int{1, 2} {
			be := New(workers)
			name := fmt.Sprintf("%dx%dx%d pad=%d workers=%d", s.m, s.k, s.n, s.pad, workers)
			// A: m×k rows of a m×(k+pad) buffer; pad > 0 also leaves room
			// past the last row's k columns
			full := randView(be, backends.Float32, 1, s.m, s.k+s.pad)
			x := full
			x.Shape = []int{s.m, s.k}
			// Aᵀ stored: A read by columns, a k×(m+pad) buffer's first m
			// columns
			fullT := randView(be, backends.Float32, 7, s.k, s.m+s.pad)
			xt := fullT
			xt.Shape, xt.Strides = []int{s.m, s.k}, []int{1, s.m + s.pad}
			w := randView(be, backends.Float32, 2, s.k, s.n)
			wt := randView(be, backends.Float32, 3, s.n, s.k) // a linear layer's weight, Bᵀ stored
			wtv := wt
			wtv.Shape, wtv.Strides = []int{s.k, s.n}, []int{1, s.k}
			bias := randView(be, backends.Float32, 4, s.n)
			c0 := randView(be, backends.Float32, 5, s.m, s.n)
			run := func(f func(out backends.View)) []float64 {
				out := allocView(be, backends.Float32, s.m, s.n)
				copy(buf(out).f32(), buf(c0).f32())
				f(out)
				return snapshot(out)
			}
			cases := []struct {
				what   string
				byCols bool
				f      func(out backends.View)
			}{
				{"matmul", false, func(out backends.View) { be.Matmul(out, x, w) }},
				{"matmul Bᵀ", false, func(out backends.View) { be.Matmul(out, x, wtv) }},
				{"bias", false, func(out backends.View) { be.MatmulBias(out, x, wtv, bias) }},
				{"bias gelu", false, func(out backends.View) {
					pre := allocView(be, backends.Float32, s.m, s.n)
					be.MatmulBiasAct(out, pre, x, wtv, bias, backends.Gelu)
				}},
				{"acc", false, func(out backends.View) { gemmAccInto(be, out, x, w) }},
				{"Aᵀ matmul", true, func(out backends.View) { be.Matmul(out, xt, w) }},
				{"Aᵀ matmul Bᵀ", true, func(out backends.View) { be.Matmul(out, xt, wtv) }},
				{"Aᵀ acc", true, func(out backends.View) { gemmAccInto(be, out, xt, w) }},
			}
			for _, c := range cases {
				aInPlace = false
				want := run(c.f)
				aInPlace = true
				rows := countRowsCalls(func() { _ = run(c.f) })
				got := run(c.f)
				for i := range got {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("%s %s: element %d (%d, %d) = %v, want %v (packed)", name, c.what, i, i/s.n, i%s.n, got[i], want[i])
					}
				}
				if limit := map[bool]int{false: aInPlaceMaxN, true: aColsMaxN}[c.byCols]; rows == 0 && s.m*s.n*s.k >= serialGEMM && s.n <= limit {
					t.Errorf("%s %s: the in-place kernel did not run", name, c.what)
				}
			}
		}
	}
	// an A that shares C's buffer is packed
	be := New(1)
	both := randView(be, backends.Float32, 6, 2*64*64)
	x := both
	x.Shape, x.Strides = []int{64, 64}, []int{64, 1}
	out := both
	out.Shape, out.Strides, out.Offset = []int{64, 64}, []int{64, 1}, 64*64
	if !overlapping(buf(x).f32()[:64*64], buf(out).f32()[64*64-1:]) {
		t.Fatal("overlapping: slices sharing an element reported apart")
	}
	if overlapping(buf(x).f32()[:64*64], buf(out).f32()[64*64:]) {
		t.Fatal("overlapping: adjacent slices reported overlapping")
	}
}

// gemmAccInto adds x·w to out through gemm's acc path (the sums of the
// first K-block added to what C holds).
func gemmAccInto(be *Backend, out, x, w backends.View) {
	m, k, n := x.Shape[0], x.Shape[1], w.Shape[1]
	A := matSrc[float32]{s: buf(x).f32(), off: x.Offset, rs: x.Strides[0], cs: x.Strides[1]}
	B := matSrc[float32]{s: buf(w).f32(), off: w.Offset, rs: w.Strides[0], cs: w.Strides[1]}
	C := matDst[float32]{s: buf(out).f32(), off: out.Offset, rs: out.Strides[0], cs: 1, acc: true}
	gemmPacked(be, kernelF32, m, n, k, A, B, C, true, nil, nil)
}

// countRowsCalls returns how many tiles f multiplied with A in place.
func countRowsCalls(f func()) int64 {
	n := rowsTiles.Load()
	f()
	return rowsTiles.Load() - n
}

func init() { countRowsTiles = true }

// BenchmarkGEMMAInPlace times the float32 GEMMs of GPT-style steps at d =
// 256 and 512 (forward X·Wᵀ and the input gradient dY·W, A stored by
// rows) on KILN_CPU_THREADS workers with A multiplied in place and
// packed, alternating the two every iteration, and reports the fastest of
// each (GFLOP/s). Products wider than aInPlaceMaxN pack A either way.
func BenchmarkGEMMAInPlace(b *testing.B) {
	defer func() { aInPlace = true }()
	be := New(0) // KILN_CPU_THREADS workers, else every processor
	for _, c := range []struct {
		name    string
		m, k, n int
		transB  bool
	}{
		{"fwd-qkv-2048x256x768", 2048, 256, 768, true},
		{"fwd-ff1-2048x256x1024", 2048, 256, 1024, true},
		{"fwd-ff2-2048x1024x256", 2048, 1024, 256, true},
		{"dx-qkv-2048x768x256", 2048, 768, 256, false},
		{"dx-ff1-2048x1024x256", 2048, 1024, 256, false},
		{"dx-ff2-2048x256x1024", 2048, 256, 1024, false},
		{"d512-fwd-qkv-2048x512x1536", 2048, 512, 1536, true},
		{"d512-fwd-ff1-2048x512x2048", 2048, 512, 2048, true},
		{"d512-fwd-ff2-2048x2048x512", 2048, 2048, 512, true},
		{"d512-dx-qkv-2048x1536x512", 2048, 1536, 512, false},
		{"d512-dx-ff2-2048x512x2048", 2048, 512, 2048, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			x := randView(be, backends.Float32, 1, c.m, c.k)
			y := randView(be, backends.Float32, 2, c.k, c.n)
			if c.transB {
				y = randView(be, backends.Float32, 2, c.n, c.k)
				y.Shape, y.Strides = []int{c.k, c.n}, []int{1, c.k}
			}
			out := allocView(be, backends.Float32, c.m, c.n)
			best := [2]time.Duration{time.Hour, time.Hour}
			for b.Loop() {
				for i, on := range []bool{true, false} {
					aInPlace = on
					t0 := time.Now()
					be.Matmul(out, x, y)
					best[i] = min(best[i], time.Since(t0))
				}
			}
			flop := 2 * float64(c.m*c.k*c.n)
			b.ReportMetric(flop/best[0].Seconds()/1e9, "GFLOP/s-in-place")
			b.ReportMetric(flop/best[1].Seconds()/1e9, "GFLOP/s-packed")
		})
	}
}

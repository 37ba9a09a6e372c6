package fusion_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
	"github.com/kiln-ml/kiln/tensor"
)

// squaredDiff runs Reduce(op, ·, (x − y)², axes) on b, with x and y
// written from xs and ys, the two intermediates freed before the read as a
// tensor program frees them, and returns the result's elements.
func squaredDiff(t *testing.T, b backends.Backend, dt backends.DType, shape []int, op backends.ReduceOp, axes []int, xs, ys []float64) []float64 {
	t.Helper()
	n := backends.NumElements(shape)
	view := func(shape []int) backends.View {
		buf, err := b.Alloc(dt, backends.NumElements(shape))
		if err != nil {
			t.Fatal(err)
		}
		return backends.View{Buf: buf, DType: dt, Shape: shape, Strides: backends.RowMajorStrides(shape)}
	}
	write := func(v backends.View, vals []float64) {
		raw := make([]byte, n*dt.Size())
		for i, x := range vals {
			if dt == backends.Float32 {
				binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(x)))
			} else {
				binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(x))
			}
		}
		b.Write(v.Buf, 0, raw)
	}
	x, y, d, s := view(shape), view(shape), view(shape), view(shape)
	write(x, xs)
	write(y, ys)
	kept := append([]int(nil), shape...)
	for _, a := range axes {
		kept[a] = 1
	}
	out := view(kept)
	b.Binary(backends.Sub, d, x, y)
	b.Unary(backends.Square, s, d, 0, 0)
	b.Reduce(op, out, s, axes)
	b.Free(d.Buf)
	b.Free(s.Buf)
	res := readFloats(t, b, out)
	for _, v := range []backends.View{x, y, out} {
		b.Free(v.Buf)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReductionTailsMatchCPU computes reductions of (x − y)² fused, with
// the reduction inside the group, on several tile sizes and thread
// counts, and requires the CPU backend's unfused bits, with both
// intermediates kept in tiles.
func TestReductionTailsMatchCPU(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		axes  []int
		op    backends.ReduceOp
	}{
		{"all axes, one run over several tiles, ragged", []int{3, 10007}, []int{0, 1}, backends.Sum},
		{"all axes, segmented runs, ragged last segment", []int{(1 << 16) + 37}, []int{0}, backends.Sum},
		{"last axis, many short rows", []int{64, 513}, []int{1}, backends.Sum},
		{"last axis, few long rows in segments", []int{5, 70001}, []int{1}, backends.Sum},
		{"last axis, rows longer than a tile", []int{70, 5003}, []int{1}, backends.Sum},
		{"two trailing axes", []int{6, 30, 51}, []int{1, 2}, backends.Sum},
		{"size-1 reduced axis", []int{300, 1}, []int{1}, backends.Sum},
		{"size-1 kept axis between", []int{7, 1, 333}, []int{2}, backends.Sum},
		{"rows of fewer than sixteen", []int{129, 13}, []int{1}, backends.Sum},
		{"max over the last axis", []int{90, 1001}, []int{1}, backends.Max},
		{"min over everything", []int{40000}, []int{0}, backends.Min},
		{"product of short rows", []int{200, 7}, []int{1}, backends.Prod},
	}
	for ci, tc := range cases {
		for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
			n := backends.NumElements(tc.shape)
			xs, ys := randomData(n, uint64(ci)), randomData(n, uint64(ci)+50)
			if tc.op == backends.Prod {
				for i := range xs {
					xs[i], ys[i] = 1+xs[i]/100, 0
				}
			}
			want := squaredDiff(t, cpu.New(1), dt, tc.shape, tc.op, tc.axes, xs, ys)
			for _, workers := range []int{1, 3} {
				for _, tile := range []int{256, 1000, fusion.DefaultTile} {
					t.Run(fmt.Sprintf("%s/%s/%d threads/tile %d", tc.name, dt, workers, tile), func(t *testing.T) {
						fb := fusion.NewTiled(cpu.New(workers), tile)
						got := squaredDiff(t, fb, dt, tc.shape, tc.op, tc.axes, xs, ys)
						sameBits(t, got, want)
						s := fb.Stats()
						if s.Reductions != 1 || s.Groups != 1 || s.Scratch != 2 {
							t.Errorf("%d reductions in %d groups with %d intermediates in tiles, want 1 in 1 with 2: %+v",
								s.Reductions, s.Groups, s.Scratch, s)
						}
					})
				}
			}
		}
	}
}

// readFloats reads v, a contiguous float32 or float64 view from its
// buffer's start, as float64s.
func readFloats(t *testing.T, b backends.Backend, v backends.View) []float64 {
	t.Helper()
	k := v.NumElements()
	raw := make([]byte, k*v.DType.Size())
	if err := b.Read(v.Buf, 0, raw); err != nil {
		t.Fatal(err)
	}
	res := make([]float64, k)
	for i := range res {
		if v.DType == backends.Float32 {
			res[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		} else {
			res[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	}
	return res
}

func sameBits(t *testing.T, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("output %d: fused %v, unfused %v", i, got[i], want[i])
		}
	}
}

// TestReductionTailsKnownAnswers checks fused reduction tails against
// answers worked out by hand, NaN and infinities included.
func TestReductionTailsKnownAnswers(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name  string
		op    backends.ReduceOp
		shape []int
		axes  []int
		xs    []float64
		want  []float64
	}{
		{"sums of squares per row", backends.Sum, []int{2, 3}, []int{1}, []float64{1, 2, 3, -1, 0, 4}, []float64{14, 17}},
		{"sum of everything", backends.Sum, []int{2, 3}, []int{0, 1}, []float64{1, 2, 3, -1, 0, 4}, []float64{31}},
		{"a NaN poisons its row only", backends.Sum, []int{2, 2}, []int{1}, []float64{nan, 1, 2, 3}, []float64{nan, 13}},
		{"infinity", backends.Sum, []int{2, 2}, []int{1}, []float64{inf, 1, -inf, 3}, []float64{inf, inf}},
		{"max with NaN", backends.Max, []int{2, 3}, []int{1}, []float64{1, nan, 2, -5, 2, 1}, []float64{nan, 25}},
		{"min of squares", backends.Min, []int{3}, []int{0}, []float64{-2, 3, 0.5}, []float64{0.25}},
		{"product", backends.Prod, []int{1, 3}, []int{1}, []float64{2, -3, inf}, []float64{inf}},
	}
	for _, tc := range cases {
		for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
			t.Run(tc.name+"/"+dt.String(), func(t *testing.T) {
				fb := fusion.New(cpu.New(2))
				got := squaredDiff(t, fb, dt, tc.shape, tc.op, tc.axes, tc.xs, make([]float64, len(tc.xs)))
				sameBits(t, got, tc.want)
				if s := fb.Stats(); s.Reductions != 1 {
					t.Errorf("the reduction was not fused: %+v", s)
				}
			})
		}
	}
}

// TestReductionsThatStayUnfused checks the reductions that are forwarded
// to the wrapped backend after the group (leading axes, integer dtypes,
// an empty axis, an input the group does not write): same results, no
// reduction tail.
func TestReductionsThatStayUnfused(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		dtype tensor.DType
		f     func(x *tensor.Tensor) *tensor.Tensor
	}{
		{"leading axis", []int{300, 17}, tensor.Float32, func(x *tensor.Tensor) *tensor.Tensor { return x.Exp().Sum(0) }},
		{"int32", []int{5000}, tensor.Int32, func(x *tensor.Tensor) *tensor.Tensor { return x.Add(x).Sum() }},
		{"empty axis", []int{4, 0}, tensor.Float32, func(x *tensor.Tensor) *tensor.Tensor { return x.Exp().Sum(1) }},
		{"an input the group only reads", []int{64, 100}, tensor.Float32, func(x *tensor.Tensor) *tensor.Tensor { return x.Sum(1) }},
	}
	plain := tensor.CPU()
	fused := plain.Fused()
	fb := fusedBackend(t, fused)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := backends.NumElements(tc.shape)
			xs := randomData(n, uint64(i))
			for k := range xs {
				xs[k] = math.Round(xs[k])
			}
			run := func(dev tensor.Device) []float64 {
				var out []float64
				tensor.Scope(func() {
					x := tensor.FromFloat64s(dev, xs, tc.shape...).To(tc.dtype)
					_ = dev.Sync()
					out = tensor.ScopeResult(func() *tensor.Tensor { return tc.f(x) }).To(tensor.Float64).Float64s()
				})
				return out
			}
			want := run(plain)
			before := fb.Stats()
			got := run(fused)
			sameBits(t, got, want)
			if d := fb.Stats().Reductions - before.Reductions; d != 0 {
				t.Errorf("%d reductions fused, want none", d)
			}
		})
	}
}

// TestTensorReductionTails runs the patterns reduction tails are for
// through package tensor on the fused CPU device and requires the plain
// CPU device's bits: a softmax denominator, LayerNorm's variance, a loss
// mean. The intermediates that only feed the reduction must stay in tiles
// (Stats.Scratch), the mean's division waiting in the group's epilogue.
func TestTensorReductionTails(t *testing.T) {
	cases := []struct {
		name    string
		shape   []int
		f       func(x, y *tensor.Tensor) *tensor.Tensor
		scratch int64 // intermediates kept in tiles
	}{
		{"softmax denominator", []int{128, 10}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return x.Sub(x.MaxKeep(1)).Exp().Sum(1)
		}, 2},
		{"layer norm variance", []int{96, 768}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return x.Sub(x.MeanKeep(1)).Square().Mean(1)
		}, 2},
		{"mean squared error", []int{1000, 37}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return x.Sub(y).Square().Mean()
		}, 2},
		{"float64 sum of a composed GELU", []int{20000}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return geluTanh(x.To(tensor.Float64)).Sum()
		}, 10},
	}
	plain := tensor.CPU()
	fused := plain.Fused()
	fb := fusedBackend(t, fused)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := backends.NumElements(tc.shape)
			xs, ys := randomData(n, uint64(i)+7), randomData(n, uint64(i)+70)
			run := func(dev tensor.Device) []float64 {
				var out []float64
				tensor.Scope(func() {
					x := tensor.FromFloat64s(dev, xs, tc.shape...).To(tensor.Float32)
					y := tensor.FromFloat64s(dev, ys, tc.shape...).To(tensor.Float32)
					_ = dev.Sync()
					out = tensor.ScopeResult(func() *tensor.Tensor { return tc.f(x, y) }).To(tensor.Float64).Float64s()
				})
				return out
			}
			want := run(plain)
			before := fb.Stats()
			got := run(fused)
			sameBits(t, got, want)
			after := fb.Stats()
			if d := after.Reductions - before.Reductions; d != 1 {
				t.Errorf("%d reductions fused, want 1", d)
			}
			if d := after.Scratch - before.Scratch; d != tc.scratch {
				t.Errorf("%d intermediates kept in tiles, want %d: before %+v after %+v", d, tc.scratch, before, after)
			}
		})
	}
}

// TestSeveralReductionTails records two reductions in one group, the
// first of an intermediate whose last element-wise reader ran before it
// (its tile scratch must not be reused by the ops between), the second of
// a value that later ops still read, and requires the CPU's bits.
func TestSeveralReductionTails(t *testing.T) {
	shape := []int{37, 1111}
	n := backends.NumElements(shape)
	xs := randomData(n, 3)
	run := func(b backends.Backend) [][]float64 {
		view := func(shape []int) backends.View {
			buf, err := b.Alloc(backends.Float32, backends.NumElements(shape))
			if err != nil {
				t.Fatal(err)
			}
			return backends.View{Buf: buf, DType: backends.Float32, Shape: shape, Strides: backends.RowMajorStrides(shape)}
		}
		x, a, c, d, e := view(shape), view(shape), view(shape), view(shape), view(shape)
		raw := make([]byte, 4*n)
		for i, v := range xs {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(v)))
		}
		b.Write(x.Buf, 0, raw)
		sa, sc, all := view([]int{37, 1}), view([]int{37, 1}), view([]int{1, 1})
		b.BinaryScalar(backends.Mul, a, x, 2, false) // a = 2x
		b.BinaryScalar(backends.Add, c, a, 1, false) // c = a + 1: a's last element-wise reader
		b.Unary(backends.Tanh, d, c, 0, 0)           // d = tanh(c)
		b.Reduce(backends.Sum, sa, a, []int{1})      // Σ a per row, after d took a slot
		b.Reduce(backends.Max, all, d, []int{0, 1})  // max of d, read again below
		b.Binary(backends.Mul, e, d, c)              // e = d·c
		b.Reduce(backends.Sum, sc, e, []int{1})
		for _, v := range []backends.View{a, c, d, e} {
			b.Free(v.Buf)
		}
		var res [][]float64
		for _, v := range []backends.View{sa, all, sc} {
			res = append(res, readFloats(t, b, v))
			b.Free(v.Buf)
		}
		b.Free(x.Buf)
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := run(cpu.New(1))
	for _, workers := range []int{1, 2} {
		fb := fusion.NewTiled(cpu.New(workers), 512)
		got := run(fb)
		for i := range want {
			sameBits(t, got[i], want[i])
		}
		if s := fb.Stats(); s.Groups != 1 || s.Reductions != 3 || s.Scratch != 4 {
			t.Errorf("%d workers: %d groups, %d reductions, %d kept in tiles; want 1, 3, 4: %+v", workers, s.Groups, s.Reductions, s.Scratch, s)
		}
	}
}

// TestRandomReductionTails builds random groups (random shapes, chains of
// element-wise ops, one or two reductions over random trailing axes, read
// back or not by later ops) and requires the CPU backend's bits on random
// tile sizes and thread counts.
func TestRandomReductionTails(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ops := []backends.UnaryOp{backends.Exp, backends.Square, backends.Neg, backends.Tanh, backends.Abs}
	for trial := range 60 {
		rank := 1 + r.IntN(3)
		shape := make([]int, rank)
		for d := range shape {
			shape[d] = 1 + r.IntN([]int{3, 40, 300, 5000}[r.IntN(4)])
		}
		n := backends.NumElements(shape)
		if n > 1<<18 {
			shape = []int{n % 90000}
			rank, n = 1, n%90000
		}
		if n == 0 {
			continue
		}
		dt := []backends.DType{backends.Float32, backends.Float64}[r.IntN(2)]
		xs := randomData(n, uint64(trial))
		nops := 1 + r.IntN(5)
		chain := make([]backends.UnaryOp, nops)
		for i := range chain {
			chain[i] = ops[r.IntN(len(ops))]
		}
		first := r.IntN(rank) // reduce axes [first, rank)
		second := r.IntN(2) == 0
		op := []backends.ReduceOp{backends.Sum, backends.Sum, backends.Max, backends.Min}[r.IntN(4)]
		run := func(b backends.Backend) [][]float64 {
			view := func(shape []int) backends.View {
				buf, err := b.Alloc(dt, backends.NumElements(shape))
				if err != nil {
					t.Fatal(err)
				}
				return backends.View{Buf: buf, DType: dt, Shape: shape, Strides: backends.RowMajorStrides(shape)}
			}
			x := view(shape)
			raw := make([]byte, n*dt.Size())
			for i, v := range xs {
				if dt == backends.Float32 {
					binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(v)))
				} else {
					binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
				}
			}
			b.Write(x.Buf, 0, raw)
			kept := append([]int(nil), shape...)
			var axes []int
			for d := first; d < rank; d++ {
				kept[d] = 1
				axes = append(axes, d)
			}
			var tmps, outs []backends.View
			cur := x
			for i, u := range chain {
				nx := view(shape)
				b.Unary(u, nx, cur, 0, 0)
				tmps = append(tmps, nx)
				cur = nx
				if i == 0 && second {
					o := view([]int{1})
					b.Reduce(backends.Max, backends.View{Buf: o.Buf, DType: dt, Shape: make1(rank), Strides: make([]int, rank)}, cur, allAxes(rank))
					outs = append(outs, o)
				}
			}
			o := view(kept)
			b.Reduce(op, o, cur, axes)
			outs = append(outs, o)
			y := view(shape)
			b.BinaryScalar(backends.Mul, y, cur, 0.5, false) // a later reader of the reduced value
			outs = append(outs, y)
			for _, v := range tmps {
				b.Free(v.Buf)
			}
			var res [][]float64
			for _, v := range outs {
				res = append(res, readFloats(t, b, v))
				b.Free(v.Buf)
			}
			b.Free(x.Buf)
			if err := b.Sync(); err != nil {
				t.Fatal(err)
			}
			return res
		}
		want := run(cpu.New(1))
		tile := []int{256, 700, 4096}[r.IntN(3)]
		workers := 1 + r.IntN(3)
		fb := fusion.NewTiled(cpu.New(workers), tile)
		got := run(fb)
		for i := range want {
			if len(got[i]) != len(want[i]) {
				t.Fatalf("trial %d: result %d has %d elements, want %d", trial, i, len(got[i]), len(want[i]))
			}
			for k := range want[i] {
				g, w := got[i][k], want[i][k]
				if math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Fatalf("trial %d (%s %v, %v over axes from %d, chain %v, tile %d, %d workers): result %d element %d: fused %v, unfused %v",
						trial, dt, shape, op, first, chain, tile, workers, i, k, g, w)
				}
			}
		}
		if s := fb.Stats(); s.Reductions == 0 {
			t.Errorf("trial %d: no reduction was fused: %+v", trial, s)
		}
	}
}

func make1(rank int) []int {
	s := make([]int, rank)
	for i := range s {
		s[i] = 1
	}
	return s
}

func allAxes(rank int) []int {
	a := make([]int, rank)
	for i := range a {
		a[i] = i
	}
	return a
}

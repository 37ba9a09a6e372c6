//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// Focused tests of the kernels of ops_*.go against the CPU backend, beyond
// the conformance suite's small cases: sizes that span many workgroups and
// tiles, non-contiguous and broadcast views, every dtype, NaN, duplicate
// and out-of-range indices. Results must equal the CPU's bit for bit where
// both compute the same correctly rounded values (everything but float
// sums in another order, which get the conformance tolerances).

// openDevice opens vulkan:0 or skips the test, saying why.
func openDevice(t *testing.T) *Backend {
	t.Helper()
	dev, err := Open(0)
	if err != nil {
		t.Skipf("no Vulkan device: %v", err)
	}
	return dev
}

// exact compares results bit for bit.
func exact(_ conformance.Case, dt backends.DType, want, got []byte) error {
	if bytes.Equal(want, got) {
		return nil
	}
	w, g := conformance.Decode(dt, want), conformance.Decode(dt, got)
	for i := range w {
		if math.Float64bits(w[i]) != math.Float64bits(g[i]) && !(math.IsNaN(w[i]) && math.IsNaN(g[i])) {
			return fmt.Errorf("element %d of %d: device %v, cpu %v", i, len(w), g[i], w[i])
		}
	}
	return fmt.Errorf("bytes differ (NaN payloads?)")
}

// within compares within the conformance suite's tolerance for the case's dtype.
func within(c conformance.Case, dt backends.DType, want, got []byte) error {
	w, g := conformance.Decode(dt, want), conformance.Decode(dt, got)
	atol, rtol := 0.0, 0.0
	switch c.DType {
	case backends.Float64:
		atol, rtol = 1e-12, 1e-9
	case backends.Float32:
		atol, rtol = 1e-5, 2e-5
	case backends.Float16:
		atol, rtol = 2e-3, 2e-3
	case backends.BFloat16:
		atol, rtol = 1.6e-2, 1.6e-2
	}
	for i := range w {
		if w[i] == g[i] || math.IsNaN(w[i]) && math.IsNaN(g[i]) {
			continue
		}
		if math.IsInf(w[i], 0) || math.IsNaN(w[i]) || math.IsNaN(g[i]) || math.Abs(w[i]-g[i]) > atol+rtol*math.Abs(w[i]) {
			return fmt.Errorf("element %d of %d: device %v, cpu %v (atol %g, rtol %g)", i, len(w), g[i], w[i], atol, rtol)
		}
	}
	return nil
}

// check runs the case on the CPU and on dev and compares with cmp.
func check(t *testing.T, dev backends.Backend, c conformance.Case, cmp conformance.Compare) {
	t.Helper()
	if err := conformance.RunCase(cpu.New(0), dev, c, cmp); err != nil {
		t.Errorf("%s: %v", c.Name, err)
	}
}

var allFloats = []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.BFloat16}

func TestMatmulLargeStridedBatched(t *testing.T) {
	dev := openDevice(t)
	dts := append(append([]backends.DType(nil), allFloats...), backends.Int64, backends.Int32, backends.Int8)
	for _, dt := range dts {
		// a [3, 130, 70] · bᵀ broadcast over the batch: b is [90, 70] read as [3, 70, 90]
		check(t, dev, conformance.Case{Name: "matmul/" + dt.String(), DType: dt, Run: func(s *conformance.Session) backends.View {
			a := s.Tensor(dt, conformance.Values(dt, 3*130*70, -1, 1, 1), 3, 130, 70)
			b := s.Tensor(dt, conformance.Values(dt, 90*70, -1, 1, 2), 90, 70)
			bt := backends.View{Buf: b.Buf, DType: dt, Shape: []int{3, 70, 90}, Strides: []int{0, 1, 70}}
			out := s.Empty(dt, 3, 130, 90)
			s.B.Matmul(out, a, bt)
			return out
		}}, within)
	}
	// a transposed a, an offset and a strided output
	dt := backends.Float32
	check(t, dev, conformance.Case{Name: "matmul/transposed-a", DType: dt, Run: func(s *conformance.Session) backends.View {
		a := s.Tensor(dt, conformance.Values(dt, 1+65*67, -1, 1, 3), 1+65*67)
		at := backends.View{Buf: a.Buf, DType: dt, Shape: []int{67, 65}, Strides: []int{1, 67}, Offset: 1}
		b := s.Tensor(dt, conformance.Values(dt, 65*129, -1, 1, 4), 65, 129)
		out := s.Empty(dt, 67, 2*129)
		ov := backends.View{Buf: out.Buf, DType: dt, Shape: []int{67, 129}, Strides: []int{2 * 129, 2}, Offset: 1}
		s.B.Matmul(ov, at, b)
		return out
	}}, within)
}

func TestReduceLargeAndNaN(t *testing.T) {
	if raceEnabled {
		t.Skip("long; the plain run checks it (the race detector cannot see into the driver)")
	}
	dev := openDevice(t)
	shapes := []struct {
		shape []int
		axes  []int
	}{
		{[]int{3, 5000}, []int{1}},      // one workgroup per output
		{[]int{5000, 3}, []int{0}},      // leading axis, strided
		{[]int{70, 300}, []int{0, 1}},   // everything
		{[]int{20000, 5}, []int{1}},     // one thread per output
		{[]int{4, 30, 50}, []int{0, 2}}, // non-adjacent axes
		{[]int{2, 70000}, []int{1}},     // two passes: segments, then their results
		{[]int{70001, 3}, []int{0}},     // two passes along a strided axis
	}
	every := append(append([]backends.DType(nil), allFloats...), backends.Int64, backends.Int32, backends.Int16, backends.Int8, backends.Uint8)
	some := []backends.DType{backends.Float32, backends.Float64, backends.BFloat16, backends.Int64, backends.Int8}
	for si, sh := range shapes {
		dts := every
		if si > 0 {
			dts = some // every dtype once, for each shape a few
		}
		for _, dt := range dts {
			for _, op := range []backends.ReduceOp{backends.Sum, backends.Max, backends.Min, backends.Prod} {
				name := fmt.Sprintf("reduce/%s/%s/%v/%v", op, dt, sh.shape, sh.axes)
				check(t, dev, conformance.Case{Name: name, DType: dt, Run: func(s *conformance.Session) backends.View {
					n := backends.NumElements(sh.shape)
					lo, hi := -2.0, 2.0
					if op == backends.Prod {
						lo, hi = 0.999, 1.001
					}
					vals := conformance.Values(dt, n, lo, hi, 5)
					if dt.IsFloat() {
						vals[n/3] = math.NaN() // propagates through sum, max and min alike
					}
					x := s.Tensor(dt, vals, sh.shape...)
					kept := append([]int(nil), sh.shape...)
					for _, a := range sh.axes {
						kept[a] = 1
					}
					out := s.Empty(dt, kept...)
					s.B.Reduce(op, out, x, sh.axes)
					return out
				}}, within)
			}
		}
	}
	// -0 below +0 in max and min
	check(t, dev, conformance.Case{Name: "reduce/signed-zeros", DType: backends.Float32, Run: func(s *conformance.Session) backends.View {
		x := s.Tensor(backends.Float32, []float64{math.Copysign(0, -1), 0, 0, math.Copysign(0, -1)}, 2, 2)
		out := s.Empty(backends.Float32, 2, 2)
		s.B.Reduce(backends.Max, backends.View{Buf: out.Buf, DType: backends.Float32, Shape: []int{2, 1}, Strides: []int{1, 1}}, x, []int{1})
		s.B.Reduce(backends.Min, backends.View{Buf: out.Buf, DType: backends.Float32, Shape: []int{2, 1}, Strides: []int{1, 1}, Offset: 2}, x, []int{1})
		return out
	}}, exact)
}

func TestArgReduceScanSort(t *testing.T) {
	dev := openDevice(t)
	dts := append(append([]backends.DType(nil), allFloats...), backends.Int64, backends.Int32, backends.Uint8, backends.Int8)
	for _, dt := range dts {
		vals := func(n, salt int) []float64 {
			v := conformance.Values(dt, n, -3, 3, salt)
			if dt.IsFloat() {
				v[7], v[40], v[41] = math.NaN(), 1, 1 // a NaN, ties
			} else {
				for i := range v {
					v[i] = math.Mod(v[i], 4) // many ties
				}
			}
			return v
		}
		for _, op := range []backends.ReduceOp{backends.ArgMax, backends.ArgMin} {
			check(t, dev, conformance.Case{Name: fmt.Sprintf("%s/%s", op, dt), DType: backends.Int64, Run: func(s *conformance.Session) backends.View {
				x := s.Tensor(dt, vals(600, 9), 20, 30)
				xt := backends.View{Buf: x.Buf, DType: dt, Shape: []int{30, 20}, Strides: []int{1, 30}}
				out := s.Empty(backends.Int64, 1, 20)
				s.B.ArgReduce(op, out, xt, 0)
				return out
			}}, exact)
			// long lines: one workgroup per output, ties and NaNs far apart
			check(t, dev, conformance.Case{Name: fmt.Sprintf("%s/%s/long", op, dt), DType: backends.Int64, Run: func(s *conformance.Session) backends.View {
				v := vals(4*3000, 17)
				if dt.IsFloat() {
					v[7], v[3000+2500], v[3000+1200] = 0, math.NaN(), math.NaN()
				}
				x := s.Tensor(dt, v, 4, 3000)
				out := s.Empty(backends.Int64, 4, 1)
				s.B.ArgReduce(op, out, x, 1)
				return out
			}}, exact)
		}
		{
			for _, op := range []backends.ReduceOp{backends.Sum, backends.Prod} {
				check(t, dev, conformance.Case{Name: fmt.Sprintf("cum%s/%s", op, dt), DType: dt, Run: func(s *conformance.Session) backends.View {
					x := s.Tensor(dt, conformance.Values(dt, 600, 0.9, 1.1, 10), 20, 30)
					out := s.Empty(dt, 20, 30)
					s.B.Scan(op, out, x, 1)
					return out
				}}, exact)
			}
		}
		for _, desc := range []bool{false, true} {
			for _, part := range []int{0, 1} {
				// lines of 30 sort by insertion, lines of 200 by merging
				for _, rows := range []int{30, 200} {
					check(t, dev, conformance.Case{Name: fmt.Sprintf("sort/%s/%v/%d/%d", dt, desc, part, rows), DType: dt, Run: func(s *conformance.Session) backends.View {
						x := s.Tensor(dt, vals(20*rows, 11), 20, rows)
						xt := backends.View{Buf: x.Buf, DType: dt, Shape: []int{rows, 20}, Strides: []int{1, rows}}
						v := s.Empty(dt, rows, 20)
						i := s.Empty(backends.Int64, rows, 20)
						s.B.Sort(v, i, xt, 0, desc)
						return [2]backends.View{v, i}[part]
					}}, exact)
				}
			}
		}
	}
}

func TestGatherScatterIndices(t *testing.T) {
	dev := openDevice(t)
	for _, dt := range backends.DTypes() {
		check(t, dev, conformance.Case{Name: "gather/" + dt.String(), DType: dt, Run: func(s *conformance.Session) backends.View {
			x := s.Tensor(dt, conformance.Values(dt, 40*50, -3, 3, 12), 40, 50)
			idx := make([]float64, 30*50)
			for i := range idx {
				idx[i] = float64(i*7%80 - 40) // negative indices count from the end
			}
			index := s.Tensor(backends.Int64, idx, 30, 50)
			out := s.Empty(dt, 30, 50)
			s.B.Gather(out, x, index, 0)
			return out
		}}, exact)
		for _, add := range []bool{false, true} {
			if add && dt == backends.Bool {
				continue
			}
			check(t, dev, conformance.Case{Name: fmt.Sprintf("scatter/%s/add=%v", dt, add), DType: dt, Run: func(s *conformance.Session) backends.View {
				out := s.Tensor(dt, conformance.Values(dt, 8*300, -3, 3, 13), 8, 300)
				idx := make([]float64, 200*300)
				for i := range idx {
					idx[i] = float64(i * 5 % 8) // many duplicates per output element
				}
				index := s.Tensor(backends.Int64, idx, 200, 300)
				src := s.Tensor(dt, conformance.Values(dt, 200*300, -3, 3, 14), 200, 300)
				s.B.Scatter(out, index, src, 0, add)
				return out
			}}, exact)
		}
	}
}

func TestIndexOutOfRangeReported(t *testing.T) {
	dev := openDevice(t)
	s := &conformance.Session{B: dev}
	defer s.Free()
	x := s.Tensor(backends.Float32, []float64{1, 2, 3, 4}, 4)
	idx := s.Tensor(backends.Int64, []float64{0, 9}, 2)
	out := s.Empty(backends.Float32, 2)
	dev.Gather(out, x, idx, 0)
	err := dev.Sync()
	if err == nil || !strings.Contains(err.Error(), "index 9 out of range") {
		t.Fatalf("gather with index 9 into 4: Sync = %v, want index 9 out of range", err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatalf("error not cleared after it was reported: %v", err)
	}
	dev.Scatter(x, s.Tensor(backends.Int64, []float64{-5}, 1), s.Tensor(backends.Float32, []float64{1}, 1), 0, true)
	if err := dev.Sync(); err == nil || !strings.Contains(err.Error(), "index -5 out of range") {
		t.Fatalf("scatter with index -5 into 4: Sync = %v, want index -5 out of range", err)
	}
}

func TestConvUnfoldLarge(t *testing.T) {
	dev := openDevice(t)
	g := backends.ConvGeometry{N: 2, C: 5, H: 17, W: 19, KH: 3, KW: 4, StrideH: 2, StrideW: 1, PadTop: 1, PadLeft: 2,
		DilationH: 2, DilationW: 1, OutH: 7, OutW: 20, PadValue: -0.5}
	rows, cols := g.C*g.KH*g.KW, g.OutH*g.OutW
	for _, dt := range append(append([]backends.DType(nil), allFloats...), backends.Int32) {
		check(t, dev, conformance.Case{Name: "im2col/" + dt.String(), DType: dt, Run: func(s *conformance.Session) backends.View {
			x := s.Tensor(dt, conformance.Values(dt, g.N*g.C*g.H*g.W, -1, 1, 15), g.N, g.C, g.H, g.W)
			out := s.Empty(dt, g.N, rows, cols)
			s.B.Im2Col(out, x, g)
			return out
		}}, exact)
		check(t, dev, conformance.Case{Name: "col2im/" + dt.String(), DType: dt, Run: func(s *conformance.Session) backends.View {
			c := s.Tensor(dt, conformance.Values(dt, g.N*rows*cols, -1, 1, 16), g.N, rows, cols)
			out := s.Empty(dt, g.N, g.C, g.H, g.W)
			s.B.Col2Im(out, c, g)
			return out
		}}, exact)
	}
}

func TestRandomBitExact(t *testing.T) {
	dev := openDevice(t)
	for _, dt := range backends.DTypes() {
		for k := backends.Uniform; k <= backends.RandInt; k++ {
			check(t, dev, conformance.Case{Name: fmt.Sprintf("random/%d/%s", k, dt), DType: dt, Run: func(s *conformance.Session) backends.View {
				p0, p1 := -2.0, 3.0
				if k == backends.Bernoulli {
					p0 = 0.3
				}
				out := s.Empty(dt, 2, 100, 70)
				// a strided half of the buffer, counter past 2^32
				ov := backends.View{Buf: out.Buf, DType: dt, Shape: []int{100, 70}, Strides: []int{70, 1}, Offset: 7000}
				s.B.Random(ov, k, 0xfeedface12345678, 1<<32-5000, p0, p1)
				return out
			}}, exact)
		}
	}
}

func TestAdamStepBitExact(t *testing.T) {
	dev := openDevice(t)
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		for _, h := range []backends.AdamHyper{
			{Decay: 1, Beta1: 0.9, Beta2: 0.999, InvDenom: -1234.5, EpsTerm: -1e-5, First: true, MovesParam: true},
			{Decay: 0.999, Beta1: 0.9, Beta2: 0.999, InvDenom: -321.7, EpsTerm: -3e-6, MovesParam: true, Maximize: true},
			{Decay: 1, WeightDecay: 0.01, Beta1: 0.8, Beta2: 0.99, InvDenom: -100, EpsTerm: -1e-7, MovesParam: true},
			{Decay: 1, Beta1: 0.9, Beta2: 0.999},
		} {
			for part := range 3 {
				check(t, dev, conformance.Case{Name: fmt.Sprintf("adam/%s/%+v/%d", dt, h, part), DType: dt, Run: func(s *conformance.Session) backends.View {
					n := 5000
					p := s.Tensor(dt, conformance.Values(dt, n, -1, 1, 20), n)
					g := s.Tensor(dt, conformance.Values(dt, n, -0.1, 0.1, 21), n)
					m := s.Tensor(dt, conformance.Values(dt, n, -0.01, 0.01, 22), n)
					v := s.Tensor(dt, conformance.Values(dt, n, 0, 0.001, 23), n)
					outs := []backends.View{s.Empty(dt, n), s.Empty(dt, n), s.Empty(dt, n)}
					if !h.MovesParam {
						outs[0] = backends.View{}
					}
					if h.First {
						m, v = backends.View{}, backends.View{}
					}
					s.B.(backends.AdamFusion).AdamStep(outs[0], outs[1], outs[2], p, g, m, v, h)
					if outs[part].Buf == nil {
						return p
					}
					return outs[part]
				}}, exact)
			}
		}
	}
}

// TestKernelsRunOnDevice runs the conformance cases of this file's kernels
// (Matmul, Reduce, ArgReduce, Scan, Sort, Gather, Scatter, Im2Col, Col2Im,
// Random) on a fresh device and asserts the exact set of ops that fell back
// to the host while they ran: none, so any regression to the host is caught.
func TestKernelsRunOnDevice(t *testing.T) {
	dev := openDevice(t)
	ran, host := runKernelCases(t, dev)
	if len(host) != 0 {
		t.Errorf("ops that ran on the host: %v, want none", host)
	}
	t.Logf("%d conformance cases, none on the host", ran)
}

// runKernelCases runs the conformance cases of this file's kernels on dev
// against the CPU and returns how many ran and the ops that ran on the host
// meanwhile (counts by name).
func runKernelCases(t *testing.T, dev *Backend) (int, map[string]int) {
	t.Helper()
	kinds := []string{"matmul/", "reduce/", "argreduce/", "scan/", "sort/", "gather/", "scatter/", "im2col/", "col2im/", "random/"}
	before := dev.HostOps()
	ran := 0
	for _, c := range conformance.Cases() {
		mine := false
		for _, k := range kinds {
			mine = mine || strings.HasPrefix(c.Name, k)
		}
		if !mine {
			continue
		}
		ran++
		if err := conformance.RunCase(cpu.New(0), dev, c, conformance.WithinTolerance); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	if ran < 250 {
		t.Fatalf("only %d conformance cases for these kernels", ran)
	}
	host := map[string]int{}
	for k, v := range dev.HostOps() {
		if v > before[k] {
			host[k] = v - before[k]
		}
	}
	return ran, host
}

// TestHostFallbackWithoutFloat64 runs the kernels' cases as on a device
// without shaderFloat64 (whose pipelines could not be created): every op
// runs on the host, with the CPU's results.
func TestHostFallbackWithoutFloat64(t *testing.T) {
	dev := openDevice(t)
	if !dev.pd.features.float64 {
		t.Skip("the device lacks shaderFloat64: TestKernelsRunOnDevice covers the fallback")
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	dev.pd.features.float64 = false
	defer func() { dev.pd.features.float64 = true }()
	_, host := runKernelCases(t, dev)
	var names []string
	for k := range host {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"argmax", "argmin", "col2im", "cumulative prod", "cumulative sum", "gather", "im2col", "matmul",
		"max", "min", "prod", "random", "scatter", "sort", "sum"}
	if !slices.Equal(names, want) {
		t.Errorf("ops on the host: %v, want %v", names, want)
	}
	// the fused kernels too, with the CPU's bits
	s := &conformance.Session{B: dev}
	defer s.Free()
	ref := &conformance.Session{B: cpu.New(0)}
	defer ref.Free()
	var results [2][]backends.View
	for k, ss := range []*conformance.Session{s, ref} {
		dt := backends.Float32
		x := ss.Tensor(dt, conformance.Values(dt, 12, -2, 2, 40), 3, 4)
		target := ss.Tensor(backends.Int64, []float64{1, -100, 3}, 3)
		logp, nll, weight := ss.Empty(dt, 3, 4), ss.Empty(dt, 3), ss.Empty(dt, 3)
		ss.B.(backends.CrossEntropyFusion).CrossEntropyForward(logp, nll, weight, x, target, -100)
		dx := ss.Empty(dt, 3, 4)
		ss.B.(backends.CrossEntropyFusion).CrossEntropyBackward(dx, logp, weight, target, ss.Tensor(dt, []float64{0.5}, 1), -100)
		p := ss.Tensor(dt, conformance.Values(dt, 12, -1, 1, 41), 12)
		m := ss.Empty(dt, 12)
		v := ss.Empty(dt, 12)
		ss.B.(backends.AdamFusion).AdamStep(p, m, v, p, dx, backends.View{}, backends.View{},
			backends.AdamHyper{Decay: 1, Beta1: 0.9, Beta2: 0.999, InvDenom: -1000, EpsTerm: -1e-5, First: true, MovesParam: true})
		results[k] = []backends.View{logp, nll, weight, dx, p, m, v}
	}
	for i := range results[0] {
		if !bytes.Equal(s.Raw(results[0][i]), ref.Raw(results[1][i])) {
			t.Errorf("result %d differs from the CPU's", i)
		}
	}
	for _, op := range []string{"cross entropy", "cross entropy grad", "adam step"} {
		if dev.HostOps()[op] == 0 {
			t.Errorf("%s did not run on the host", op)
		}
	}
}

// TestCrossEntropyFusedMatchesComposition checks CrossEntropyFusion against
// the composition package tensor runs on the same device (actSoftmax, the
// gathered and negated targets; exp(logp)·a and a scatter-add of −a), bit
// for bit, for rows summed by one thread (few classes) and by a workgroup
// (many), ignored rows, and one coefficient or one per row.
func TestCrossEntropyFusedMatchesComposition(t *testing.T) {
	dev := openDevice(t)
	const ignore = -100
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		for _, nc := range [][2]int{{6, 10}, {5, 300}} {
			n, c := nc[0], nc[1]
			s := &conformance.Session{B: dev}
			x := s.Tensor(dt, conformance.Values(dt, n*c, -5, 5, 30), n, c)
			tv := make([]float64, n)
			for i := range tv {
				tv[i] = float64(i * 7 % c)
			}
			tv[1] = ignore
			target := s.Tensor(backends.Int64, tv, n, 1)
			wide := func(v backends.View) backends.View {
				return backends.View{Buf: v.Buf, DType: v.DType, Shape: []int{n, c}, Strides: []int{v.Strides[0], 0}, Offset: v.Offset}
			}
			// fused forward
			logp, nll, weight := s.Empty(dt, n, c), s.Empty(dt, n, 1), s.Empty(dt, n, 1)
			dev.CrossEntropyForward(logp, nll, weight, x, target, ignore)
			// composed forward
			m, sh, e, z, lz, logp2 := s.Empty(dt, n, 1), s.Empty(dt, n, c), s.Empty(dt, n, c), s.Empty(dt, n, 1), s.Empty(dt, n, 1), s.Empty(dt, n, c)
			dev.Reduce(backends.Max, m, x, []int{1})
			dev.Binary(backends.Sub, sh, x, wide(m))
			dev.Unary(backends.Exp, e, sh, 0, 0)
			dev.Reduce(backends.Sum, z, e, []int{1})
			dev.Unary(backends.Log, lz, z, 0, 0)
			dev.Binary(backends.Sub, logp2, sh, wide(lz))
			name := fmt.Sprintf("%s/%dx%d", dt, n, c)
			got, want := s.Raw(logp), s.Raw(logp2)
			if !bytes.Equal(got, want) {
				t.Errorf("%s: fused log-softmax differs from the composition", name)
			}
			lp, nl, wt := conformance.Decode(dt, want), s.Read(nll), s.Read(weight)
			for i := range n {
				wantN, wantW := 0.0, 0.0
				if tv[i] != ignore {
					wantN, wantW = -lp[i*c+int(tv[i])], 1
				}
				if nl[i] != wantN || wt[i] != wantW {
					t.Errorf("%s: row %d: loss %v weight %v, want %v and %v", name, i, nl[i], wt[i], wantN, wantW)
				}
			}
			for _, perRow := range []bool{false, true} {
				coef := s.Tensor(dt, []float64{0.125}, 1, 1)
				cw := backends.View{Buf: coef.Buf, DType: dt, Shape: []int{n, 1}, Strides: []int{0, 1}}
				if perRow {
					coef = s.Tensor(dt, conformance.Values(dt, n, 0.5, 2, 31), n, 1)
					cw = coef
				}
				dx := s.Empty(dt, n, c)
				dev.CrossEntropyBackward(dx, logp, weight, target, coef, ignore)
				a, p, d, na := s.Empty(dt, n, 1), s.Empty(dt, n, c), s.Empty(dt, n, c), s.Empty(dt, n, 1)
				dev.Binary(backends.Mul, a, cw, weight)
				dev.Unary(backends.Exp, p, logp, 0, 0)
				dev.Binary(backends.Mul, d, p, wide(a))
				dev.Unary(backends.Neg, na, a, 0, 0)
				idx := make([]float64, n)
				for i := range idx {
					if tv[i] != ignore {
						idx[i] = tv[i]
					}
				}
				dev.Scatter(d, s.Tensor(backends.Int64, idx, n, 1), na, 1, true)
				if !bytes.Equal(s.Raw(dx), s.Raw(d)) {
					t.Errorf("%s: per-row coefficient %v: fused gradient differs from the composition", name, perRow)
				}
			}
			if s.Err != nil {
				t.Fatal(s.Err)
			}
			s.Free()
		}
	}
	// a target out of range is reported at the next Sync
	s := &conformance.Session{B: dev}
	defer s.Free()
	dt := backends.Float32
	dev.CrossEntropyForward(s.Empty(dt, 2, 3), s.Empty(dt, 2), s.Empty(dt, 2), s.Tensor(dt, []float64{1, 2, 3, 4, 5, 6}, 2, 3),
		s.Tensor(backends.Int64, []float64{0, 3}, 2), ignore)
	if err := dev.Sync(); err == nil || !strings.Contains(err.Error(), "index 3 out of range") {
		t.Fatalf("target 3 of 3 classes: Sync = %v, want index 3 out of range", err)
	}
}

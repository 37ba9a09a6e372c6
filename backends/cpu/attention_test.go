package cpu

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// attnProblem is one fused attention call's inputs on a backend.
type attnProblem struct {
	g             backends.AttentionGeometry
	q, k, v, dout backends.View
	mask          backends.View
}

func newAttnProblem(be *Backend, dt backends.DType, g backends.AttentionGeometry, mask string) attnProblem {
	p := attnProblem{g: g,
		q: randView(be, dt, 1, g.Batch, g.Lq, g.D), k: randView(be, dt, 2, g.Batch, g.Lk, g.D),
		v: randView(be, dt, 3, g.Batch, g.Lk, g.Dv), dout: randView(be, dt, 4, g.Batch, g.Lq, g.Dv)}
	switch mask {
	case "bool":
		p.mask = allocView(be, backends.Bool, g.Lq, g.Lk)
		r := rand.New(rand.NewPCG(5, 5))
		for i := range buf(p.mask).u8() {
			if r.IntN(10) != 0 {
				buf(p.mask).u8()[i] = 1
			}
		}
		// broadcast over the batch
		p.mask.Shape, p.mask.Strides = []int{g.Batch, g.Lq, g.Lk}, []int{0, g.Lk, 1}
	case "float":
		p.mask = randView(be, dt, 6, g.Batch, g.Lq, g.Lk)
	}
	return p
}

// naive computes the attention and its gradients in float64 by the
// definition: the outputs out, dq, dk, dv as flat slices.
func (p attnProblem) naive() (out, dq, dk, dv []float64) {
	g := p.g
	q, k, v, do := snapshot(p.q), snapshot(p.k), snapshot(p.v), snapshot(p.dout)
	var mask []float64
	if p.mask.Buf != nil {
		mask = snapshot(p.mask)
	}
	out = make([]float64, g.Batch*g.Lq*g.Dv)
	dq, dk, dv = make([]float64, len(q)), make([]float64, len(k)), make([]float64, len(v))
	for b := range g.Batch {
		for i := range g.Lq {
			s := make([]float64, g.Lk)
			mx := math.Inf(-1)
			for j := range g.Lk {
				var dot float64
				for c := range g.D {
					dot += q[(b*g.Lq+i)*g.D+c] * k[(b*g.Lk+j)*g.D+c]
				}
				s[j] = dot * g.Scale
				if mask != nil {
					m := mask[(b*g.Lq+i)*g.Lk+j]
					if p.mask.DType == backends.Bool {
						if m == 0 {
							s[j] = math.Inf(-1)
						}
					} else {
						s[j] += m
					}
				}
				if g.Causal && j > i+g.CausalOffset {
					s[j] = math.Inf(-1)
				}
				mx = math.Max(mx, s[j])
			}
			var z float64
			for j := range s {
				s[j] = math.Exp(s[j] - mx)
				z += s[j]
			}
			dp := make([]float64, g.Lk)
			var dsum float64
			for j := range s {
				s[j] /= z
				for c := range g.Dv {
					out[(b*g.Lq+i)*g.Dv+c] += s[j] * v[(b*g.Lk+j)*g.Dv+c]
					dv[(b*g.Lk+j)*g.Dv+c] += s[j] * do[(b*g.Lq+i)*g.Dv+c]
					dp[j] += do[(b*g.Lq+i)*g.Dv+c] * v[(b*g.Lk+j)*g.Dv+c]
				}
				dsum += s[j] * dp[j]
			}
			for j := range s {
				ds := s[j] * (dp[j] - dsum) * g.Scale
				for c := range g.D {
					dq[(b*g.Lq+i)*g.D+c] += ds * k[(b*g.Lk+j)*g.D+c]
					dk[(b*g.Lk+j)*g.D+c] += ds * q[(b*g.Lq+i)*g.D+c]
				}
			}
		}
	}
	return out, dq, dk, dv
}

// run runs the fused forward and backward passes on be.
func (p attnProblem) run(be *Backend) (out, lse, dq, dk, dv backends.View) {
	g, dt := p.g, p.q.DType
	out = allocView(be, dt, g.Batch, g.Lq, g.Dv)
	lse = allocView(be, dt, g.Batch, g.Lq)
	dq, dk, dv = allocView(be, dt, g.Batch, g.Lq, g.D), allocView(be, dt, g.Batch, g.Lk, g.D), allocView(be, dt, g.Batch, g.Lk, g.Dv)
	p.runInto(be, out, lse, dq, dk, dv)
	return
}

// runInto is run with the outputs given.
func (p attnProblem) runInto(be *Backend, out, lse, dq, dk, dv backends.View) {
	be.AttentionForward(out, lse, p.q, p.k, p.v, p.mask, p.g)
	be.AttentionBackward(dq, dk, dv, p.q, p.k, p.v, p.mask, out, p.dout, lse, p.g)
}

var attnGeometries = []struct {
	name string
	g    backends.AttentionGeometry
	mask string
}{
	{"one tile", backends.AttentionGeometry{Batch: 2, Lq: 5, Lk: 7, D: 3, Dv: 4, Scale: 0.5}, ""},
	{"odd multi-tile", backends.AttentionGeometry{Batch: 3, Lq: 130, Lk: 97, D: 9, Dv: 5, Scale: 0.3}, ""},
	{"causal", backends.AttentionGeometry{Batch: 2, Lq: 150, Lk: 150, D: 8, Dv: 8, Scale: 0.35, Causal: true}, ""},
	{"causal aligned at the end", backends.AttentionGeometry{Batch: 1, Lq: 70, Lk: 200, D: 4, Dv: 6, Scale: 0.5,
		Causal: true, CausalOffset: 130}, ""},
	{"bool mask broadcast", backends.AttentionGeometry{Batch: 2, Lq: 66, Lk: 131, D: 5, Dv: 3, Scale: 0.45}, "bool"},
	{"float mask", backends.AttentionGeometry{Batch: 2, Lq: 65, Lk: 70, D: 4, Dv: 4, Scale: 0.5}, "float"},
	{"long keys, one problem (several groups)", backends.AttentionGeometry{Batch: 1, Lq: 40, Lk: 600, D: 6, Dv: 5, Scale: 0.4}, ""},
	// a GPT head's sizes: 64 and 32 features, sequences that end inside a tile
	{"head dim 64, causal, batch 1", backends.AttentionGeometry{Batch: 1, Lq: 129, Lk: 129, D: 64, Dv: 64, Scale: 0.125,
		Causal: true}, ""},
	{"head dim 32, bool mask", backends.AttentionGeometry{Batch: 3, Lq: 77, Lk: 77, D: 32, Dv: 32, Scale: 0.17}, "bool"},
	{"head dim 64, float mask, one query", backends.AttentionGeometry{Batch: 2, Lq: 1, Lk: 65, D: 64, Dv: 32, Scale: 0.125}, "float"},
}

// TestAttentionMatchesDefinition compares the fused kernels with the
// attention and its gradients computed by the definition in float64.
func TestAttentionMatchesDefinition(t *testing.T) {
	be := New(2)
	for _, c := range attnGeometries {
		for _, dt := range []backends.DType{backends.Float64, backends.Float32} {
			kernels := attnF32Kernels
			if dt == backends.Float64 {
				kernels = kernels[len(kernels)-1:] // the float64 passes are Go loops
			}
			for _, kern := range kernels {
				t.Run(c.name+" "+dt.String()+" "+kern.name, func(t *testing.T) {
					defer useAttnF32(kern)()
					attnMatchesDefinition(t, be, dt, c.g, c.mask)
				})
			}
		}
	}
}

// useAttnF32 makes the float32 attention use kern's row passes and
// returns the function that restores the default.
func useAttnF32(kern attnF32Kernel) (restore func()) {
	saved := attnF32
	attnF32 = kern.ops
	return func() { attnF32 = saved }
}

// attnMatchesDefinition runs one problem fused and compares it with the
// float64 definition.
func attnMatchesDefinition(t *testing.T, be *Backend, dt backends.DType, g backends.AttentionGeometry, mask string) {
	p := newAttnProblem(be, dt, g, mask)
	out, _, dq, dk, dv := p.run(be)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	wo, wq, wk, wv := p.naive()
	tol := 1e-12
	if dt == backends.Float32 {
		tol = 3e-5
	}
	for _, r := range []struct {
		name string
		got  backends.View
		want []float64
	}{{"out", out, wo}, {"dq", dq, wq}, {"dk", dk, wk}, {"dv", dv, wv}} {
		got := snapshot(r.got)
		scale := 1.0
		for _, w := range r.want {
			scale = math.Max(scale, math.Abs(w))
		}
		for i := range got {
			if math.Abs(got[i]-r.want[i]) > tol*scale {
				t.Fatalf("%s[%d] = %v, want %v", r.name, i, got[i], r.want[i])
			}
		}
	}
}

// TestAttentionIndependentOfWorkers requires bit-identical results from
// 1, 2 and 3 workers.
func TestAttentionIndependentOfWorkers(t *testing.T) {
	for _, c := range attnGeometries {
		t.Run(c.name, func(t *testing.T) {
			var want [][]byte
			for _, w := range []int{1, 2, 3} {
				be := New(w)
				p := newAttnProblem(be, backends.Float32, c.g, c.mask)
				out, lse, dq, dk, dv := p.run(be)
				if err := be.Sync(); err != nil {
					t.Fatal(err)
				}
				for i, v := range []backends.View{out, lse, dq, dk, dv} {
					got := rawSnapshot(v)
					if w == 1 {
						want = append(want, got)
					} else if !bytes.Equal(got, want[i]) {
						t.Fatalf("%d workers: result %d differs from 1 worker's", w, i)
					}
				}
			}
		})
	}
}

// TestAttentionDirectTilesMatchPacked requires the same bits from the
// float32 attention whether it multiplies its tiles in place or packs
// them: the in-place kernels sum as the packed ones do. Forcing the
// in-place tiles on runs them on an AVX-512 machine too.
func TestAttentionDirectTilesMatchPacked(t *testing.T) {
	if attnDirectF32 == nil {
		t.Skip("no in-place tile kernels on this CPU")
	}
	defer func(saved attnDirectMode) { attnDirect = saved }(attnDirect)
	be := New(2)
	for _, c := range attnGeometries {
		t.Run(c.name, func(t *testing.T) {
			p := newAttnProblem(be, backends.Float32, c.g, c.mask)
			var want [][]byte
			for _, mode := range []attnDirectMode{attnDirectOff, attnDirectOn} {
				attnDirect = mode
				out, lse, dq, dk, dv := p.run(be)
				if err := be.Sync(); err != nil {
					t.Fatal(err)
				}
				for i, v := range []backends.View{out, lse, dq, dk, dv} {
					got := rawSnapshot(v)
					if mode == attnDirectOff {
						want = append(want, got)
					} else if !bytes.Equal(got, want[i]) {
						t.Fatalf("result %d differs from the packed tiles'", i)
					}
				}
			}
		})
	}
}

// TestAttentionRowWithNoKeyIsNaN: a query that may attend to nothing
// gives NaN, as the composition does.
func TestAttentionRowWithNoKeyIsNaN(t *testing.T) {
	be := New(1)
	g := backends.AttentionGeometry{Batch: 1, Lq: 2, Lk: 3, D: 2, Dv: 2, Scale: 1}
	p := newAttnProblem(be, backends.Float32, g, "")
	p.mask = allocView(be, backends.Bool, 1, 2, 3)
	copy(buf(p.mask).u8(), []uint8{1, 1, 0, 0, 0, 0}) // query 1 sees nothing
	out, lse, dq, _, _ := p.run(be)
	o, l, d := snapshot(out), snapshot(lse), snapshot(dq)
	if math.IsNaN(o[0]) || !math.IsNaN(o[2]) || !math.IsInf(l[1], -1) || !math.IsNaN(d[2]) || math.IsNaN(d[0]) {
		t.Errorf("out %v, lse %v, dq %v: want row 1 NaN (lse −Inf), row 0 finite", o, l, d)
	}
}

// TestAttentionRefusesBadViews checks that misshapen views are refused with
// a sticky error and nothing is written.
func TestAttentionRefusesBadViews(t *testing.T) {
	be := New(1)
	g := backends.AttentionGeometry{Batch: 2, Lq: 4, Lk: 5, D: 3, Dv: 2, Scale: 1}
	p := newAttnProblem(be, backends.Float32, g, "")
	out := allocView(be, backends.Float32, 2, 4, 2)
	lse := allocView(be, backends.Float32, 2, 4)
	for _, c := range []struct {
		name string
		edit func(q, k, out, lse *backends.View)
		want string
	}{
		{"short k", func(q, k, out, lse *backends.View) { k.Shape = []int{2, 4, 3} }, "k: shape"},
		{"strided rows", func(q, k, out, lse *backends.View) { q.Strides = []int{12, 1, 4}; q.Shape = []int{2, 4, 3} }, "stride 1"},
		{"past the end", func(q, k, out, lse *backends.View) { out.Offset = 3 }, "reaches"},
		{"int lse", func(q, k, out, lse *backends.View) { lse.DType = backends.Int32 }, "lse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, k, o, l := p.q, p.k, out, lse
			c.edit(&q, &k, &o, &l)
			be.AttentionForward(o, l, q, k, p.v, backends.View{}, g)
			err := be.Sync()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestAttnExpF32 checks the fused kernels' float32 exponential against
// math.Exp: within 1 ulp everywhere (denormal results included), 0, +Inf
// and NaN where they belong.
func TestAttnExpF32(t *testing.T) {
	for _, x := range []float32{float32(math.Inf(-1)), -1000, -150, -104, -103.5, -100, -87.5, -87.3} {
		want := float32(math.Exp(float64(x)))
		if got := attnExpF32(x); got != want && !(want != 0 && math.Abs(float64(got-want)) <= float64(math.Nextafter32(want, 1)-want)) {
			t.Errorf("exp(%v) = %v, want %v", x, got, want)
		}
	}
	if !math.IsInf(float64(attnExpF32(89)), 1) || !math.IsInf(float64(attnExpF32(float32(math.Inf(1)))), 1) {
		t.Errorf("exp(89) = %v, exp(+Inf) = %v, want +Inf", attnExpF32(89), attnExpF32(float32(math.Inf(1))))
	}
	if nan := float32(math.NaN()); attnExpF32(nan) == attnExpF32(nan) {
		t.Errorf("exp(NaN) = %v", attnExpF32(nan))
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 200000 {
		x := float32(r.Float64()*200 - 110)
		want := math.Exp(float64(x))
		got := float64(attnExpF32(x))
		ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
		if want < math.SmallestNonzeroFloat32 {
			continue
		}
		if math.Abs(got-want) > ulp {
			t.Fatalf("exp(%v) = %v, want %v (more than 1 ulp off)", x, got, want)
		}
	}
}

// TestAttnExpRow checks each implementation of the float32 row passes (Go,
// and AVX2 and AVX-512 where the CPU has them): the exponential within 2
// ulp of e^(x·scale−shift), 0, +Inf and NaN where they belong, every tail
// length, and the sum.
func TestAttnExpRow(t *testing.T) {
	for _, kern := range attnF32Kernels {
		t.Run(kern.name, func(t *testing.T) { testAttnExpRow(t, kern.ops) })
	}
}

func testAttnExpRow(t *testing.T, attnF32 attnRowOps[float32]) {
	r := rand.New(rand.NewPCG(2, 2))
	for n := range 40 {
		s := make([]float32, n)
		want := make([]float64, n)
		shift := float32(r.Float64()*4 - 2)
		var sum float64
		for j := range s {
			s[j] = float32(r.Float64()*120 - 100)
			want[j] = math.Exp(float64(s[j]) - float64(shift))
			sum += want[j]
		}
		x := append([]float32(nil), s...)
		gotSum := attnF32.exp(s, 1, shift)
		for j, w := range want {
			// the vector kernel rounds the argument to float32 first, as
			// the composition's subtraction does
			ulp := float64(math.Nextafter32(float32(w), float32(math.Inf(1))) - float32(w))
			if math.Abs(float64(s[j])-w) > 2*ulp+w*math.Abs(float64(x[j]-shift))*0x1p-24 {
				t.Fatalf("n=%d: e^(%v) = %v, want %v", n, want[j], s[j], w)
			}
		}
		if math.Abs(gotSum-sum) > 1e-6*sum {
			t.Errorf("n=%d: sum %v, want %v", n, gotSum, sum)
		}
	}
	s := []float32{float32(math.Inf(-1)), float32(math.NaN()), float32(math.Inf(1)), -200, 100, 0}
	attnF32.exp(s, 1, 0)
	if s[0] != 0 || s[1] == s[1] || !math.IsInf(float64(s[2]), 1) || s[3] != 0 || !math.IsInf(float64(s[4]), 1) || s[5] != 1 {
		t.Errorf("specials: %v, want [0 NaN +Inf 0 +Inf 1]", s)
	}
}

// BenchmarkAttention times the fused attention of one GPT layer (32 heads
// of 256 positions and 64 features, causal) forward and backward,
// reporting GFLOP/s per wall second and per CPU second, counting the four
// products of the forward pass and the backward pass's five (the one that
// recomputes the scores included), halved for the causal mask.
func BenchmarkAttention(b *testing.B) {
	be := New(0)
	g := backends.AttentionGeometry{Batch: 32, Lq: 256, Lk: 256, D: 64, Dv: 64, Scale: 0.125, Causal: true}
	p := newAttnProblem(be, backends.Float32, g, "")
	out, lse, dq, dk, dv := p.run(be)
	c0 := cpuSeconds()
	b.ResetTimer()
	for range b.N {
		p.runInto(be, out, lse, dq, dk, dv)
	}
	flops := 7.0 * 2 * 32 * 256 * 256 * 64 / 2 * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if c := cpuSeconds() - c0; c > 0 {
		b.ReportMetric(flops/c/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkAttentionTiles times the attention of GPT d=256 (8 sequences ×
// 4 heads) and d=512 (8 × 8 heads) forward and backward with its tiles
// multiplied in place (direct, where the CPU has the kernels) and packed,
// alternating the two every iteration, and reports the fastest of each
// (the least disturbed on a shared machine) in ms.
func BenchmarkAttentionTiles(b *testing.B) {
	be := New(0)
	for _, heads := range []int{32, 64} {
		g := backends.AttentionGeometry{Batch: heads, Lq: 256, Lk: 256, D: 64, Dv: 64, Scale: 0.125, Causal: true}
		p := newAttnProblem(be, backends.Float32, g, "")
		out, lse, dq, dk, dv := p.run(be)
		b.Run(fmt.Sprintf("heads=%d", heads), func(b *testing.B) {
			defer func(saved attnDirectMode) { attnDirect = saved }(attnDirect)
			modes := []attnDirectMode{attnDirectAuto, attnDirectOff}
			best := []time.Duration{math.MaxInt64, math.MaxInt64}
			for range b.N {
				for i, mode := range modes {
					attnDirect = mode
					t0 := time.Now()
					p.runInto(be, out, lse, dq, dk, dv)
					best[i] = min(best[i], time.Since(t0))
				}
			}
			b.ReportMetric(best[0].Seconds()*1e3, "direct-ms")
			b.ReportMetric(best[1].Seconds()*1e3, "packed-ms")
		})
	}
}

// BenchmarkAttentionRowKernels is BenchmarkAttention on one worker with
// each implementation of the float32 row passes, to compare them in one
// run.
func BenchmarkAttentionRowKernels(b *testing.B) {
	be := New(1)
	g := backends.AttentionGeometry{Batch: 32, Lq: 256, Lk: 256, D: 64, Dv: 64, Scale: 0.125, Causal: true}
	p := newAttnProblem(be, backends.Float32, g, "")
	out, lse, dq, dk, dv := p.run(be)
	for _, kern := range attnF32Kernels {
		b.Run(kern.name, func(b *testing.B) {
			defer useAttnF32(kern)()
			c0 := cpuSeconds()
			for range b.N {
				p.runInto(be, out, lse, dq, dk, dv)
			}
			flops := 7.0 * 2 * 32 * 256 * 256 * 64 / 2 * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(flops/c/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

// TestAttnRowPasses checks each implementation of the float32 row passes
// on scaled rows against math.Exp, and the maximum and dS = P∘(dP − D)
// exactly, over every tail length.
func TestAttnRowPasses(t *testing.T) {
	for _, kern := range attnF32Kernels {
		t.Run(kern.name, func(t *testing.T) { testAttnRowPasses(t, kern.ops) })
	}
}

func testAttnRowPasses(t *testing.T, attnF32 attnRowOps[float32]) {
	r := rand.New(rand.NewPCG(3, 3))
	for n := range 40 {
		s := make([]float32, n)
		p := make([]float32, n)
		ds := make([]float32, n)
		want := make([]float32, n)
		scale, shift := float32(0.3), float32(r.Float64())
		wantMax := float32(math.Inf(-1))
		for j := range s {
			s[j] = float32(r.Float64()*40 - 20)
			p[j], ds[j] = float32(r.Float64()), float32(r.Float64()*2-1)
			want[j] = p[j] * (ds[j] - 0.25)
			wantMax = max(wantMax, s[j])
		}
		if got := attnF32.max(s); got != wantMax {
			t.Errorf("n=%d: max %v, want %v", n, got, wantMax)
		}
		attnF32.ds(ds, p, 0.25)
		for j := range ds {
			if ds[j] != want[j] {
				t.Fatalf("n=%d: ds[%d] = %v, want %v", n, j, ds[j], want[j])
			}
		}
		// scale: one rounded product per element, in place and not
		sc := make([]float32, n)
		attnF32.scale(sc, s, 0.37)
		inPlace := append([]float32(nil), s...)
		attnF32.scale(inPlace, inPlace, 0.37)
		for j := range s {
			if w := s[j] * 0.37; sc[j] != w || inPlace[j] != w {
				t.Fatalf("n=%d: scale[%d] = %v (in place %v), want %v", n, j, sc[j], inPlace[j], w)
			}
		}
		// dot: float64 sums of exact products, in any fixed order
		var dot, abs float64
		for j := range s {
			dot += float64(s[j]) * float64(ds[j])
			abs += math.Abs(float64(s[j]) * float64(ds[j]))
		}
		if got := attnF32.dot(s, ds); math.Abs(got-dot) > 1e-15*abs {
			t.Fatalf("n=%d: dot %v, want %v", n, got, dot)
		}
		e := append([]float32(nil), s...)
		attnF32.exp(e, scale, shift)
		for j := range e {
			w := math.Exp(float64(s[j])*float64(scale) - float64(shift))
			if math.Abs(float64(e[j])-w) > 4e-7*w {
				t.Fatalf("n=%d: e^(%v·%v−%v) = %v, want %v", n, s[j], scale, shift, e[j], w)
			}
		}
	}
}

// TestAttnVectorKernelsAgree requires every vector implementation of the
// row passes to give the bits the one in use gives (the AVX2 kernels
// mirror the AVX-512 ones operation for operation), over every tail
// length, with zeros, infinities and NaNs among the inputs. Where the CPU
// has only one vector implementation it compares it with itself.
func TestAttnVectorKernelsAgree(t *testing.T) {
	want := attnF32Kernels[len(attnF32Kernels)-1]
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(-1)), float32(math.Inf(1)),
		float32(math.NaN()), -200, 200, -87.5, -103.9}
	r := rand.New(rand.NewPCG(7, 7))
	for _, kern := range attnF32Kernels[1:] {
		for n := range 70 {
			s := make([]float32, n)
			p := make([]float32, n)
			for j := range s {
				s[j], p[j] = float32(r.Float64()*60-40), float32(r.Float64())
				if r.IntN(8) == 0 {
					s[j] = specials[r.IntN(len(specials))]
				}
			}
			scale, shift := float32(r.Float64()+0.1), float32(r.Float64()*4-2)
			e1, e2 := append([]float32(nil), s...), append([]float32(nil), s...)
			sum1, sum2 := kern.ops.exp(e1, scale, shift), want.ops.exp(e2, scale, shift)
			m1, m2 := kern.ops.max(s), want.ops.max(s)
			d1, d2 := append([]float32(nil), s...), append([]float32(nil), s...)
			kern.ops.ds(d1, p, 0.3)
			want.ops.ds(d2, p, 0.3)
			got, exp := [][]float32{e1, d1, {float32(sum1), m1}}, [][]float32{e2, d2, {float32(sum2), m2}}
			if !kernelsAgree(t, kern.name, want.name, got, exp) {
				t.Fatalf("%s and %s differ at n=%d: exp %v, %v (sums %v, %v); max %v, %v; ds %v, %v",
					kern.name, want.name, n, e1, e2, sum1, sum2, m1, m2, d1, d2)
			}
		}
	}
}

// kernelsAgree reports whether the outputs got of kernel name agree with
// exp of kernel ref: the AVX2 kernels repeat the AVX-512 ones step for
// step, so their bits should be equal, but only the AVX-512 machines CI
// runs on can tell; a difference in bits is logged, and only one beyond 4
// ulp of the larger value (or 1e-6 of the largest of its vector, where a
// value comes from cancellation) fails.
func kernelsAgree(t *testing.T, name, ref string, got, exp [][]float32) bool {
	t.Helper()
	for i := range got {
		if sameBits32(got[i], exp[i]) {
			continue
		}
		t.Logf("%s and %s: output %d differs in its bits: %v, %v", name, ref, i, got[i], exp[i])
		if len(got[i]) != len(exp[i]) {
			return false
		}
		var scale float64
		for _, v := range exp[i] {
			if a := math.Abs(float64(v)); a > scale && !math.IsInf(a, 0) {
				scale = a
			}
		}
		for j, a := range got[i] {
			b := exp[i][j]
			if a != a || b != b {
				if (a != a) != (b != b) {
					return false
				}
				continue
			}
			if math.IsInf(float64(a), 0) || math.IsInf(float64(b), 0) {
				if a != b {
					return false
				}
				continue
			}
			m := math.Max(math.Abs(float64(a)), math.Abs(float64(b)))
			ulp := float64(math.Nextafter32(float32(m), float32(math.Inf(1)))) - float64(float32(m))
			if d := math.Abs(float64(a) - float64(b)); d > 4*ulp && d > 1e-6*scale {
				return false
			}
		}
	}
	return true
}

// sameBits32 reports whether a and b hold the same float32 bit patterns.
func sameBits32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

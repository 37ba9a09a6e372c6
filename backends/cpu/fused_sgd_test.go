package cpu

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// TestSGDStepThreads: the fused SGD update gives the same bits on one
// thread and on several (it is element-wise, cut into chunks), for every
// path through the kernel, in place and into fresh outputs.
func TestSGDStepThreads(t *testing.T) {
	const n = 300_001 // several chunks, and a ragged end
	hypers := []backends.SGDHyper{
		{LR: 0.1, Momentum: 0.9},
		{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4},
		{LR: 0.1, Momentum: 0.9, First: true},
		{LR: 0.05, Momentum: 0.8, Dampening: 0.1, Nesterov: true, Maximize: true, WeightDecay: 0.01},
		{LR: 0.05},
	}
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		for i, h := range hypers {
			for _, inPlace := range []bool{false, true} {
				var results [][]byte
				for _, threads := range []int{1, 2} {
					be := New(threads)
					p, g, mb := randView(be, dt, 1, n), randView(be, dt, 2, n), randView(be, dt, 3, n)
					outP, outB := allocView(be, dt, n), allocView(be, dt, n)
					if inPlace {
						outP, outB = p, mb
					}
					be.SGDStep(outP, outB, p, g, mb, h)
					if err := be.Sync(); err != nil {
						t.Fatal(err)
					}
					results = append(results, append(append([]byte(nil), buf(outP).bytes...), buf(outB).bytes...))
				}
				if !bytes.Equal(results[0], results[1]) {
					t.Errorf("%s hyper %d in place %v: one thread and two disagree", dt, i, inPlace)
				}
			}
		}
	}
}

// TestSGDStepValues checks a few float32 elements against the update
// computed by hand, each product rounded to float32 as the composed ops
// round it.
func TestSGDStepValues(t *testing.T) {
	be := New(1)
	p, g, mb := allocView(be, backends.Float32, 3), allocView(be, backends.Float32, 3), allocView(be, backends.Float32, 3)
	copy(buf(p).f32(), []float32{1, -2, 0.5})
	copy(buf(g).f32(), []float32{0.25, 4, -1})
	copy(buf(mb).f32(), []float32{0.1, 0, 3})
	h := backends.SGDHyper{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Nesterov: true}
	be.SGDStep(p, mb, p, g, mb, h)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	round := func(x float64) float64 { return float64(float32(x)) }
	for i, c := range []struct{ p, g, b float64 }{{1, 0.25, 0.1}, {-2, 4, 0}, {0.5, -1, 3}} {
		d := round(c.g + round(c.p*0.01))
		bi := round(round(round(c.b)*0.9) + d)
		d = round(d + round(bi*0.9))
		wantP := round(c.p - round(d*0.1))
		if got := float64(buf(p).f32()[i]); got != wantP || float64(buf(mb).f32()[i]) != bi {
			t.Errorf("element %d: parameter %v and buffer %v, want %v and %v", i, got, buf(mb).f32()[i], wantP, bi)
		}
	}
}

// TestSGDStepRefuses: views that do not fit are the sticky error, and
// nothing is written.
func TestSGDStepRefuses(t *testing.T) {
	h := backends.SGDHyper{LR: 0.1, Momentum: 0.9}
	cases := []struct {
		name string
		call func(be *Backend, out backends.View)
		want string
	}{
		{"a short gradient", func(be *Backend, out backends.View) {
			be.SGDStep(out, allocView(be, backends.Float32, 8), allocView(be, backends.Float32, 8),
				allocView(be, backends.Float32, 4), allocView(be, backends.Float32, 8), h)
		}, "sgd step: gradients"},
		{"no buffer after the first step", func(be *Backend, out backends.View) {
			be.SGDStep(out, allocView(be, backends.Float32, 8), allocView(be, backends.Float32, 8),
				allocView(be, backends.Float32, 8), backends.View{}, h)
		}, "sgd step: momentum buffer"},
		{"int64 parameters", func(be *Backend, out backends.View) {
			i64 := func() backends.View { return allocView(be, backends.Int64, 8) }
			be.SGDStep(out, i64(), i64(), i64(), i64(), h)
		}, "sgd step: dtype int64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			be := New(1)
			out := randView(be, backends.Float32, 5, 8)
			before := append([]byte(nil), buf(out).bytes...)
			c.call(be, out)
			err := be.Sync()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if !bytes.Equal(before, buf(out).bytes) {
				t.Errorf("the refused call wrote to its output")
			}
		})
	}
}

// TestSGDStepVectorMatchesGo requires the same bits from the vector loop
// (where the CPU runs it) and the Go loop, with and without weight decay,
// in place and not, on lengths that are and are not whole groups of four,
// with zeros of both signs, infinities and NaNs among the values.
func TestSGDStepVectorMatchesGo(t *testing.T) {
	if !sgdVector {
		t.Skip("no vector SGD loop on this machine")
	}
	defer func() { sgdVector = true }()
	be := New(1)
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), 1e-40, 3e38}
	for _, n := range []int{1, 3, 4, 5, 8, 13, 41, 1000} {
		for _, h := range []backends.SGDHyper{{LR: 0.1, Momentum: 0.9}, {LR: 0.03, Momentum: 0.95, WeightDecay: 5e-4}} {
			for _, inPlace := range []bool{false, true} {
				var want []byte
				for _, vec := range []bool{false, true} {
					sgdVector = vec
					p, g, mb := randView(be, backends.Float32, 1, n), randView(be, backends.Float32, 2, n), randView(be, backends.Float32, 3, n)
					for i, v := range specials {
						if j := 3*i + 1; j < n {
							buf(g).f32()[j], buf(mb).f32()[(j+1)%n], buf(p).f32()[(j+2)%n] = v, v, v
						}
					}
					outP, outB := allocView(be, backends.Float32, n), allocView(be, backends.Float32, n)
					if inPlace {
						outP, outB = p, mb
					}
					be.SGDStep(outP, outB, p, g, mb, h)
					if err := be.Sync(); err != nil {
						t.Fatal(err)
					}
					got := append(append([]byte(nil), buf(outP).bytes...), buf(outB).bytes...)
					if !vec {
						want = got
					} else if !bytes.Equal(got, want) {
						t.Fatalf("n = %d, %+v, in place %v: the vector and the Go loops disagree", n, h, inPlace)
					}
				}
			}
		}
	}
}

// BenchmarkSGDStep times an in-place float32 SGD step with momentum 0.9
// over ResNet-18's 11.7 M parameters on one worker, with the vector loop
// and the Go loop in turn, reporting the best ms of each.
func BenchmarkSGDStep(b *testing.B) {
	const n = 11_689_512
	be, vector := New(1), sgdVector
	defer func() { sgdVector = vector }()
	p, g, mb := randView(be, backends.Float32, 1, n), randView(be, backends.Float32, 2, n), randView(be, backends.Float32, 3, n)
	h := backends.SGDHyper{LR: 1e-9, Momentum: 0.9}
	best := [2]time.Duration{time.Hour, time.Hour}
	for i := 0; b.Loop(); i++ {
		for j := range 2 {
			v := (i + j) % 2
			sgdVector = v == 0 && vector
			t0 := time.Now()
			be.SGDStep(p, mb, p, g, mb, h)
			best[v] = min(best[v], time.Since(t0))
		}
	}
	b.ReportMetric(float64(best[0])/1e6, "vector-ms")
	b.ReportMetric(float64(best[1])/1e6, "go-ms")
}

package cpu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestResultsIndependentOfWorkers runs the same kernels on backends with 1,
// 2 and 3 workers, on sizes large enough to split into many chunks (and to
// take the segmented reduction paths), and requires bit-identical results.
func TestResultsIndependentOfWorkers(t *testing.T) {
	type run func(be *Backend) backends.View
	f32 := backends.Float32
	src := New(1)
	a := randView(src, f32, 1, 300, 513)
	bm := randView(src, f32, 2, 513, 200)
	a64 := randView(src, backends.Float64, 3, 97, 301)
	b64 := randView(src, backends.Float64, 4, 301, 130)
	small := randView(src, f32, 5, 16, 40, 40)
	long := randView(src, f32, 6, 100003)
	wide := randView(src, f32, 7, 3, 70000)
	tall := randView(src, f32, 8, 70000, 3)
	grid := randView(src, f32, 9, 500, 700)
	logits := randView(src, f32, 10, 64, 1000)
	ints := randView(src, backends.Int64, 11, 400, 300)
	idx := allocView(src, backends.Int64, 200000)
	for i := range buf(idx).i64() {
		buf(idx).i64()[i] = int64(i*7919) % 1000
	}
	vals := randView(src, f32, 12, 200000)
	img := randView(src, f32, 13, 4, 8, 30, 30)
	geo := withOut(backends.ConvGeometry{N: 4, C: 8, H: 30, W: 30, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1})

	reduce := func(op backends.ReduceOp, x backends.View, axes ...int) run {
		return func(be *Backend) backends.View {
			shape := append([]int(nil), x.Shape...)
			for _, ax := range axes {
				shape[ax] = 1
			}
			out := allocView(src, x.DType, shape...)
			be.Reduce(op, out, x, axes)
			return out
		}
	}
	matmul := func(x, y backends.View) run {
		return func(be *Backend) backends.View {
			r := len(x.Shape)
			shape := append(append([]int(nil), x.Shape[:r-1]...), y.Shape[r-1])
			out := allocView(src, x.DType, shape...)
			be.Matmul(out, x, y)
			return out
		}
	}
	transpose := func(v backends.View) backends.View {
		v.Shape = []int{v.Shape[1], v.Shape[0]}
		v.Strides = []int{v.Strides[1], v.Strides[0]}
		return v
	}
	cases := []struct {
		name string
		fn   run
	}{
		{"matmul f32", matmul(a, bm)},
		{"matmul f32 transposed", matmul(transpose(bm), transpose(a))},
		{"matmul f64", matmul(a64, b64)},
		{"matmul batch of small", matmul(small, small)},
		{"vector × matrix", matmul(backends.View{Buf: a.Buf, DType: f32, Shape: []int{1, 513}, Strides: []int{0, 1}}, bm)},
		{"matrix × vector", matmul(a, backends.View{Buf: bm.Buf, DType: f32, Shape: []int{513, 1}, Strides: []int{200, 0}})},
		{"sum all (segmented)", reduce(backends.Sum, long, 0)},
		{"prod all (segmented)", reduce(backends.Prod, long, 0)},
		{"sum rows (segmented)", reduce(backends.Sum, wide, 1)},
		{"sum leading (segmented)", reduce(backends.Sum, tall, 0)},
		{"sum last", reduce(backends.Sum, grid, 1)},
		{"sum first", reduce(backends.Sum, grid, 0)},
		{"sum both", reduce(backends.Sum, grid, 0, 1)},
		{"max first", reduce(backends.Max, grid, 0)},
		{"int sum", reduce(backends.Sum, ints, 1)},
		{"softmax chain", func(be *Backend) backends.View {
			mx := allocView(src, f32, 64, 1)
			be.Reduce(backends.Max, mx, logits, []int{1})
			sh := allocView(src, f32, 64, 1000)
			be.Binary(backends.Sub, sh, logits, backends.View{Buf: mx.Buf, DType: f32, Shape: []int{64, 1000}, Strides: []int{1, 0}})
			ex := allocView(src, f32, 64, 1000)
			be.Unary(backends.Exp, ex, sh, 0, 0)
			sm := allocView(src, f32, 64, 1)
			be.Reduce(backends.Sum, sm, ex, []int{1})
			out := allocView(src, f32, 64, 1000)
			be.Binary(backends.Div, out, ex, backends.View{Buf: sm.Buf, DType: f32, Shape: []int{64, 1000}, Strides: []int{1, 0}})
			return out
		}},
		{"log-sum-exp over columns", func(be *Backend) backends.View {
			ex := allocView(src, f32, 500, 700)
			be.Unary(backends.Exp, ex, transpose(transpose(grid)), 0, 0)
			out := allocView(src, f32, 1, 700)
			be.Reduce(backends.Sum, out, ex, []int{0})
			be.Unary(backends.Log, out, out, 0, 0)
			return out
		}},
		{"argmax long", func(be *Backend) backends.View {
			out := allocView(src, backends.Int64, 3, 1)
			be.ArgReduce(backends.ArgMax, out, wide, 1)
			return out
		}},
		{"cumsum", func(be *Backend) backends.View {
			out := allocView(src, f32, 500, 700)
			be.Scan(backends.Sum, out, grid, 0)
			return out
		}},
		{"random normal", func(be *Backend) backends.View {
			out := allocView(src, f32, 1<<20)
			be.Random(out, backends.Normal, 7, 12345, 0, 1)
			return out
		}},
		{"scatter-add", func(be *Backend) backends.View {
			out := allocView(src, f32, 1000)
			be.Scatter(out, idx, vals, 0, true)
			return out
		}},
		{"im2col + col2im", func(be *Backend) backends.View {
			cols := allocView(src, f32, 4, 8*9, 900)
			be.Im2Col(cols, img, geo)
			out := allocView(src, f32, 4, 8, 30, 30)
			be.Col2Im(out, cols, geo)
			return out
		}},
	}
	backendsByWorkers := []*Backend{New(1), New(2), New(3)}
	for _, c := range cases {
		var ref []byte
		for _, be := range backendsByWorkers {
			got := rawSnapshot(c.fn(be))
			if ref == nil {
				ref = got
				continue
			}
			if !bytes.Equal(got, ref) {
				t.Errorf("%s: %d workers differ from 1 worker", c.name, be.Workers())
			}
		}
	}
}

// TestSetWorkersKeepsResults changes the pool size of one backend between
// identical kernels.
func TestSetWorkersKeepsResults(t *testing.T) {
	be := New(1)
	x := randView(be, backends.Float32, 1, 200, 300)
	y := randView(be, backends.Float32, 2, 300, 100)
	var ref []byte
	for _, w := range []int{1, 2, 4, 2, 1} {
		be.SetWorkers(w)
		if be.Workers() != w {
			t.Fatalf("SetWorkers(%d): Workers() = %d", w, be.Workers())
		}
		out := allocView(be, backends.Float32, 200, 100)
		be.Matmul(out, x, y)
		got := rawSnapshot(out)
		if ref == nil {
			ref = got
		} else if !bytes.Equal(got, ref) {
			t.Errorf("%d workers: matmul differs", w)
		}
	}
}

// TestParallelChunks checks the pool's contract directly: every chunk runs
// exactly once, with boundaries that depend only on n and grain, including
// nested calls and concurrent callers.
func TestParallelChunks(t *testing.T) {
	be := New(3)
	for _, c := range []struct{ n, grain int }{{0, 1}, {1, 1}, {10, 3}, {1000, 7}, {100000, 4096}} {
		hits := make([]int32, c.n)
		be.parallel(c.n, c.grain, func(lo, hi int) {
			if lo%c.grain != 0 || hi != min(lo+c.grain, c.n) {
				t.Errorf("chunk [%d,%d) for n=%d grain=%d", lo, hi, c.n, c.grain)
			}
			be.parallel(hi-lo, 2, func(l, h int) { // nested
				for i := lo + l; i < lo+h; i++ {
					hits[i]++
				}
			})
		})
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("n=%d grain=%d: element %d visited %d times", c.n, c.grain, i, h)
			}
		}
	}
	done := make(chan string)
	for g := range 4 {
		go func() {
			total := 0
			var mu = make(chan struct{}, 1)
			be.parallel(5000, 10, func(lo, hi int) {
				mu <- struct{}{}
				total += hi - lo
				<-mu
			})
			done <- fmt.Sprint(g, total)
		}()
	}
	for range 4 {
		if s := <-done; s[len(s)-4:] != "5000" {
			t.Errorf("concurrent caller: %s", s)
		}
	}
}

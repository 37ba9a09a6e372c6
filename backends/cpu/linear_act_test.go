package cpu

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// linearActOps are the activations MatmulBiasAct accepts.
var linearActOps = []backends.UnaryOp{backends.Relu, backends.Gelu, backends.GeluTanh, backends.Silu, backends.Sigmoid, backends.Tanh}

// scaleView multiplies every element of a contiguous float view by s, so
// that products of long rows stay where the activations bend.
func scaleView(v backends.View, s float64) {
	switch v.DType {
	case backends.Float32:
		for i := range buf(v).f32() {
			buf(v).f32()[i] *= float32(s)
		}
	case backends.Float64:
		for i := range buf(v).f64() {
			buf(v).f64()[i] *= s
		}
	}
}

// TestMatmulBiasActIsMatmulBiasThenUnary requires MatmulBiasAct's pre to
// equal MatmulBias and its out to equal Unary of that, bit for bit, for
// every accepted activation: odd shapes (M = 1, 7, 130; N = 1, 17, 1000;
// K = 3, 300, with short K-blocks so that the activation waits for the
// last), w transposed as a linear layer's weight is read, strips and
// shared tiles on 1 and 2 workers (the strips' shared operand packed by
// whichever needs it first, and tiles cut by rows, lazyOwnTiles), with the
// bias in the AVX2 micro-kernel and in a pass of its own.
func TestMatmulBiasActIsMatmulBiasThenUnary(t *testing.T) {
	oldKC, oldBias, oldOwn := gemmKC, biasInKernel, lazyOwnTiles
	defer func() { gemmKC, biasInKernel, lazyOwnTiles = oldKC, oldBias, oldOwn }()
	gemmKC = 64
	type shape struct{ m, k, n int }
	var shapes []shape
	for _, m := range []int{1, 7, 130} {
		for _, n := range []int{1, 17, 1000} {
			for _, k := range []int{3, 300} {
				shapes = append(shapes, shape{m, k, n})
			}
		}
	}
	// strips on two workers; tiles of one product shared by two workers
	// (max(M, N)/workers < stripWidth); an empty K
	shapes = append(shapes, shape{700, 300, 600}, shape{200, 1000, 200}, shape{9, 0, 7})
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		for _, workers := range []int{1, 2} {
			for _, inKernel := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s %d workers bias in kernel %v", dt, workers, inKernel), func(t *testing.T) {
					biasInKernel = inKernel
					lazyOwnTiles = !inKernel // both ways of running a lazily packed strip's tiles
					be := New(workers)
					for _, s := range shapes {
						x := randView(be, dt, 1, s.m, s.k)
						scaleView(x, 1/float64(max(1, s.k/8)))
						w := randView(be, dt, 2, s.n, s.k) // a weight [N, K], read as wᵀ
						w.Shape, w.Strides = []int{s.k, s.n}, []int{1, s.k}
						bias := randView(be, dt, 3, s.n)
						want := allocView(be, dt, s.m, s.n)
						be.MatmulBias(want, x, w, bias)
						for _, op := range linearActOps {
							out, pre, wantOut := allocView(be, dt, s.m, s.n), allocView(be, dt, s.m, s.n), allocView(be, dt, s.m, s.n)
							be.MatmulBiasAct(out, pre, x, w, bias, op)
							be.Unary(op, wantOut, want, 0, 0)
							if err := be.Sync(); err != nil {
								t.Fatal(err)
							}
							if !bytes.Equal(rawSnapshot(pre), rawSnapshot(want)) {
								t.Errorf("%dx%dx%d %s: pre differs from MatmulBias", s.m, s.k, s.n, op)
							}
							if !bytes.Equal(rawSnapshot(out), rawSnapshot(wantOut)) {
								t.Errorf("%dx%dx%d %s: out differs from Unary of MatmulBias", s.m, s.k, s.n, op)
							}
						}
					}
				})
			}
		}
	}
}

// TestMatmulBiasActOffsets runs MatmulBiasAct on views that start inside
// their buffers (out and pre in one buffer, apart), so that the epilogue's
// shift between them is not zero.
func TestMatmulBiasActOffsets(t *testing.T) {
	for _, workers := range []int{1, 2} {
		be := New(workers)
		const m, k, n = 130, 70, 90
		x := randView(be, backends.Float32, 1, m, k)
		scaleView(x, 0.1)
		w := randView(be, backends.Float32, 2, k, n)
		bias := randView(be, backends.Float32, 3, n)
		both := allocView(be, backends.Float32, 2*m*n+5)
		pre := backends.View{Buf: both.Buf, DType: backends.Float32, Shape: []int{m, n}, Strides: []int{n, 1}, Offset: 3}
		out := pre
		out.Offset = 3 + m*n + 2
		be.MatmulBiasAct(out, pre, x, w, bias, backends.Gelu)
		want, wantOut := allocView(be, backends.Float32, m, n), allocView(be, backends.Float32, m, n)
		be.MatmulBias(want, x, w, bias)
		be.Unary(backends.Gelu, wantOut, want, 0, 0)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rawSnapshot(pre), rawSnapshot(want)) || !bytes.Equal(rawSnapshot(out), rawSnapshot(wantOut)) {
			t.Errorf("%d workers: offset views differ from MatmulBias then Unary", workers)
		}
	}
}

// TestMatmulBiasActRefuses checks that MatmulBiasAct refuses, writing
// nothing, activations it does not fuse, mismatched shapes and dtypes, and
// an out that overlaps pre.
func TestMatmulBiasActRefuses(t *testing.T) {
	be := New(1)
	f32, f64 := backends.Float32, backends.Float64
	x, w, bias := randView(be, f32, 1, 4, 3), randView(be, f32, 2, 3, 5), randView(be, f32, 3, 5)
	both := allocView(be, f32, 4*5+1)
	overlapPre := backends.View{Buf: both.Buf, DType: f32, Shape: []int{4, 5}, Strides: []int{5, 1}}
	overlapOut := overlapPre
	overlapOut.Offset = 1
	for _, c := range []struct {
		name, want     string
		out, pre, x, w backends.View
		bias           backends.View
		op             backends.UnaryOp
	}{
		{"exp is not an activation it fuses", "activation exp", allocView(be, f32, 4, 5), allocView(be, f32, 4, 5), x, w, bias, backends.Exp},
		{"leaky relu has a parameter", "activation leaky_relu", allocView(be, f32, 4, 5), allocView(be, f32, 4, 5), x, w, bias, backends.LeakyRelu},
		{"pre of the wrong shape", "", allocView(be, f32, 4, 5), allocView(be, f32, 5, 4), x, w, bias, backends.Gelu},
		{"out of the wrong shape", "out", allocView(be, f32, 4, 6), allocView(be, f32, 4, 5), x, w, bias, backends.Gelu},
		{"bias of the wrong length", "bias", allocView(be, f32, 4, 5), allocView(be, f32, 4, 5), x, w, randView(be, f32, 3, 4), backends.Gelu},
		{"out of another dtype", "out", allocView(be, f64, 4, 5), allocView(be, f32, 4, 5), x, w, bias, backends.Gelu},
		{"x of another dtype", "differ in dtype", allocView(be, f32, 4, 5), allocView(be, f32, 4, 5), randView(be, f64, 1, 4, 3), w, bias, backends.Gelu},
		{"out overlapping pre", "overlap", overlapOut, overlapPre, x, w, bias, backends.Gelu},
	} {
		t.Run(c.name, func(t *testing.T) {
			fillRandom(c.out, 9, false)
			before := rawSnapshot(c.out)
			be.MatmulBiasAct(c.out, c.pre, c.x, c.w, c.bias, c.op)
			err := be.Sync()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one containing %q", err, c.want)
			}
			if !bytes.Equal(rawSnapshot(c.out), before) {
				t.Errorf("out was written")
			}
		})
	}
}

// BenchmarkLinearAct times a GPT feed-forward block's first layer,
// Linear(256 → 1024) then GELU (or ReLU) on [2048, 256] float32, fused
// (MatmulBiasAct) and unfused (MatmulBias then Unary) alternately in every
// iteration, so that both meet the same machine, and reports the best time
// of each and their ratio (unfused ÷ fused: above 1, fusing gains).
func BenchmarkLinearAct(b *testing.B) {
	const m, k, n = 2048, 256, 1024
	for _, c := range []struct {
		name string
		op   backends.UnaryOp
	}{{"gelu", backends.Gelu}, {"relu", backends.Relu}} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("op=%s/threads=%d", c.name, workers), func(b *testing.B) {
				be := New(workers)
				x := randView(be, backends.Float32, 1, m, k)
				scaleView(x, 1.0/16)
				w := randView(be, backends.Float32, 2, n, k)
				w.Shape, w.Strides = []int{k, n}, []int{1, k}
				bias := randView(be, backends.Float32, 3, n)
				out, pre := allocView(be, backends.Float32, m, n), allocView(be, backends.Float32, m, n)
				defer func() { fuseLinearAct = true }()
				run := func(fused bool) time.Duration {
					fuseLinearAct = fused
					start := time.Now()
					be.MatmulBiasAct(out, pre, x, w, bias, c.op)
					return time.Since(start)
				}
				run(true)
				run(false)
				best := [2]time.Duration{time.Hour, time.Hour}
				b.ResetTimer()
				for i := range b.N {
					for _, fused := range []bool{i%2 == 0, i%2 != 0} { // alternate which goes first
						slot := 0
						if !fused {
							slot = 1
						}
						best[slot] = min(best[slot], run(fused))
					}
				}
				b.StopTimer()
				flops := 2.0 * m * n * k
				b.ReportMetric(best[0].Seconds()*1e3, "fused-ms")
				b.ReportMetric(best[1].Seconds()*1e3, "unfused-ms")
				b.ReportMetric(flops/best[0].Seconds()/1e9, "fused-GFLOP/s")
				b.ReportMetric(best[1].Seconds()/best[0].Seconds(), "unfused/fused")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

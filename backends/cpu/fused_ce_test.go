package cpu

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestCrossEntropyParallelRows checks the fused cross-entropy, whose rows
// run in parallel chunks, on a GPT-sized batch of rows: the log-
// probabilities and losses against float64 definitions, the gradient
// against exp(logp)·k − k at the target, and every output bit for bit the
// same on one worker and on three that always share the chunks.
func TestCrossEntropyParallelRows(t *testing.T) {
	const n, c = 700, 97
	f32 := backends.Float32
	run := func(be *Backend) (logp, nll, weight, dx backends.View) {
		x := randView(be, f32, 21, n, c)
		target := allocView(be, backends.Int64, n)
		for i := range buf(target).i64() {
			buf(target).i64()[i] = int64(i*31) % c
		}
		buf(target).i64()[5] = -100 // ignored
		logp, nll, weight = allocView(be, f32, n, c), allocView(be, f32, n), allocView(be, f32, n)
		be.CrossEntropyForward(logp, nll, weight, x, target, -100)
		coef := allocView(be, f32, 1)
		buf(coef).f32()[0] = 0.25
		dx = allocView(be, f32, n, c)
		be.CrossEntropyBackward(dx, logp, weight, target, coef, -100)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		// against the definitions
		xs, ts := buf(x).f32(), buf(target).i64()
		for i := range n {
			row := xs[i*c:][:c]
			m := math.Inf(-1)
			for _, v := range row {
				m = max(m, float64(v))
			}
			var z float64
			for _, v := range row {
				z += math.Exp(float64(v) - m)
			}
			for j, v := range row {
				want := float64(v) - m - math.Log(z)
				if got := float64(buf(logp).f32()[i*c+j]); math.Abs(got-want) > 1e-5 {
					t.Fatalf("logp[%d, %d] = %v, want %v", i, j, got, want)
				}
				g := 0.25 * math.Exp(want)
				if j == int(ts[i]) {
					g -= 0.25
				}
				if i == 5 {
					g = 0
				}
				if got := float64(buf(dx).f32()[i*c+j]); math.Abs(got-g) > 1e-6 {
					t.Fatalf("dx[%d, %d] = %v, want %v", i, j, got, g)
				}
			}
			wantNLL, wantW := 0.0, 0.0
			if i != 5 {
				wantNLL, wantW = -(float64(row[ts[i]]) - m - math.Log(z)), 1
			}
			if got := float64(buf(nll).f32()[i]); math.Abs(got-wantNLL) > 1e-5 || float64(buf(weight).f32()[i]) != wantW {
				t.Fatalf("row %d: loss %v weight %v, want %v and %v", i, got, buf(weight).f32()[i], wantNLL, wantW)
			}
		}
		return logp, nll, weight, dx
	}
	l1, n1, w1, d1 := run(New(1))
	l3, n3, w3, d3 := run(forcedBackend(3, forceParallel))
	for i, pair := range [][2]backends.View{{l1, l3}, {n1, n3}, {w1, w3}, {d1, d3}} {
		if !bytes.Equal(buf(pair[0]).bytes, buf(pair[1]).bytes) {
			t.Errorf("output %d differs between 1 and 3 workers", i)
		}
	}
}

// TestCrossEntropyFirstBadTarget checks that with targets out of range in
// several rows, which parallel chunks find in any order, the error names
// the first of them.
func TestCrossEntropyFirstBadTarget(t *testing.T) {
	const n, c = 900, 10
	f32 := backends.Float32
	be := forcedBackend(3, forceParallel)
	x := randView(be, f32, 22, n, c)
	target := allocView(be, backends.Int64, n)
	for _, i := range []int{850, 612, 300, 299} {
		buf(target).i64()[i] = int64(c + i)
	}
	be.CrossEntropyForward(allocView(be, f32, n, c), allocView(be, f32, n), allocView(be, f32, n), x, target, -100)
	err := be.Sync()
	if err == nil || !strings.Contains(err.Error(), "target 309 of row 299 ") {
		t.Fatalf("error %v, want one naming target 309 of row 299", err)
	}
}

// BenchmarkCrossEntropyRows times the fused cross-entropy, forward and
// backward, on a GPT step's logits ([2048, 1024]) on one worker and on
// two: the rows run in parallel chunks.
func BenchmarkCrossEntropyRows(b *testing.B) {
	const n, c = 2048, 1024
	f32 := backends.Float32
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			be := New(workers)
			x := randView(be, f32, 1, n, c)
			target := allocView(be, backends.Int64, n)
			for i := range buf(target).i64() {
				buf(target).i64()[i] = int64(i*31) % c
			}
			logp, nll, weight, dx := allocView(be, f32, n, c), allocView(be, f32, n), allocView(be, f32, n), allocView(be, f32, n, c)
			coef := allocView(be, f32, 1)
			buf(coef).f32()[0] = 1.0 / n
			b.ResetTimer()
			for range b.N {
				be.CrossEntropyForward(logp, nll, weight, x, target, -100)
				be.CrossEntropyBackward(dx, logp, weight, target, coef, -100)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
		})
	}
}

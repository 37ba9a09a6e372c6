package cpu

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// bnRun runs the fused batch norm forward and backward on x [n, c, s] with
// random parameters and output gradient, and returns every view: x, w, b,
// dy, then y, mean, variance, rstd, dx, dw, db.
func bnRun(be *Backend, dt backends.DType, n, c, s int) []backends.View {
	x, w, bias, dy := randView(be, dt, 1, n, c, s), randView(be, dt, 2, c), randView(be, dt, 3, c), randView(be, dt, 4, n, c, s)
	y, mean, variance, rstd := allocView(be, dt, n, c, s), allocView(be, dt, c), allocView(be, dt, c), allocView(be, dt, c)
	dx, dw, db := allocView(be, dt, n, c, s), allocView(be, dt, c), allocView(be, dt, c)
	be.BatchNormForward(y, mean, variance, rstd, x, w, bias, 1e-5)
	be.BatchNormBackward(dx, dw, db, dy, x, mean, rstd, w)
	return []backends.View{x, w, bias, dy, y, mean, variance, rstd, dx, dw, db}
}

// TestBatchNormMatchesDefinition compares the kernels with batch norm and
// its gradients computed in float64 from their definitions.
func TestBatchNormMatchesDefinition(t *testing.T) {
	be := New(2)
	for _, sz := range [][3]int{{7, 5, 1}, {3, 4, 9}, {2, 3, 17}, {1, 2, 2}, {4, 6, 33}} {
		for _, dt := range []backends.DType{backends.Float64, backends.Float32} {
			n, c, s := sz[0], sz[1], sz[2]
			vs := bnRun(be, dt, n, c, s)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			x, w, bias, dy := snapshot(vs[0]), snapshot(vs[1]), snapshot(vs[2]), snapshot(vs[3])
			m := float64(n * s)
			want := make([][]float64, 7)
			want[0], want[4] = make([]float64, n*c*s), make([]float64, n*c*s)
			for k := 1; k < 7; k++ {
				if k != 4 {
					want[k] = make([]float64, c)
				}
			}
			for ch := range c {
				idx := func(yield func(int) bool) {
					for i := range n {
						for j := range s {
							if !yield((i*c+ch)*s + j) {
								return
							}
						}
					}
				}
				var sum, sq, g, h float64
				for k := range idx {
					sum += x[k]
				}
				mean := sum / m
				for k := range idx {
					sq += (x[k] - mean) * (x[k] - mean)
				}
				variance := sq / m
				rstd := 1 / math.Sqrt(variance+1e-5)
				for k := range idx {
					want[0][k] = (x[k]-mean)*rstd*w[ch] + bias[ch]
					g += dy[k]
					h += dy[k] * (x[k] - mean) * rstd
				}
				for k := range idx {
					xh := (x[k] - mean) * rstd
					want[4][k] = w[ch] * rstd * (dy[k] - g/m - xh*h/m)
				}
				want[1][ch], want[2][ch], want[3][ch], want[5][ch], want[6][ch] = mean, variance, rstd, h, g
			}
			names := []string{"y", "mean", "variance", "rstd", "dx", "dw", "db"}
			tol := 1e-12
			if dt == backends.Float32 {
				tol = 1e-5
			}
			for k, v := range vs[4:] {
				got := snapshot(v)
				for i := range got {
					if math.Abs(got[i]-want[k][i]) > tol*max(1, math.Abs(want[k][i])) {
						t.Fatalf("%v %s: %s[%d] = %v, want %v", sz, dt, names[k], i, got[i], want[k][i])
					}
				}
			}
		}
	}
}

// TestBatchNormIndependentOfWorkers requires bit-identical results from 1,
// 2 and 3 workers, over many channel chunks.
func TestBatchNormIndependentOfWorkers(t *testing.T) {
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		var want [][]byte
		for _, w := range []int{1, 2, 3} {
			be := New(w)
			vs := bnRun(be, dt, 8, 96, 33)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			for i, v := range vs[4:] {
				got := rawSnapshot(v)
				if w == 1 {
					want = append(want, got)
				} else if !bytes.Equal(got, want[i]) {
					t.Fatalf("%s, %d workers: result %d differs from 1 worker's", dt, w, i)
				}
			}
		}
	}
}

// TestBatchNormRefuses checks that bad views are reported, not run.
func TestBatchNormRefuses(t *testing.T) {
	dt := backends.Float32
	cases := []struct {
		name string
		call func(be *Backend)
		want string
	}{
		{"rank", func(be *Backend) {
			be.BatchNormForward(allocView(be, dt, 2, 3), allocView(be, dt, 3), backends.View{}, allocView(be, dt, 3), allocView(be, dt, 2, 3), backends.View{}, backends.View{}, 1e-5)
		}, "[N, C, S]"},
		{"weight shape", func(be *Backend) {
			be.BatchNormForward(allocView(be, dt, 2, 3, 4), allocView(be, dt, 3), backends.View{}, allocView(be, dt, 3), allocView(be, dt, 2, 3, 4), allocView(be, dt, 4), backends.View{}, 1e-5)
		}, "weight"},
		{"dtype", func(be *Backend) {
			be.BatchNormBackward(allocView(be, dt, 2, 3, 4), backends.View{}, backends.View{}, allocView(be, dt, 2, 3, 4), allocView(be, dt, 2, 3, 4), allocView(be, backends.Float64, 3), allocView(be, dt, 3), backends.View{})
		}, "mean"},
		{"missing rstd", func(be *Backend) {
			be.BatchNormBackward(allocView(be, dt, 2, 3, 4), backends.View{}, backends.View{}, allocView(be, dt, 2, 3, 4), allocView(be, dt, 2, 3, 4), allocView(be, dt, 3), backends.View{}, backends.View{})
		}, "required"},
	}
	for _, c := range cases {
		be := New(1)
		c.call(be)
		if err := be.Sync(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// TestBatchNormVectorMatchesGo requires the same bits, every output of the
// forward and backward passes, with the vector loops (where the CPU runs
// them) and with the Go loops, on segments of every length from 1 to 40
// and a few up to 100 (whole vectors, tails, shorter than a vector; a
// channel a call up to bnChannelMaxS).
func TestBatchNormVectorMatchesGo(t *testing.T) {
	if !bnVector {
		t.Skip("no vector batch-norm loops on this machine")
	}
	defer func() { bnVector = true }()
	be := New(1)
	for _, s := range append(seq(1, 40), 60, 64, 68, 100) {
		var want [][]byte
		for _, vec := range []bool{false, true} {
			bnVector = vec
			vs := bnRun(be, backends.Float32, 3, 5, s)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			for i, v := range vs[4:] {
				got := rawSnapshot(v)
				if !vec {
					want = append(want, got)
				} else if !bytes.Equal(got, want[i]) {
					t.Fatalf("S = %d: result %d differs between the vector and the Go loops", s, i)
				}
			}
		}
	}
}

// BenchmarkBatchNorm times the forward and backward passes of ResNet-18's
// batch norms at batch 32 on 64×64 images (one of each shape), float32
// on one worker, with the vector loops and the Go loops in turn,
// reporting the best ms of each.
func BenchmarkBatchNorm(b *testing.B) {
	be, vector := New(1), bnVector
	defer func() { bnVector = vector }()
	dt := backends.Float32
	for _, sh := range [][2]int{{64, 1024}, {64, 256}, {128, 64}, {256, 16}, {512, 4}} {
		n, c, s := 32, sh[0], sh[1]
		b.Run(fmt.Sprintf("c=%d,s=%d", c, s), func(b *testing.B) {
			x, w, bias, dy := randView(be, dt, 1, n, c, s), randView(be, dt, 2, c), randView(be, dt, 3, c), randView(be, dt, 4, n, c, s)
			y, mean, variance, rstd := allocView(be, dt, n, c, s), allocView(be, dt, c), allocView(be, dt, c), allocView(be, dt, c)
			dx, dw, db := allocView(be, dt, n, c, s), allocView(be, dt, c), allocView(be, dt, c)
			best := [2]time.Duration{time.Hour, time.Hour}
			for i := 0; b.Loop(); i++ {
				for j := range 2 {
					v := (i + j) % 2
					bnVector = v == 0 && vector
					t0 := time.Now()
					be.BatchNormForward(y, mean, variance, rstd, x, w, bias, 1e-5)
					be.BatchNormBackward(dx, dw, db, dy, x, mean, rstd, w)
					best[v] = min(best[v], time.Since(t0))
				}
			}
			b.ReportMetric(float64(best[0])/1e6, "vector-ms")
			b.ReportMetric(float64(best[1])/1e6, "go-ms")
		})
	}
}

// seq returns lo, lo+1, …, hi.
func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

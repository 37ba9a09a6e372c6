package cpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// normRun runs a layer norm (rms false) or RMS norm forward and backward
// on be over x [rows, n] with weight and bias, returning every output.
func normRun(be *Backend, dt backends.DType, rows, n int, rms bool) []backends.View {
	x := randView(be, dt, 1, rows, n)
	w, bias := randView(be, dt, 2, n), randView(be, dt, 3, n)
	dy := randView(be, dt, 4, rows, n)
	y, mean, rstd := allocView(be, dt, rows, n), allocView(be, dt, rows), allocView(be, dt, rows)
	dx, dw, db := allocView(be, dt, rows, n), allocView(be, dt, n), allocView(be, dt, n)
	if rms {
		be.RMSNormForward(y, rstd, x, w, 1e-6)
		be.RMSNormBackward(dx, dw, dy, x, rstd, w)
		return []backends.View{x, w, dy, y, rstd, dx, dw}
	}
	be.LayerNormForward(y, mean, rstd, x, w, bias, 1e-5)
	be.LayerNormBackward(dx, dw, db, dy, x, mean, rstd, w)
	return []backends.View{x, w, dy, y, mean, rstd, dx, dw, db}
}

// TestNormMatchesDefinition checks the fused norms against their
// definitions computed in float64 (forward and every gradient).
func TestNormMatchesDefinition(t *testing.T) {
	for _, kern := range normF32Kernels {
		t.Run(kern.name, func(t *testing.T) {
			defer useNormF32(kern)()
			testNormMatchesDefinition(t)
		})
	}
}

// useNormF32 makes the float32 norms use kern's row kernels and returns
// the function that restores the default.
func useNormF32(kern normF32Kernel) (restore func()) {
	row, grad := normRowF32, normGradRowF32
	normRowF32, normGradRowF32 = kern.row, kern.grad
	return func() { normRowF32, normGradRowF32 = row, grad }
}

func testNormMatchesDefinition(t *testing.T) {
	be := New(2)
	for _, rms := range []bool{false, true} {
		// every tail length of the vector kernels' 16-float steps
		for _, sz := range [][2]int{{70, 37}, {40, 512}, {3, 1}, {3, 7}, {3, 8}, {3, 9}, {3, 15}, {3, 16}, {5, 24}, {5, 31}, {16, 3}} {
			for _, dt := range []backends.DType{backends.Float64, backends.Float32} {
				rows, n := sz[0], sz[1]
				vs := normRun(be, dt, rows, n, rms)
				if err := be.Sync(); err != nil {
					t.Fatal(err)
				}
				x, w, dy := snapshot(vs[0]), snapshot(vs[1]), snapshot(vs[2])
				eps := 1e-5
				if rms {
					eps = 1e-6
				}
				bias := make([]float64, n)
				if !rms {
					bias = snapshot(randView(be, dt, 3, n))
				}
				wy, wdx, wdw, wdb := make([]float64, rows*n), make([]float64, rows*n), make([]float64, n), make([]float64, n)
				for r := range rows {
					row := x[r*n : (r+1)*n]
					var mean, v float64
					for _, e := range row {
						mean += e / float64(n)
					}
					if rms {
						mean = 0
					}
					for _, e := range row {
						v += (e - mean) * (e - mean) / float64(n)
					}
					rstd := 1 / math.Sqrt(v+eps)
					var mg, mgx float64
					for i, e := range row {
						xh := (e - mean) * rstd
						wy[r*n+i] = xh*w[i] + bias[i]
						g := dy[r*n+i] * w[i]
						mg += g / float64(n)
						mgx += g * xh / float64(n)
						wdw[i] += dy[r*n+i] * xh
						wdb[i] += dy[r*n+i]
					}
					if rms {
						mg = 0
					}
					for i, e := range row {
						xh := (e - mean) * rstd
						wdx[r*n+i] = rstd * (dy[r*n+i]*w[i] - mg - xh*mgx)
					}
				}
				tol := 1e-12
				if dt == backends.Float32 {
					tol = 1e-5
				}
				checks := []struct {
					name string
					got  backends.View
					want []float64
				}{{"y", vs[3], wy}, {"dx", vs[len(vs)-3+boolInt(rms)], wdx}, {"dw", vs[len(vs)-2+boolInt(rms)], wdw}}
				if !rms {
					checks = append(checks, struct {
						name string
						got  backends.View
						want []float64
					}{"db", vs[8], wdb})
				}
				for _, c := range checks {
					for i, g := range snapshot(c.got) {
						if math.Abs(g-c.want[i]) > tol*(1+math.Abs(c.want[i])) {
							t.Fatalf("rms %v %s n=%d: %s[%d] = %v, want %v", rms, dt, n, c.name, i, g, c.want[i])
						}
					}
				}
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestNormIndependentOfWorkers requires bit-identical results from 1, 2
// and 3 workers, over many chunks of rows.
func TestNormIndependentOfWorkers(t *testing.T) {
	for _, kern := range normF32Kernels {
		t.Run(kern.name, func(t *testing.T) {
			defer useNormF32(kern)()
			testNormIndependentOfWorkers(t)
		})
	}
}

func testNormIndependentOfWorkers(t *testing.T) {
	for _, rms := range []bool{false, true} {
		var want [][]byte
		for _, w := range []int{1, 2, 3} {
			be := New(w)
			vs := normRun(be, backends.Float32, 1000, 64, rms)
			for i, v := range vs[3:] {
				got := rawSnapshot(v)
				if w == 1 {
					want = append(want, got)
				} else if !bytes.Equal(got, want[i]) {
					t.Fatalf("rms %v, %d workers: result %d differs from 1 worker's", rms, w, i)
				}
			}
		}
	}
}

// TestEmbeddingBackward checks the fused embedding gradient against a
// direct sum (bit for bit: the same additions in the same order), with
// repeated, negative and skipped rows, and refuses indices out of range.
func TestEmbeddingBackward(t *testing.T) {
	for _, w := range []int{1, 3} {
		be := New(w)
		v, d, m := 40, 5, 300
		dy := randView(be, backends.Float32, 1, m, d)
		idx := allocView(be, backends.Int64, m)
		for i := range buf(idx).i64() {
			buf(idx).i64()[i] = int64(i*i%31) - 3
		}
		dw := randView(be, backends.Float32, 2, v, d) // overwritten
		be.EmbeddingBackward(dw, dy, idx, 7)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, v*d)
		g := buf(dy).f32()
		for i, r := range buf(idx).i64() {
			if r < 0 {
				r += int64(v)
			}
			if r == 7 {
				continue
			}
			for j := range d {
				want[int(r)*d+j] += g[i*d+j]
			}
		}
		for i, x := range buf(dw).f32() {
			if x != want[i] {
				t.Fatalf("%d workers: dw[%d] = %v, want %v", w, i, x, want[i])
			}
		}
		buf(idx).i64()[5] = int64(v)
		be.EmbeddingBackward(dw, dy, idx, -1)
		if err := be.Sync(); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("index %d of %d rows: error %v, want out of range", v, v, err)
		}
	}
}

// TestAdamStepsIndependentOfWorkers requires bit-identical updates from 1,
// 2 and 3 workers, for parameters spanning and sharing chunks, and refuses
// mismatched lists.
func TestAdamStepsIndependentOfWorkers(t *testing.T) {
	sizes := []int{3, 100000, 17, 40000}
	var want [][]byte
	for _, w := range []int{1, 2, 3} {
		be := New(w)
		var ps, gs, ms, vs []backends.View
		var hs []backends.AdamHyper
		for i, n := range sizes {
			ps = append(ps, randView(be, backends.Float32, uint64(i), n))
			gs = append(gs, randView(be, backends.Float32, uint64(10+i), n))
			ms = append(ms, randView(be, backends.Float32, uint64(20+i), n))
			vs = append(vs, allocView(be, backends.Float32, n))
			for j := range buf(vs[i]).f32() {
				buf(vs[i]).f32()[j] = float32(j%7) * 0.01
			}
			hs = append(hs, backends.AdamHyper{Decay: 0.999, Beta1: 0.9, Beta2: 0.999, InvDenom: -300, EpsTerm: -1e-5,
				MovesParam: true, First: i == 2})
		}
		be.AdamSteps(ps, gs, ms, vs, hs)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := range ps {
			for k, v := range []backends.View{ps[i], ms[i], vs[i]} {
				got := rawSnapshot(v)
				if w == 1 {
					want = append(want, got)
				} else if !bytes.Equal(got, want[3*i+k]) {
					t.Fatalf("%d workers: parameter %d view %d differs from 1 worker's", w, i, k)
				}
			}
		}
		be.AdamSteps(ps, gs[:1], ms, vs, hs)
		if err := be.Sync(); err == nil {
			t.Errorf("mismatched lists accepted")
		}
	}
}

// BenchmarkLayerNorm times the fused layer norm forward and backward over
// a GPT layer's activations (2048 rows of 256), reporting GB/s of the
// rows read and written (x and y forward; dy, x and dx backward).
func BenchmarkLayerNorm(b *testing.B) {
	be := New(0)
	rows, n := 2048, 256
	x, w, bias, dy := randView(be, backends.Float32, 1, rows, n), randView(be, backends.Float32, 2, n),
		randView(be, backends.Float32, 3, n), randView(be, backends.Float32, 4, rows, n)
	y, mean, rstd := allocView(be, backends.Float32, rows, n), allocView(be, backends.Float32, rows), allocView(be, backends.Float32, rows)
	dx, dw, db := allocView(be, backends.Float32, rows, n), allocView(be, backends.Float32, n), allocView(be, backends.Float32, n)
	for _, pass := range []string{"forward", "backward"} {
		b.Run(pass, func(b *testing.B) {
			c0 := cpuSeconds()
			for range b.N {
				if pass == "forward" {
					be.LayerNormForward(y, mean, rstd, x, w, bias, 1e-5)
				} else {
					be.LayerNormBackward(dx, dw, db, dy, x, mean, rstd, w)
				}
			}
			bytes := float64(rows*n*4*2) * float64(b.N)
			if pass == "backward" {
				bytes *= 1.5
			}
			b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(c/float64(b.N)*1e6, "cpu-µs/op")
			}
		})
	}
}

// TestEmbeddingForward checks the row-copy lookup and refuses indices out
// of range.
func TestEmbeddingForward(t *testing.T) {
	be := New(2)
	w := randView(be, backends.Float64, 1, 10, 3)
	idx := allocView(be, backends.Int64, 4)
	copy(buf(idx).i64(), []int64{9, -10, 3, 3})
	out := allocView(be, backends.Float64, 4, 3)
	be.EmbeddingForward(out, w, idx)
	ws, os := buf(w).f64(), buf(out).f64()
	for p, r := range []int{9, 0, 3, 3} {
		for j := range 3 {
			if os[p*3+j] != ws[r*3+j] {
				t.Fatalf("out[%d][%d] = %v, want row %d's %v", p, j, os[p*3+j], r, ws[r*3+j])
			}
		}
	}
	buf(idx).i64()[1] = -11
	be.EmbeddingForward(out, w, idx)
	if err := be.Sync(); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("index -11 of 10 rows: error %v, want out of range", err)
	}
}

// TestNormVectorKernelsAgree requires every vector implementation of the
// float32 rows to give the bits the one in use gives (the AVX2 kernels
// mirror the AVX-512 ones operation for operation), over every tail
// length, forward and backward, layer and RMS norm. Where the CPU has only
// one vector implementation it compares it with itself.
func TestNormVectorKernelsAgree(t *testing.T) {
	want := normF32Kernels[len(normF32Kernels)-1]
	r := rand.New(rand.NewPCG(8, 8))
	vec := func(n int, lo, hi float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(lo + (hi-lo)*r.Float64())
		}
		return v
	}
	for _, kern := range normF32Kernels[1:] {
		for n := 1; n < 70; n++ {
			for _, rms := range []bool{false, true} {
				x, w, b, dy := vec(n, 2, 5), vec(n, -1, 1), vec(n, -1, 1), vec(n, -1, 1)
				var outs [2][][]float32
				var stats [2][]float32
				for i, k := range []normF32Kernel{kern, want} {
					y := make([]float32, n)
					mean, rstd := k.row(y, x, w, b, 1e-5, rms)
					dx, xh, pw, pb := make([]float32, n), make([]float32, n), vec(n, 0, 1), vec(n, 0, 1)
					copy(pw, x) // the same starting partials for both
					copy(pb, w)
					k.grad(dx, xh, dy, x, w, pw, pb, mean, rstd, rms)
					outs[i], stats[i] = [][]float32{y, dx, xh, pw, pb}, []float32{mean, rstd}
				}
				if !kernelsAgree(t, kern.name, want.name, append(outs[0], stats[0]), append(outs[1], stats[1])) {
					t.Fatalf("%s and %s differ at n=%d, rms %v: outputs %v, %v (stats %v, %v)",
						kern.name, want.name, n, rms, outs[0], outs[1], stats[0], stats[1])
				}
			}
		}
	}
}

// BenchmarkNormRowKernels times a layer norm forward and backward pass of
// [2048, 256] float32 rows (a GPT step's) on one worker with each
// implementation of the rows, to compare them in one run.
func BenchmarkNormRowKernels(b *testing.B) {
	be := New(1)
	const rows, n = 2048, 256
	dt := backends.Float32
	x, w, bias, dy := randView(be, dt, 1, rows, n), randView(be, dt, 2, n), randView(be, dt, 3, n), randView(be, dt, 4, rows, n)
	y, mean, rstd := allocView(be, dt, rows, n), allocView(be, dt, rows), allocView(be, dt, rows)
	dx, dw, db := allocView(be, dt, rows, n), allocView(be, dt, n), allocView(be, dt, n)
	for _, kern := range normF32Kernels {
		b.Run(kern.name, func(b *testing.B) {
			defer useNormF32(kern)()
			for range b.N {
				be.LayerNormForward(y, mean, rstd, x, w, bias, 1e-5)
				be.LayerNormBackward(dx, dw, db, dy, x, mean, rstd, w)
			}
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)*rows*n/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}

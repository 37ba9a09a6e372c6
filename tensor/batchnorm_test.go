package tensor_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// bnDefinition returns batch norm's output, mean and biased variance of x
// [N, C, S…] (row-major values) in float64, straight from the definition.
func bnDefinition(x []float64, shape []int, w, b []float64, eps float64) (y, mean, variance []float64) {
	n, c := shape[0], shape[1]
	s := len(x) / (n * c)
	mean, variance = make([]float64, c), make([]float64, c)
	y = make([]float64, len(x))
	for ch := range c {
		var sum float64
		for i := range n {
			for j := range s {
				sum += x[(i*c+ch)*s+j]
			}
		}
		m := sum / float64(n*s)
		var sq float64
		for i := range n {
			for j := range s {
				d := x[(i*c+ch)*s+j] - m
				sq += d * d
			}
		}
		v := sq / float64(n*s)
		mean[ch], variance[ch] = m, v
		for i := range n {
			for j := range s {
				k := (i*c+ch)*s + j
				y[k] = (x[k]-m)/math.Sqrt(v+eps)*w[ch] + b[ch]
			}
		}
	}
	return y, mean, variance
}

// TestBatchNormDefinition compares the output and statistics of BatchNorm
// in float32 and float64 with the float64 definition, for 1-d and 2-d
// layouts and channels far from zero.
func TestBatchNormDefinition(t *testing.T) {
	for _, shape := range [][]int{{9, 4}, {3, 5, 7}, {2, 3, 5, 3}, {4, 2, 1, 1}} {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				c := shape[1]
				x := randFloat64(dev, 1, -3, 3, shape...).AddScalar(50)
				w := randFloat64(dev, 2, 0.5, 1.5, c)
				b := randFloat64(dev, 3, -1, 1, c)
				wantY, wantMean, wantVar := bnDefinition(x.Float64s(), shape, w.Float64s(), b.Float64s(), 1e-5)
				y, mean, variance := x.To(dt).BatchNorm(w.To(dt), b.To(dt), 1e-5)
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 2e-5 // x near 50 is stored to 4e-6
				}
				if y.DType() != dt || mean.DType() != dt {
					t.Fatalf("%v %s: dtypes %s, %s", shape, dt, y.DType(), mean.DType())
				}
				assertValues(t, "y", y, shape, wantY, tol, tol)
				assertValues(t, "mean", mean, []int{c}, wantMean, tol, tol)
				assertValues(t, "variance", variance, []int{c}, wantVar, tol, tol)
			})
		}
	}
}

// TestBatchNormGradients checks the backward by finite differences for each
// combination of parameters, 1-d and 2-d layouts and a permuted input.
func TestBatchNormGradients(t *testing.T) {
	bn := func(in []*tensor.Tensor, w, b *tensor.Tensor) *tensor.Tensor {
		y, _, _ := in[0].BatchNorm(w, b, 1e-5)
		return y
	}
	runGradCases(t, []gradCase{
		{"affine 2d", func(in []*tensor.Tensor) *tensor.Tensor { return bn(in, in[1], in[2]) }, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 2, 3, 2, 3), randFloat64(d, 2, 0.5, 1.5, 3), randFloat64(d, 3, -1, 1, 3)}
		}},
		{"affine 1d features", func(in []*tensor.Tensor) *tensor.Tensor { return bn(in, in[1], in[2]) }, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 5, 3), randFloat64(d, 2, 0.5, 1.5, 3), randFloat64(d, 3, -1, 1, 3)}
		}},
		{"weight only 1d sequence", func(in []*tensor.Tensor) *tensor.Tensor { return bn(in, in[1], nil) }, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 2, 4, 3), randFloat64(d, 2, 0.5, 1.5, 4)}
		}},
		{"bias only", func(in []*tensor.Tensor) *tensor.Tensor { return bn(in, nil, in[1]) }, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 3, 2, 5), randFloat64(d, 3, -1, 1, 2)}
		}},
		{"plain", func(in []*tensor.Tensor) *tensor.Tensor { return bn(in, nil, nil) }, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 3, 2, 2, 2)}
		}},
		{"permuted input", func(in []*tensor.Tensor) *tensor.Tensor {
			return bn([]*tensor.Tensor{in[0].Permute(0, 3, 1, 2)}, in[1], in[2])
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 2, 3, 2, 3), randFloat64(d, 2, 0.5, 1.5, 3), randFloat64(d, 3, -1, 1, 3)}
		}},
	})
}

// TestBatchNormGraph checks the single node and its inputs where the
// backend fuses batch normalisation (a backend without BatchNormFusion,
// such as a remote device, records the composed ops instead), and that the
// statistics are outside the graph.
func TestBatchNormGraph(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.FromFloat32s(ad, []float32{1, 2, 3, 5, 3, 4, 7, 9}, 2, 2, 2).RequireGrad()
		w := tensor.Ones(ad, 2).RequireGrad()
		b := tensor.Zeros(ad, 2).RequireGrad()
		y, mean, variance := x.BatchNorm(w, b, 0)
		n := y.Node()
		_, fused := dev.Backend().(backends.BatchNormFusion)
		if fused && (n == nil || n.Op != "batch_norm" || len(n.Inputs) != 3 || n.Inputs[1] != w.Node() || n.Inputs[2] != b.Node()) {
			t.Fatalf("node %+v, want one batch_norm node on x, w, b", n)
		}
		if !fused && (n == nil || n.Op == "batch_norm") {
			t.Fatalf("node %+v, want the composed ops on a backend without BatchNormFusion", n)
		}
		if mean.RequiresGrad() || variance.RequiresGrad() {
			t.Errorf("the statistics require gradients")
		}
		// channel 0 holds 1, 2, 3, 4; channel 1 holds 3, 5, 7, 9
		assertValues(t, "mean", mean, []int{2}, []float64{2.5, 6}, 1e-6, 1e-6)
		assertValues(t, "variance", variance, []int{2}, []float64{1.25, 5}, 1e-6, 1e-6)
		grads := y.Sum().Backward()
		// Σ x̂ = 0 per channel, so dw = 0 and dx = 0; db counts the values
		assertValues(t, "dw", grads.Get(w), []int{2}, []float64{0, 0}, 0, 1e-5)
		assertValues(t, "db", grads.Get(b), []int{2}, []float64{4, 4}, 0, 0)
		assertValues(t, "dx", grads.Get(x), []int{2, 2, 2}, make([]float64, 8), 0, 1e-5)
	})
}

// TestBatchNormBadInput checks the errors for shapes, dtypes and arguments.
func TestBatchNormBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev, 2, 3, 4)
		w4 := tensor.Ones(dev, 4)
		const op = "tensor.BatchNorm"
		cases := []struct {
			name string
			call func()
			kind error
			want []string
		}{
			{"rank 1", func() { w4.BatchNorm(nil, nil, 1e-5) }, tensor.ErrShape, []string{"[4]"}},
			{"weight shape", func() { x.BatchNorm(w4, nil, 1e-5) }, tensor.ErrShape, []string{"weight [4]", "3 channels"}},
			{"bias shape", func() { x.BatchNorm(nil, w4, 1e-5) }, tensor.ErrShape, []string{"bias [4]"}},
			{"int input", func() { tensor.FromInt64s(dev, []int64{1, 2}, 2, 1).BatchNorm(nil, nil, 1e-5) }, tensor.ErrDType, []string{"int64"}},
			{"negative eps", func() { x.BatchNorm(nil, nil, -1) }, tensor.ErrArgument, []string{"eps"}},
		}
		for _, c := range cases {
			actExpectError(t, c.name, c.call, c.kind, op, c.want...)
		}
	})
}

// TestBatchNormFusionDevice checks BatchNorm on the lazy fusion device, whose
// pending element-wise group must be flushed before the fused kernel reads
// its input: results and gradients equal the plain CPU's.
func TestBatchNormFusionDevice(t *testing.T) {
	run := func(dev tensor.Device) [][]float64 {
		var out [][]float64
		tensor.Scope(func() {
			ad := dev.Autodiff()
			x := tensor.FromFloat64s(ad, randFloat64(tensor.CPU(), 1, -2, 2, 3, 4, 5).Float64s(), 3, 4, 5).To(tensor.Float32).RequireGrad()
			w := tensor.FromFloat64s(ad, randFloat64(tensor.CPU(), 2, 0.5, 1.5, 4).Float64s(), 4).To(tensor.Float32).RequireGrad()
			// a pending element-wise group feeds the kernel and consumes its output
			y, mean, variance := x.MulScalar(2).AddScalar(1).BatchNorm(w, nil, 1e-5)
			grads := y.Relu().MulScalar(3).Sum().Backward()
			for _, r := range []*tensor.Tensor{y, mean, variance, grads.Get(x), grads.Get(w)} {
				out = append(out, r.Float64s())
			}
		})
		return out
	}
	want, got := run(tensor.CPU()), run(tensor.CPU().Fused())
	for i := range want {
		for j := range want[i] {
			if math.Abs(want[i][j]-got[i][j]) > 1e-6 {
				t.Fatalf("result %d element %d: %v on the fusion device, %v on the CPU", i, j, got[i][j], want[i][j])
			}
		}
	}
}

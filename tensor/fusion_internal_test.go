package tensor

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// fusedAndComposed runs f once with the backends' fused kernels and once
// composed from primitives, on the CPU and the strict device, and returns
// the flattened results of each run.
func fusedAndComposed(t *testing.T, f func(dev Device) []*Tensor) {
	t.Helper()
	fusedAndComposedWithin(t, nil, f)
}

// fusedAndComposedWithin is fusedAndComposed with a relative tolerance per
// result (nil or a missing entry: exact).
func fusedAndComposedWithin(t *testing.T, tol []float64, f func(dev Device) []*Tensor) {
	t.Helper()
	for _, name := range []string{"cpu", "strict"} {
		dev, err := ParseDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		run := func(compose bool) [][]float64 {
			composeOnly.Store(compose)
			defer composeOnly.Store(false)
			var out [][]float64
			Scope(func() {
				for _, r := range f(dev.Autodiff()) {
					out = append(out, r.Float64s())
				}
			})
			if err := dev.Sync(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return out
		}
		want, got := run(true), run(false)
		for i := range want {
			if len(want[i]) != len(got[i]) {
				t.Fatalf("%s: result %d has %d values fused, %d composed", name, i, len(got[i]), len(want[i]))
			}
			scale := 0.0
			for _, w := range want[i] {
				scale = math.Max(scale, math.Abs(w))
			}
			eps := 0.0
			if i < len(tol) {
				eps = tol[i] * math.Max(scale, 1)
			}
			for j := range want[i] {
				w, g := want[i][j], got[i][j]
				if math.Abs(w-g) > eps && !(math.IsNaN(w) && math.IsNaN(g)) {
					t.Fatalf("%s: result %d element %d: fused %v, composed %v", name, i, j, g, w)
				}
			}
		}
	}
}

func TestFusedMaxPoolMatchesComposed(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name  string
		shape []int
		cfg   PoolConfig
		edit  func([]float64)
	}{
		{"2x2 stride 2", []int{2, 3, 8, 6}, PoolConfig{Kernel: []int{2}}, nil},
		{"2x2 odd sizes", []int{1, 2, 7, 5}, PoolConfig{Kernel: []int{2}}, nil},
		{"2x2 ceil mode", []int{1, 2, 7, 5}, PoolConfig{Kernel: []int{2}, CeilMode: true}, nil},
		{"3x3 stride 1 overlapping", []int{2, 2, 6, 7}, PoolConfig{Kernel: []int{3}, Stride: []int{1}}, nil},
		{"3x3 padded strided", []int{1, 3, 9, 9}, PoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}}, nil},
		{"dilated", []int{1, 2, 9, 8}, PoolConfig{Kernel: []int{2, 3}, Stride: []int{1, 2}, Dilation: []int{2}}, nil},
		{"ties", []int{1, 2, 6, 6}, PoolConfig{Kernel: []int{2}}, func(v []float64) {
			for i := range v {
				v[i] = math.Floor(float64(i%5) / 2) // runs of equal values along rows and columns
			}
		}},
		{"constant", []int{1, 2, 5, 5}, PoolConfig{Kernel: []int{2}, Stride: []int{1}}, func(v []float64) {
			for i := range v {
				v[i] = 1
			}
		}},
		{"NaN", []int{1, 1, 6, 6}, PoolConfig{Kernel: []int{2}}, func(v []float64) { v[3], v[14], v[20] = nan, nan, nan }},
		{"signed zeros, infinities, negative NaN", []int{1, 2, 6, 6}, PoolConfig{Kernel: []int{2}}, func(v []float64) {
			negNaN, negZero := math.Float64frombits(0xfff8000000000000), math.Copysign(0, -1)
			for i := range v {
				v[i] = []float64{negZero, 0, math.Inf(-1), -1, negZero, math.Inf(1), 0, negNaN, -3}[i%9]
			}
		}},
		{"NaN overlapping", []int{1, 1, 6, 6}, PoolConfig{Kernel: []int{3}, Stride: []int{1}}, func(v []float64) { v[7] = nan }},
	}
	for _, dtype := range []DType{Float32, Float64} {
		for _, c := range cases {
			t.Run(c.name+"/"+dtype.String(), func(t *testing.T) {
				fusedAndComposed(t, func(dev Device) []*Tensor {
					dev.Seed(3)
					x := Randn(dev, c.shape...)
					if c.edit != nil {
						v := x.Float64s()
						c.edit(v)
						x = FromFloat64s(dev, v, c.shape...)
					}
					x = x.To(dtype).RequireGrad()
					vals, idx := MaxPool2d(x, c.cfg)
					g := Randn(dev, vals.Shape()...).To(dtype)
					grads := vals.Mul(g).Sum().Backward()
					return []*Tensor{vals, idx, grads.Get(x)}
				})
			})
		}
	}
}

func TestFusedConvMatchesComposed(t *testing.T) {
	cases := []struct {
		name   string
		x, w   []int
		cfg    ConvConfig
		conv1d bool
	}{
		{"3x3 valid", []int{4, 3, 9, 8}, []int{5, 3, 3, 3}, ConvConfig{}, false},
		{"MNIST conv1 batch 17", []int{17, 1, 12, 12}, []int{4, 1, 3, 3}, ConvConfig{}, false},
		{"valid, uneven window, batch 9", []int{9, 5, 8, 11}, []int{6, 5, 2, 4}, ConvConfig{}, false},
		{"padded", []int{3, 2, 7, 6}, []int{4, 2, 3, 3}, ConvConfig{Padding: []int{1}}, false},
		{"stride 2", []int{3, 2, 9, 9}, []int{3, 2, 3, 3}, ConvConfig{Stride: []int{2}, Padding: []int{1}}, false},
		{"dilation", []int{2, 2, 10, 9}, []int{3, 2, 3, 2}, ConvConfig{Dilation: []int{2, 3}}, false},
		{"1x1", []int{5, 6, 4, 4}, []int{3, 6, 1, 1}, ConvConfig{}, false},
		{"same even kernel", []int{2, 2, 6, 7}, []int{2, 2, 4, 2}, ConvConfig{PaddingMode: "same"}, false},
		{"stride wider than kernel", []int{2, 1, 11, 11}, []int{2, 1, 2, 2}, ConvConfig{Stride: []int{3}}, false},
		{"groups fall back", []int{2, 4, 6, 6}, []int{4, 2, 3, 3}, ConvConfig{Groups: 2}, false},
		{"conv1d", []int{3, 4, 20}, []int{5, 4, 3}, ConvConfig{Stride: []int{2}, Padding: []int{2}}, true},
	}
	for _, dtype := range []DType{Float32, Float64} {
		tol := 1e-5
		if dtype == Float64 {
			tol = 1e-12
		}
		for _, c := range cases {
			t.Run(c.name+"/"+dtype.String(), func(t *testing.T) {
				// The forward pass is the same sums in the same order:
				// exact. Gradients sum over the batch in another order.
				fusedAndComposedWithin(t, []float64{0, tol, tol, tol}, func(dev Device) []*Tensor {
					dev.Seed(5)
					x := Randn(dev, c.x...).To(dtype).RequireGrad()
					w := Randn(dev, c.w...).To(dtype).RequireGrad()
					bias := Randn(dev, c.w[0]).To(dtype).RequireGrad()
					conv := Conv2d
					if c.conv1d {
						conv = Conv1d
					}
					y := conv(x, w, bias, c.cfg)
					g := Randn(dev, y.Shape()...).To(dtype)
					grads := y.Mul(g).Sum().Backward()
					return []*Tensor{y, grads.Get(x), grads.Get(w), grads.Get(bias)}
				})
			})
		}
	}
}

func TestFusedConvTransposeMatchesComposed(t *testing.T) {
	fusedAndComposedWithin(t, []float64{1e-5, 1e-5, 1e-5}, func(dev Device) []*Tensor {
		dev.Seed(6)
		x := Randn(dev, 3, 4, 5, 5).RequireGrad()
		w := Randn(dev, 4, 2, 3, 3).RequireGrad()
		y := ConvTranspose2d(x, w, nil, ConvTransposeConfig{Stride: []int{2}, Padding: []int{1}, OutputPadding: []int{1}})
		g := Randn(dev, y.Shape()...)
		grads := y.Mul(g).Sum().Backward()
		return []*Tensor{y, grads.Get(x), grads.Get(w)}
	})
}

func TestFusedAdamMatchesComposed(t *testing.T) {
	cases := []struct {
		name string
		cfg  AdamConfig
	}{
		{"adam", AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}},
		{"adam L2", AdamConfig{LR: 3e-3, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1}},
		{"adamw", AdamConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.05, Decoupled: true}},
		{"maximize", AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Maximize: true, Decoupled: true, WeightDecay: 0.01}},
		{"zero rate", AdamConfig{LR: 0, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true}},
	}
	for _, dtype := range []DType{Float32, Float64} {
		for _, c := range cases {
			for _, inPlace := range []bool{false, true} {
				name := c.name + "/" + dtype.String()
				if inPlace {
					name += "/in place"
				}
				t.Run(name, func(t *testing.T) {
					fusedAndComposed(t, func(dev Device) []*Tensor {
						dev = dev.NoGrad()
						dev.Seed(9)
						p := Randn(dev, 37, 29).To(dtype)
						var st AdamState
						var out []*Tensor
						for step := 1; step <= 4; step++ {
							g := Randn(dev, 37, 29).To(dtype).MulScalar(float64(step))
							cfg := c.cfg
							cfg.Step, cfg.InPlace = step, inPlace
							next, nst := AdamStep(p, g, st, cfg)
							if inPlace && next != p {
								t.Fatalf("step %d in place returned a new parameter tensor", step)
							}
							p, st = next, nst
							// copies: in place, later steps overwrite these tensors
							out = append(out, p.MulScalar(1), st.ExpAvg.MulScalar(1), st.ExpAvgSq.MulScalar(1))
						}
						return out
					})
				})
			}
		}
	}
}

func TestFusedCrossEntropyMatchesComposed(t *testing.T) {
	for _, dtype := range []DType{Float32, Float64} {
		for _, reduction := range []string{"mean", "sum", "none"} {
			for _, shape := range [][]int{{7, 10}, {33, 3}, {5, 1}, {1, 200}} {
				name := fmt.Sprintf("%s/%s/%v", dtype, reduction, shape)
				t.Run(name, func(t *testing.T) {
					fusedAndComposed(t, func(dev Device) []*Tensor {
						dev.Seed(11)
						n, c := shape[0], shape[1]
						x := Randn(dev, n, c).MulScalar(4).To(dtype).RequireGrad()
						targets := make([]int64, n)
						for i := range targets {
							targets[i] = int64((i * 7) % c)
						}
						ignore := 2
						if n > 2 {
							targets[1] = int64(ignore) // an ignored row (a valid class too when c > 2)
						}
						y := FromInt64s(dev, targets, n)
						loss := CrossEntropyFromLogits(x, y, CrossEntropyOptions{Reduction: reduction, IgnoreIndex: &ignore})
						g := Randn(dev, loss.Shape()...).To(dtype)
						grads := loss.Mul(g).Sum().Backward()
						return []*Tensor{loss, grads.Get(x)}
					})
				})
			}
		}
	}
}

func TestFusedCrossEntropyTargetOutOfRange(t *testing.T) {
	for _, bad := range []int64{-1, 10} {
		dev := CPU()
		x := Randn(dev, 4, 10)
		y := FromInt64s(dev, []int64{1, bad, 3, 4}, 4)
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%v", r)
				}
			}()
			CrossEntropyFromLogits(x, y, CrossEntropyOptions{}).Item()
			return dev.Sync()
		}()
		if err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("target %d: error %v, want one saying it is out of range", bad, err)
		}
	}
}

package tensor

import (
	"math"
	"testing"
)

// fusedAndComposed runs f once with the backends' fused kernels and once
// composed from primitives, on the CPU and the strict device, and returns
// the flattened results of each run.
func fusedAndComposed(t *testing.T, f func(dev Device) []*Tensor) {
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
			for j := range want[i] {
				w, g := want[i][j], got[i][j]
				if w != g && !(math.IsNaN(w) && math.IsNaN(g)) {
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

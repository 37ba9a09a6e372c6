package tensor

import "testing"

// TestBatchNormFusedMatchesComposed compares the fused batch norm (CPU and
// strict devices) with the composition, forward, statistics and every
// gradient, for 1-d and 2-d layouts, odd sizes, absent parameters and a
// non-contiguous input. The two differ only by float reassociation.
func TestBatchNormFusedMatchesComposed(t *testing.T) {
	cases := []struct {
		name         string
		shape        []int
		weight, bias bool
		permute      bool
	}{
		{"1d features", []int{7, 5}, true, true, false},
		{"1d sequence", []int{3, 4, 9}, true, true, false},
		{"2d odd", []int{3, 5, 7, 3}, true, true, false},
		{"2d one sample", []int{1, 3, 5, 5}, true, true, false},
		{"weight only", []int{4, 3, 5}, true, false, false},
		{"bias only", []int{4, 3, 5}, false, true, false},
		{"no affine", []int{4, 3, 5}, false, false, false},
		{"channels-last input", []int{2, 5, 3, 6}, true, true, true},
		{"far from zero", []int{6, 2, 11}, true, true, false},
	}
	for _, c := range cases {
		for _, dt := range []DType{Float64, Float32} {
			tol := []float64{1e-12, 1e-12, 1e-12, 1e-11, 1e-11, 1e-11}
			if dt == Float32 {
				tol = []float64{2e-6, 2e-6, 2e-6, 2e-5, 2e-5, 2e-5}
			}
			if dt == Float32 && c.name == "far from zero" {
				// the float32 mean near 1000 is rounded by up to 3e-5,
				// differently in each path (the composition sums in
				// float32): both are that far from the exact result
				tol = []float64{1e-4, 1e-6, 1e-4, 1e-4, 1e-4, 1e-4}
			}
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				fusedAndComposedWithin(t, tol, func(dev Device) []*Tensor {
					dev.Seed(1) // the same values in both runs
					shape := c.shape
					if c.permute {
						shape = []int{c.shape[0], c.shape[2], c.shape[3], c.shape[1]}
					}
					x := Randn(dev, shape...)
					if c.name == "far from zero" {
						x = x.AddScalar(1000)
					}
					x = x.To(dt).RequireGrad()
					in := x
					if c.permute {
						in = x.Permute(0, 3, 1, 2)
					}
					ch := c.shape[1]
					var w, b *Tensor
					out := []*Tensor{}
					if c.weight {
						w = Rand(dev, ch).AddScalar(0.5).To(dt).RequireGrad()
					}
					if c.bias {
						b = Randn(dev, ch).To(dt).RequireGrad()
					}
					y, mean, variance := in.BatchNorm(w, b, 1e-5)
					// a loss whose gradient is not constant, so that every
					// term of the input gradient matters
					g := Randn(dev, c.shape...).To(dt)
					grads := y.Mul(g).Sum().Backward()
					out = append(out, y, mean, variance, grads.Get(x))
					for _, p := range []*Tensor{w, b} {
						if p != nil {
							out = append(out, grads.Get(p))
						}
					}
					return out
				})
			})
		}
	}
}

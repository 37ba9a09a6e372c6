package tensor

import "testing"

// TestFusedNormsMatchComposed compares the fused layer and RMS norms'
// outputs and gradients with the composed paths', over rows spanning
// several chunks of the parameter gradients' partial sums, with and
// without each parameter, rows far from zero (where a naive variance
// cancels), float64 and float32.
func TestFusedNormsMatchComposed(t *testing.T) {
	type norm func(x, w, b *Tensor) *Tensor
	layer := func(x, w, b *Tensor) *Tensor { return x.LayerNorm([]int{x.shape[len(x.shape)-1]}, w, b, 1e-5) }
	rms := func(x, w, _ *Tensor) *Tensor { return x.RMSNorm([]int{x.shape[len(x.shape)-1]}, w, 1e-6) }
	for _, dt := range []DType{Float64, Float32} {
		for _, c := range []struct {
			name         string
			f            norm
			shape        []int
			weight, bias bool
			offset       float64
		}{
			{"layer affine", layer, []int{3, 70, 33}, true, true, 0},
			{"layer weight only", layer, []int{70, 33}, true, false, 0},
			{"layer bias only", layer, []int{65, 8}, false, true, 0},
			{"layer plain far from zero", layer, []int{40, 17}, false, false, 1000},
			{"layer one row", layer, []int{1, 300}, true, true, 0},
			{"rms weight", rms, []int{3, 70, 33}, true, false, 0},
			{"rms plain", rms, []int{66, 5}, false, false, 3},
		} {
			t.Run(c.name+" "+dt.String(), func(t *testing.T) {
				tol := 1e-12
				if dt == Float32 {
					// plus the rounding of a mean far from zero, relative
					// to the rows' spread (about 1)
					tol = 1e-5 + 0x1p-23*c.offset
				}
				fusedAndComposedWithin(t, []float64{tol, tol, tol, tol}, func(dev Device) []*Tensor {
					n := c.shape[len(c.shape)-1]
					x := attnRandom(dev, dt, 1, c.shape...).AddScalar(c.offset).Detach().RequireGrad()
					var w, b *Tensor
					res := []*Tensor{}
					if c.weight {
						w = attnRandom(dev, dt, 2, n).RequireGrad()
					}
					if c.bias {
						b = attnRandom(dev, dt, 3, n).RequireGrad()
					}
					y := c.f(x, w, b)
					g := attnRandom(dev.Inner(), dt, 4, y.shape...)
					grads := y.Mul(g).Sum().Backward()
					res = append(res, y, grads.Get(x))
					for _, p := range []*Tensor{w, b} {
						if p != nil {
							res = append(res, grads.Get(p))
						}
					}
					return res
				})
			})
		}
	}
}

// TestFusedEmbeddingGradMatchesComposed requires the fused embedding
// gradient to equal the scatter's exactly: repeated rows (added in
// position order), negative indices, a padding row and rows no position
// picks.
func TestFusedEmbeddingGradMatchesComposed(t *testing.T) {
	for _, dt := range []DType{Float32, Float64} {
		for _, padded := range []bool{false, true} {
			fusedAndComposed(t, func(dev Device) []*Tensor {
				w := attnRandom(dev, dt, 1, 50, 7).RequireGrad()
				idx := make([]int64, 3*41)
				for i := range idx {
					idx[i] = int64(i*i%37) - 5 // repeats, negatives, and rows 32…44 never picked
				}
				ix := FromInt64s(dev.Inner(), idx, 3, 41)
				var y *Tensor
				if padded {
					y = EmbeddingPadded(w, ix, 4)
				} else {
					y = Embedding(w, ix)
				}
				g := attnRandom(dev.Inner(), dt, 2, y.shape...)
				return []*Tensor{y.Mul(g).Sum().Backward().Get(w)}
			})
		}
	}
}

// TestFusedEmbeddingLookupMatchesComposed requires the row-copy lookup to
// equal the Gather exactly, negative indices included.
func TestFusedEmbeddingLookupMatchesComposed(t *testing.T) {
	fusedAndComposed(t, func(dev Device) []*Tensor {
		w := attnRandom(dev, Float32, 1, 30, 9)
		ix := FromInt64s(dev.Inner(), []int64{0, 29, -1, 5, 5, -30, 12}, 7)
		return []*Tensor{Embedding(w, ix), Embedding(w.To(Float64), ix.Reshape(7, 1))}
	})
}

// TestFusedLinearMatchesComposed requires the linear layer with its bias
// added inside the product to give the product-then-add results exactly,
// for batched, sliced and vector-shaped inputs, with gradients.
func TestFusedLinearMatchesComposed(t *testing.T) {
	for _, dt := range []DType{Float32, Float64} {
		fusedAndComposed(t, func(dev Device) []*Tensor {
			x := attnRandom(dev, dt, 1, 3, 37, 40).RequireGrad()
			w := attnRandom(dev, dt, 2, 45, 20).RequireGrad()
			b := attnRandom(dev, dt, 3, 45).RequireGrad()
			y1 := Linear(x.Narrow(2, 5, 20), w, b)
			y2 := Linear(x.Narrow(1, 3, 1).Narrow(2, 0, 20).Reshape(3, 20), w, b)
			y3 := Linear(x.Select(0, 0).Select(0, 0).Narrow(0, 0, 20), w, b)
			grads := y1.Sum().Add(y2.Square().Sum()).Add(y3.Sum()).Backward()
			return []*Tensor{y1, y2, y3, grads.Get(x), grads.Get(w), grads.Get(b)}
		})
	}
}

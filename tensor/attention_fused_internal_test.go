package tensor

import (
	"math/rand/v2"
	"testing"
)

// attnCase builds one ScaledDotProductAttention call for the fused and
// composed comparisons: the inputs on dev (q, k, v requiring gradients,
// an optional mask) and the call.
type attnCase struct {
	name  string
	dtype DType
	make  func(dev Device) (q, k, v, mask *Tensor, cfg AttentionConfig)
}

// attnRandom returns a tensor of uniform values in [-2, 2) from seed.
func attnRandom(dev Device, dtype DType, seed uint64, shape ...int) *Tensor {
	rng := rand.New(rand.NewPCG(seed, 3))
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.Float64()*4 - 2
	}
	t := FromFloat64s(dev, v, shape...)
	if dtype != Float64 {
		c := t.To(dtype)
		t.Release()
		t = c
	}
	return t
}

// attnBools returns a Bool tensor, true with probability p, from seed.
func attnBools(dev Device, seed uint64, p float64, shape ...int) *Tensor {
	rng := rand.New(rand.NewPCG(seed, 5))
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]bool, n)
	for i := range v {
		v[i] = rng.Float64() < p
	}
	return FromBools(dev, v, shape...)
}

func attnCases() []attnCase {
	var cases []attnCase
	for _, dt := range []DType{Float64, Float32} {
		qkv := func(dev Device, b []int, lq, lk, d, dv int) (q, k, v *Tensor) {
			sh := func(tail ...int) []int { return append(append([]int(nil), b...), tail...) }
			return attnRandom(dev, dt, 1, sh(lq, d)...).RequireGrad(), attnRandom(dev, dt, 2, sh(lk, d)...).RequireGrad(),
				attnRandom(dev, dt, 3, sh(lk, dv)...).RequireGrad()
		}
		cases = append(cases,
			attnCase{"plain odd sizes", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q, k, v = qkv(dev, []int{2, 3}, 130, 97, 16, 8)
				return q, k, v, nil, AttentionConfig{}
			}},
			attnCase{"causal square multi-tile", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q, k, v = qkv(dev, []int{2}, 150, 150, 12, 12)
				return q, k, v, nil, AttentionConfig{Causal: true}
			}},
			attnCase{"causal more queries than keys", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q, k, v = qkv(dev, []int{3}, 140, 70, 5, 7)
				return q, k, v, nil, AttentionConfig{Causal: true, Scale: 0.4}
			}},
			attnCase{"causal more keys than queries", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q, k, v = qkv(dev, []int{1}, 65, 200, 9, 4)
				return q, k, v, nil, AttentionConfig{Causal: true}
			}},
			attnCase{"bool mask with empty rows", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q, k, v = qkv(dev, []int{2, 2}, 70, 80, 8, 8)
				return q, k, v, attnBools(dev, 9, 0.08, 2, 1, 70, 80), AttentionConfig{}
			}},
			attnCase{"key padding mask", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q, k, v = qkv(dev, []int{3, 2}, 66, 129, 8, 8)
				pad := make([]bool, 3*129)
				for b := range 3 {
					for j := range 129 {
						pad[b*129+j] = j < 129-17*b // batch b has 17·b padding keys at the end
					}
				}
				return q, k, v, FromBools(dev, pad, 3, 1, 1, 129), AttentionConfig{}
			}},
			attnCase{"float mask", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q, k, v = qkv(dev, []int{2}, 67, 90, 6, 5)
				return q, k, v, attnRandom(dev, dt, 4, 67, 90), AttentionConfig{}
			}},
			attnCase{"transposed heads", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				// [N, L, H, D] projections seen as [N, H, L, D]
				x := attnRandom(dev, dt, 1, 2, 100, 3*16).RequireGrad()
				heads := func(i int) *Tensor {
					return x.Narrow(-1, 16*i, 16).Reshape(2, 100, 4, 4).Permute(0, 2, 1, 3)
				}
				return heads(0), heads(1), heads(2), nil, AttentionConfig{Causal: true}
			}},
			attnCase{"broadcast batch", dt, func(dev Device) (q, k, v, m *Tensor, c AttentionConfig) {
				q = attnRandom(dev, dt, 1, 2, 3, 70, 8).RequireGrad()
				k = attnRandom(dev, dt, 2, 3, 75, 8).RequireGrad()
				v = attnRandom(dev, dt, 3, 2, 1, 75, 4).RequireGrad()
				return q, k, v, nil, AttentionConfig{}
			}},
		)
	}
	return cases
}

// TestFusedAttentionMatchesComposed compares the fused attention's output
// and gradients with the composed path's, with causal, boolean, padding
// and float masks, odd sizes spanning several tiles, strided heads and
// broadcast batches, in float64 and float32.
func TestFusedAttentionMatchesComposed(t *testing.T) {
	for _, c := range attnCases() {
		t.Run(c.name+" "+c.dtype.String(), func(t *testing.T) {
			tol := 1e-11
			if c.dtype == Float32 {
				tol = 2e-5
			}
			fusedAndComposedWithin(t, []float64{tol, tol, tol, tol}, func(dev Device) []*Tensor {
				q, k, v, mask, cfg := c.make(dev)
				out := ScaledDotProductAttention(q, k, v, mask, cfg)
				w := attnRandom(dev.Inner(), c.dtype, 8, out.shape...)
				grads := out.Mul(w).Sum().Backward()
				res := []*Tensor{out}
				for _, x := range []*Tensor{q, k, v} {
					if g := grads.Get(x); g != nil {
						res = append(res, g)
					}
				}
				for _, g := range grads.byNode {
					if len(res) == 1 { // the leaves are not q, k and v: compare all gradients
						res = append(res, g)
					}
				}
				return res
			})
		})
	}
}

// TestFusedAttentionIsUsed checks that the CPU takes the fused path (no
// [.., Lq, Lk] intermediate: the output keeps q's memory layout) and that
// it allocates far less than the composed path for a long sequence.
func TestFusedAttentionIsUsed(t *testing.T) {
	dev := CPU()
	x := attnRandom(dev, Float32, 1, 1, 512, 2, 16) // [N, L, H, D]
	q := x.Permute(0, 2, 1, 3)                      // [N, H, L, D]
	peak := func(compose bool) int64 {
		composeOnly.Store(compose)
		defer composeOnly.Store(false)
		var p int64
		Scope(func() {
			base := dev.MemoryStats().LiveBytes
			dev.st.peak.Store(dev.st.live.Load())
			out := ScaledDotProductAttention(q, q, q, nil, AttentionConfig{Causal: true})
			if !compose {
				if s := out.Strides(); s[1] != 16 || s[2] != 32 {
					t.Errorf("fused output strides %v, want q's layout [.., 16, 32, 1]", s)
				}
			}
			p = dev.MemoryStats().PeakBytes - base
		})
		return p
	}
	fused, composed := peak(false), peak(true)
	if fused*4 > composed {
		t.Errorf("fused attention peaked at %d bytes, the composed at %d: want far less", fused, composed)
	}
}

// BenchmarkAttentionTrainStep times the attention of one GPT layer (batch
// 8, 4 heads, 256 positions, 64 features per head, causal; heads split
// from a [8, 256, 3·256] projection) forward and backward, fused and
// composed, reporting GFLOP/s counted as the composition's four
// [256×256×64] products per head forward and backward (causal work
// halved).
func BenchmarkAttentionTrainStep(b *testing.B) {
	for _, compose := range []bool{false, true} {
		name := "fused"
		if compose {
			name = "composed"
		}
		b.Run(name, func(b *testing.B) {
			composeOnly.Store(compose)
			defer composeOnly.Store(false)
			dev := CPU().Autodiff()
			x := attnRandom(dev, Float32, 1, 8, 256, 3*256).RequireGrad()
			heads := func(i int) *Tensor {
				return x.Narrow(-1, 256*i, 256).Reshape(8, 256, 4, 64).Permute(0, 2, 1, 3)
			}
			step := func() {
				Scope(func() {
					out := ScaledDotProductAttention(heads(0), heads(1), heads(2), nil, AttentionConfig{Causal: true})
					out.Sum().Backward()
				})
			}
			step()
			b.ResetTimer()
			for range b.N {
				step()
			}
			flops := 6.0 * 2 * 8 * 4 * 256 * 256 * 64 / 2
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

package tensor

import (
	"errors"
	"testing"
)

// TestPackedSelfAttentionMatchesComposition compares PackedSelfAttention,
// fused and composed (on the CPU and the strict test backend), with the
// composition its documentation gives (Narrow, Reshape, Transpose and
// ScaledDotProductAttention), output and qkv's gradient, causal or not,
// batched, unbatched and with two batch dimensions, with sequences over
// several tiles, odd head sizes, a qkv whose rows are strided (a slice of
// a wider tensor) and one whose features are not contiguous, in float64
// and float32.
func TestPackedSelfAttentionMatchesComposition(t *testing.T) {
	type shape struct {
		name  string
		batch []int
		l     int
		heads int
		d     int
		cfg   AttentionConfig
		input string // "plain", "sliced rows" or "transposed features"
	}
	shapes := []shape{
		{"causal multi-tile", []int{2}, 150, 3, 16, AttentionConfig{Causal: true}, "plain"},
		{"not causal odd head size", []int{3}, 70, 2, 5, AttentionConfig{Scale: 0.3}, "plain"},
		{"unbatched causal", nil, 65, 4, 8, AttentionConfig{Causal: true}, "plain"},
		{"two batch dimensions", []int{2, 2}, 40, 2, 4, AttentionConfig{Causal: true}, "plain"},
		{"sliced rows", []int{2}, 90, 2, 8, AttentionConfig{Causal: true}, "sliced rows"},
		{"transposed features", []int{2}, 33, 3, 4, AttentionConfig{}, "transposed features"},
	}
	for _, dt := range []DType{Float64, Float32} {
		for _, s := range shapes {
			t.Run(s.name+" "+dt.String(), func(t *testing.T) {
				tol := 1e-11
				if dt == Float32 {
					tol = 2e-5
				}
				e := s.heads * s.d
				with := func(tail ...int) []int { return append(append([]int(nil), s.batch...), tail...) }
				input := func(dev Device) (leaf, qkv *Tensor) {
					switch s.input {
					case "sliced rows": // every other position of a longer sequence, and part of wider rows
						leaf = attnRandom(dev, dt, 1, with(2*s.l, 3*e+5)...).RequireGrad()
						return leaf, leaf.Slice(-2, 0, 2*s.l, 2).Narrow(-1, 3, 3*e)
					case "transposed features":
						leaf = attnRandom(dev, dt, 1, with(3*e, s.l)...).RequireGrad()
						return leaf, leaf.Transpose(-1, -2)
					}
					leaf = attnRandom(dev, dt, 1, with(s.l, 3*e)...).RequireGrad()
					return leaf, leaf
				}
				run := func(dev Device, packed bool) []*Tensor {
					leaf, qkv := input(dev)
					var out *Tensor
					if packed {
						out = PackedSelfAttention(qkv, s.heads, s.cfg)
					} else {
						part := func(i int) *Tensor {
							return qkv.Narrow(-1, i*e, e).Reshape(with(s.l, s.heads, s.d)...).Transpose(-3, -2)
						}
						out = ScaledDotProductAttention(part(0), part(1), part(2), nil, s.cfg).Transpose(-3, -2).Reshape(with(s.l, e)...)
					}
					w := attnRandom(dev.Inner(), dt, 8, with(s.l, e)...)
					grads := out.Mul(w).Sum().Backward()
					return []*Tensor{out, grads.Get(leaf)}
				}
				tols := []float64{tol, tol}
				// fused and composed PackedSelfAttention against each other
				fusedAndComposedWithin(t, tols, func(dev Device) []*Tensor { return run(dev, true) })
				// and the fused call against the documented composition, fused too
				dev := CPU().Autodiff()
				Scope(func() {
					got, want := run(dev, true), run(dev, false)
					for i := range got {
						g, w := got[i].Float64s(), want[i].Float64s()
						for j := range w {
							if d := g[j] - w[j]; d > tol*2 || d < -tol*2 {
								t.Fatalf("result %d element %d: packed %v, composition %v", i, j, g[j], w[j])
							}
						}
					}
				})
			})
		}
	}
}

// TestPackedSelfAttentionNode checks that the fused path records one
// graph node whose only input is qkv, and that the output has the shape
// [..., L, E].
func TestPackedSelfAttentionNode(t *testing.T) {
	dev := CPU().Autodiff()
	Scope(func() {
		qkv := attnRandom(dev, Float32, 1, 2, 20, 3*12).RequireGrad()
		out := PackedSelfAttention(qkv, 3, AttentionConfig{Causal: true})
		if s := out.Shape(); len(s) != 3 || s[0] != 2 || s[1] != 20 || s[2] != 12 {
			t.Fatalf("output shape %v, want [2 20 12]", s)
		}
		if out.node == nil || out.node.Op != "packed_self_attention" || len(out.node.Inputs) != 1 {
			t.Fatalf("output node %+v, want one packed_self_attention node with qkv as its input", out.node)
		}
	})
}

// TestPackedSelfAttentionErrors checks the argument errors.
func TestPackedSelfAttentionErrors(t *testing.T) {
	dev := CPU()
	cases := []struct {
		name  string
		qkv   func() *Tensor
		heads int
		cfg   AttentionConfig
		want  error
	}{
		{"no heads", func() *Tensor { return Zeros(dev, 4, 6) }, 0, AttentionConfig{}, ErrArgument},
		{"features not 3·heads·D", func() *Tensor { return Zeros(dev, 4, 8) }, 2, AttentionConfig{}, ErrShape},
		{"one dimension", func() *Tensor { return Zeros(dev, 6) }, 1, AttentionConfig{}, ErrShape},
		{"integer", func() *Tensor { return ZerosOf(dev, Int64, 4, 6) }, 1, AttentionConfig{}, ErrDType},
		{"dropout", func() *Tensor { return Zeros(dev, 4, 6) }, 1, AttentionConfig{DropoutP: 0.1}, ErrArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, c.want) {
					t.Fatalf("panic %v, want %v", err, c.want)
				}
			}()
			Scope(func() { PackedSelfAttention(c.qkv(), c.heads, c.cfg) })
		})
	}
}

package tensor_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// The layers2 fixtures (testdata/gen_layers2.py) hold, per case, the inputs,
// PyTorch's output and the gradients of Σ out·lw, lw[i] = ((37·i) mod 19 −
// 9)/9, for Unfold, Fold, PixelShuffle, PixelUnshuffle, bicubic
// Interpolate, AdaptiveMaxPool1d and ConvTranspose1d. Each case runs in
// float64 and float32, on contiguous inputs and on non-contiguous views
// holding the same values.

// layers2Op runs one fixture case: the op under test on the named inputs,
// returning its output and, for pooling, the indices.
type layers2Op func(in map[string]*tensor.Tensor) (out, indices *tensor.Tensor)

func layers2One(f func(in map[string]*tensor.Tensor) *tensor.Tensor) layers2Op {
	return func(in map[string]*tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return f(in), nil }
}

var layers2Fixtures = map[string]layers2Op{
	"unfold basic": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.Unfold(in["x"], tensor.FoldConfig{Kernel: []int{2}})
	}),
	"unfold dilation padding stride": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.Unfold(in["x"], tensor.FoldConfig{Kernel: []int{3, 2}, Dilation: []int{1, 2}, Padding: []int{1},
			Stride: []int{2, 1}})
	}),
	"unfold unbatched": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.Unfold(in["x"], tensor.FoldConfig{Kernel: []int{3}, Padding: []int{1}, Stride: []int{2}})
	}),
	"unfold empty batch": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.Unfold(in["x"], tensor.FoldConfig{Kernel: []int{2}})
	}),
	"fold basic": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.Fold(in["x"], []int{4, 5}, tensor.FoldConfig{Kernel: []int{2}})
	}),
	"fold dilation padding stride": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.Fold(in["x"], []int{5, 6}, tensor.FoldConfig{Kernel: []int{3, 2}, Dilation: []int{1, 2},
			Padding: []int{1}, Stride: []int{2, 1}})
	}),
	"fold unbatched overlapping": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.Fold(in["x"], []int{4}, tensor.FoldConfig{Kernel: []int{3}, Padding: []int{1}})
	}),
	"pixel_shuffle": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.PixelShuffle(in["x"], 2)
	}),
	"pixel_shuffle 3d factor 3": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.PixelShuffle(in["x"], 3)
	}),
	"pixel_shuffle 5d": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.PixelShuffle(in["x"], 2)
	}),
	"pixel_unshuffle": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.PixelUnshuffle(in["x"], 2)
	}),
	"pixel_unshuffle 3d factor 3": layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.PixelUnshuffle(in["x"], 3)
	}),
	"bicubic up":                           bicubic(tensor.InterpolateConfig{Size: []int{7, 9}}),
	"bicubic up align corners":             bicubic(tensor.InterpolateConfig{Size: []int{7, 9}, AlignCorners: true}),
	"bicubic down":                         bicubic(tensor.InterpolateConfig{Size: []int{3, 2}}),
	"bicubic down align corners":           bicubic(tensor.InterpolateConfig{Size: []int{3, 1}, AlignCorners: true}),
	"bicubic scale factor":                 bicubic(tensor.InterpolateConfig{ScaleFactor: []float64{1.7, 0.6}}),
	"bicubic tiny input":                   bicubic(tensor.InterpolateConfig{Size: []int{5, 4}}),
	"adaptive_max_pool1d":                  adaptiveMax1d(4),
	"adaptive_max_pool1d larger output":    adaptiveMax1d(7),
	"adaptive_max_pool1d unbatched global": adaptiveMax1d(1),
	"conv_transpose1d basic":               convT1dFixture(tensor.ConvTransposeConfig{}),
	"conv_transpose1d stride padding output padding dilation": convT1dFixture(tensor.ConvTransposeConfig{
		Stride: []int{3}, Padding: []int{2}, OutputPadding: []int{1}, Dilation: []int{2}}),
	"conv_transpose1d groups":    convT1dFixture(tensor.ConvTransposeConfig{Stride: []int{2}, Groups: 2}),
	"conv_transpose1d unbatched": convT1dFixture(tensor.ConvTransposeConfig{Padding: []int{1}}),
}

func bicubic(cfg tensor.InterpolateConfig) layers2Op {
	cfg.Mode = "bicubic"
	return layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor { return tensor.Interpolate(in["x"], cfg) })
}

func adaptiveMax1d(size int) layers2Op {
	return func(in map[string]*tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
		return tensor.AdaptiveMaxPool1d(in["x"], size)
	}
}

func convT1dFixture(cfg tensor.ConvTransposeConfig) layers2Op {
	return layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.ConvTranspose1d(in["x"], in["w"], in["b"], cfg)
	})
}

// layers2LossWeights returns the fixtures' loss weights for n outputs.
func layers2LossWeights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = float64((37*i)%19-9) / 9
	}
	return w
}

// nonContiguous returns a view of x with x's values whose layout is not
// row-major (its first and last axes are stored swapped), or x itself
// when it has fewer than 2 dimensions.
func nonContiguous(x *tensor.Tensor) *tensor.Tensor {
	if x.Dims() < 2 {
		return x
	}
	return x.Transpose(0, -1).Contiguous().Transpose(0, -1)
}

func TestLayers2Fixtures(t *testing.T) {
	fixtures := loadFixtures(t, "layers2.json")
	names := make([]string, 0, len(layers2Fixtures))
	for name := range layers2Fixtures {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c, ok := fixtures[name]
		if !ok {
			t.Errorf("no fixture %q in layers2.json (regenerate with /usr/bin/python3 testdata/gen_layers2.py)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
					for _, strided := range []bool{false, true} {
						layers2Check(t, dev, c, layers2Fixtures[name], dt, strided)
					}
				}
			})
		})
	}
	for name := range fixtures {
		if _, ok := layers2Fixtures[name]; !ok {
			t.Errorf("fixture case %q is not checked by any test", name)
		}
	}
}

func layers2Check(t *testing.T, dev tensor.Device, c fixtureCase, op layers2Op, dt tensor.DType, strided bool) {
	t.Helper()
	what := dt.String()
	if strided {
		what += " non-contiguous"
	}
	rtol, atol := 1e-9, 1e-10
	if dt == tensor.Float32 {
		rtol, atol = 1e-5, 1e-5
	}
	ad := dev.Autodiff()
	in, leaf := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for key, f := range c {
		if key == "out" || key == "indices" || strings.HasPrefix(key, "grad.") {
			continue
		}
		x := tensor.FromFloat64s(ad, f.Float64s(), f.Shape...).Reshape(f.Shape...).To(dt).RequireGrad()
		leaf[key], in[key] = x, x
		if strided {
			in[key] = nonContiguous(x)
		}
	}
	out, idx := op(in)
	if out.DType() != dt {
		t.Errorf("%s: output dtype %s", what, out.DType())
	}
	assertClose(t, what+" out", out, c["out"], rtol, atol)
	if want, ok := c["indices"]; ok {
		assertClose(t, what+" indices", idx, want, 0, 0)
	}
	if out.NumElements() == 0 {
		return
	}
	lw := tensor.FromFloat64s(ad, layers2LossWeights(out.NumElements()), out.Shape()...).Reshape(out.Shape()...)
	grads := out.To(tensor.Float64).Mul(lw).Sum().Backward()
	defer grads.Release()
	for key, x := range leaf {
		g := grads.Get(x)
		if g == nil {
			t.Errorf("%s: no gradient for %s", what, key)
			continue
		}
		assertClose(t, what+" grad."+key, g, c["grad."+key], rtol, atol)
	}
}

func TestLayers2Gradients(t *testing.T) {
	one := func(f func(x *tensor.Tensor) *tensor.Tensor) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return f(in[0]) }
	}
	nnRunGradChecks(t, []nnGradCase{
		{"unfold", one(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Unfold(x, tensor.FoldConfig{Kernel: []int{2, 3}, Padding: []int{1}, Stride: []int{2, 1}, Dilation: []int{1, 2}})
		}), nnInputs(nnRand(1, 2, 2, 4, 5))},
		{"unfold transposed input", one(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Unfold(x.Transpose(1, 2), tensor.FoldConfig{Kernel: []int{2}})
		}), nnInputs(nnRand(2, 2, 3, 2, 3))},
		{"fold", one(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Fold(x, []int{4, 4}, tensor.FoldConfig{Kernel: []int{2}, Padding: []int{1}})
		}), nnInputs(nnRand(3, 2, 8, 25))},
		{"fold unbatched sliced", one(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Fold(x.Narrow(1, 1, 9), []int{4, 4}, tensor.FoldConfig{Kernel: []int{2}, Stride: []int{1}})
		}), nnInputs(nnRand(4, 8, 10))},
		{"pixel_shuffle", one(func(x *tensor.Tensor) *tensor.Tensor { return tensor.PixelShuffle(x, 2) }),
			nnInputs(nnRand(5, 2, 4, 2, 3))},
		{"pixel_unshuffle permuted", one(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.PixelUnshuffle(x.Permute(0, 3, 1, 2), 2)
		}), nnInputs(nnRand(6, 1, 4, 2, 2))},
		{"bicubic", one(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{5, 3}, Mode: "bicubic"})
		}), nnInputs(nnRand(7, 1, 2, 3, 4))},
		{"bicubic align corners", one(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{ScaleFactor: []float64{1.5}, Mode: "bicubic", AlignCorners: true})
		}), nnInputs(nnRand(8, 1, 1, 3, 3))},
		{"adaptive_max_pool1d", one(func(x *tensor.Tensor) *tensor.Tensor {
			v, _ := tensor.AdaptiveMaxPool1d(x, 3)
			return v
		}), nnInputs(nnDistinct(9, 2, 2, 7))},
		{"adaptive_max_pool1d transposed", one(func(x *tensor.Tensor) *tensor.Tensor {
			v, _ := tensor.AdaptiveMaxPool1d(x.Transpose(0, 1), 5)
			return v
		}), nnInputs(nnDistinct(10, 4, 3))},
		{"conv_transpose1d dilation groups", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.ConvTranspose1d(in[0], in[1], in[2], tensor.ConvTransposeConfig{Stride: []int{2}, Padding: []int{1},
				Dilation: []int{2}, Groups: 2, OutputPadding: []int{1}})
		}, nnInputs(nnRand(11, 1, 4, 3), nnRand(12, 4, 1, 3), nnRand(13, 2))},
	})
}

func TestLayers2BadInputs(t *testing.T) {
	z := func(d tensor.Device, shape ...int) *tensor.Tensor { return tensor.Zeros(d, shape...) }
	k2 := tensor.FoldConfig{Kernel: []int{2}}
	nnRunBadInputs(t, []nnBadCase{
		{"unfold rank", func(d tensor.Device) { tensor.Unfold(z(d, 2, 3), k2) },
			tensor.ErrShape, "tensor.Unfold: input [2 3] must be [N, C, H, W]"},
		{"unfold no kernel", func(d tensor.Device) { tensor.Unfold(z(d, 1, 1, 3, 3), tensor.FoldConfig{}) },
			tensor.ErrArgument, "tensor.Unfold: Kernel is required"},
		{"unfold too small", func(d tensor.Device) { tensor.Unfold(z(d, 1, 1, 1, 3), k2) },
			tensor.ErrShape, "no block fits"},
		{"unfold integer", func(d tensor.Device) { tensor.Unfold(tensor.ZerosOf(d, tensor.Int64, 1, 1, 3, 3), k2) },
			tensor.ErrDType, "int64"},
		{"unfold bad stride", func(d tensor.Device) {
			tensor.Unfold(z(d, 1, 1, 3, 3), tensor.FoldConfig{Kernel: []int{2}, Stride: []int{0}})
		}, tensor.ErrArgument, "Stride [0]"},
		{"fold rows", func(d tensor.Device) { tensor.Fold(z(d, 1, 5, 4), []int{3, 3}, k2) },
			tensor.ErrShape, "tensor.Fold: input [1 5 4] has 5 rows, not a multiple of the kernel size 2·2"},
		{"fold blocks", func(d tensor.Device) { tensor.Fold(z(d, 1, 4, 5), []int{3, 3}, k2) },
			tensor.ErrShape, "has 5 blocks, but output size [3 3] fits 2·2 = 4"},
		{"fold no size", func(d tensor.Device) { tensor.Fold(z(d, 1, 4, 4), nil, k2) },
			tensor.ErrArgument, "output size is required"},
		{"fold rank", func(d tensor.Device) { tensor.Fold(z(d, 4), []int{3}, k2) },
			tensor.ErrShape, "tensor.Fold: input [4] must be"},
		{"pixel_shuffle channels", func(d tensor.Device) { tensor.PixelShuffle(z(d, 1, 6, 2, 2), 2) },
			tensor.ErrShape, "tensor.PixelShuffle: input [1 6 2 2] has 6 channels, not a multiple of the upscale factor squared 4"},
		{"pixel_shuffle factor", func(d tensor.Device) { tensor.PixelShuffle(z(d, 1, 4, 2, 2), 0) },
			tensor.ErrArgument, "upscale factor 0 must be positive"},
		{"pixel_shuffle rank", func(d tensor.Device) { tensor.PixelShuffle(z(d, 4, 2), 2) },
			tensor.ErrShape, "at least 3 dimensions"},
		{"pixel_unshuffle size", func(d tensor.Device) { tensor.PixelUnshuffle(z(d, 1, 1, 4, 3), 2) },
			tensor.ErrShape, "tensor.PixelUnshuffle: input [1 1 4 3] has height 4 and width 3"},
		{"bicubic 3-D", func(d tensor.Device) {
			tensor.Interpolate(z(d, 1, 2, 4), tensor.InterpolateConfig{Size: []int{3}, Mode: "bicubic"})
		}, tensor.ErrArgument, "mode \"bicubic\" needs a 4-D input, got [1 2 4]"},
		{"adaptive_max_pool1d rank", func(d tensor.Device) { tensor.AdaptiveMaxPool1d(z(d, 4), 2) },
			tensor.ErrShape, "tensor.AdaptiveMaxPool1d: input [4] must be"},
		{"adaptive_max_pool1d negative", func(d tensor.Device) { tensor.AdaptiveMaxPool1d(z(d, 1, 4), -1) },
			tensor.ErrArgument, "output size -1 must not be negative"},
		{"adaptive_max_pool1d empty", func(d tensor.Device) { tensor.AdaptiveMaxPool1d(z(d, 1, 0), 2) },
			tensor.ErrShape, "empty last axis"},
		{"adaptive_max_pool1d integer", func(d tensor.Device) {
			tensor.AdaptiveMaxPool1d(tensor.ZerosOf(d, tensor.Int32, 1, 4), 2)
		}, tensor.ErrDType, "int32"},
		{"conv_transpose1d channels", func(d tensor.Device) {
			tensor.ConvTranspose1d(z(d, 1, 3, 4), z(d, 2, 1, 3), nil, tensor.ConvTransposeConfig{})
		}, tensor.ErrShape, "tensor.ConvTranspose1d: input [1 3 4] has 3 channels, weight [2 1 3] expects 2"},
	})
}

func TestPixelShuffleIntegers(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromInt64s(dev, []int64{0, 1, 2, 3, 4, 5, 6, 7}, 1, 4, 1, 2)
		y := tensor.PixelShuffle(x, 2)
		got := y.Int64s()
		want := []int64{0, 2, 1, 3, 4, 6, 5, 7} // out(i, 2w+j) = in(2i+j, w)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("PixelShuffle = %v, want %v", got, want)
			}
		}
		back := tensor.PixelUnshuffle(y, 2).Int64s()
		for i, v := range back {
			if v != int64(i) {
				t.Fatalf("PixelUnshuffle(PixelShuffle(x)) = %v", back)
			}
		}
	})
}

func deformFixture(cfg tensor.DeformConvConfig) layers2Op {
	return layers2One(func(in map[string]*tensor.Tensor) *tensor.Tensor {
		return tensor.DeformConv2d(in["x"], in["offset"], in["weight"], in["bias"], in["mask"], cfg)
	})
}

func init() {
	layers2Fixtures["deform_conv2d basic"] = deformFixture(tensor.DeformConvConfig{})
	layers2Fixtures["deform_conv2d stride padding dilation groups offset groups"] = deformFixture(
		tensor.DeformConvConfig{Stride: []int{2, 1}, Padding: []int{1, 2}, Dilation: []int{2, 1}})
	layers2Fixtures["deform_conv2d v1 no bias"] = deformFixture(tensor.DeformConvConfig{})
}

func TestDeformConv2dGradients(t *testing.T) {
	if raceEnabled {
		t.Skip("finite differences: the plain run checks them (see race_test.go)")
	}
	nnRunGradChecks(t, []nnGradCase{
		{"modulated", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.DeformConv2d(in[0], in[1].MulScalar(1.7), in[2], in[3], in[4], tensor.DeformConvConfig{Padding: []int{1, 0}})
		}, nnInputs(nnRand(1, 1, 2, 3, 3), nnRand(2, 1, 8, 4, 2), nnRand(3, 2, 2, 2, 2), nnRand(4, 2), nnRand(5, 1, 4, 4, 2))},
		{"groups offset groups stride dilation transposed input", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.DeformConv2d(in[0].Transpose(2, 3), in[1].MulScalar(2.3), in[2], nil, nil,
				tensor.DeformConvConfig{Stride: []int{2, 1}, Dilation: []int{1, 2}})
		}, nnInputs(nnRand(6, 1, 4, 3, 4), nnRand(7, 1, 16, 2, 1), nnRand(8, 2, 2, 2, 2))},
	})
}

// TestDeformConv2dZeroOffsetsIsConv2d checks the definition against
// Conv2d: with zero offsets and a mask of ones, a deformable convolution
// is an ordinary one.
func TestDeformConv2dZeroOffsetsIsConv2d(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := randFloat64(dev, 1, -1, 1, 2, 4, 6, 5)
		w := randFloat64(dev, 2, -1, 1, 6, 2, 3, 2)
		b := randFloat64(dev, 3, -1, 1, 6)
		cfg := tensor.ConvConfig{Stride: []int{2, 1}, Padding: []int{1, 2}, Dilation: []int{1, 2}, Groups: 2}
		want := tensor.Conv2d(x, w, b, cfg)
		s := want.Shape()
		off := tensor.ZerosOf(dev, tensor.Float64, 2, 2*2*6, s[2], s[3])
		mask := tensor.OnesOf(dev, tensor.Float64, 2, 2*6, s[2], s[3])
		got := tensor.DeformConv2d(x, off, w, b, mask, tensor.DeformConvConfig{Stride: cfg.Stride, Padding: cfg.Padding,
			Dilation: cfg.Dilation})
		assertValues(t, "deform_conv2d", got, s, want.Float64s(), 1e-12, 1e-12)
	})
}

func TestDeformConv2dBadInputs(t *testing.T) {
	z := func(d tensor.Device, shape ...int) *tensor.Tensor { return tensor.Zeros(d, shape...) }
	nnRunBadInputs(t, []nnBadCase{
		{"input rank", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 3, 5, 5), z(d, 1, 18, 3, 3), z(d, 2, 3, 3, 3), nil, nil, tensor.DeformConvConfig{})
		}, tensor.ErrShape, "tensor.DeformConv2d: input [3 5 5] must be [N, C, H, W]"},
		{"offset size", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 5, 5), z(d, 1, 18, 2, 3), z(d, 2, 3, 3, 3), nil, nil, tensor.DeformConvConfig{})
		}, tensor.ErrShape, "offset [1 18 2 3] must be [1, 2·offset groups·9, 3, 3]"},
		{"offset groups", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 5, 5), z(d, 1, 36, 3, 3), z(d, 2, 3, 3, 3), nil, nil, tensor.DeformConvConfig{})
		}, tensor.ErrShape, "2 offset groups, which do not divide the input's 3 channels"},
		{"mask", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 5, 5), z(d, 1, 18, 3, 3), z(d, 2, 3, 3, 3), nil, z(d, 1, 18, 3, 3), tensor.DeformConvConfig{})
		}, tensor.ErrShape, "mask [1 18 3 3] must be [1, 9, 3, 3]"},
		{"channels", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 5, 5), z(d, 1, 18, 3, 3), z(d, 2, 2, 3, 3), nil, nil, tensor.DeformConvConfig{})
		}, tensor.ErrShape, "3 channels, which weight [2 2 3 3]'s 2 channels per group do not divide"},
		{"bias", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 5, 5), z(d, 1, 18, 3, 3), z(d, 2, 3, 3, 3), z(d, 3), nil, tensor.DeformConvConfig{})
		}, tensor.ErrShape, "bias [3] does not match weight [2 3 3 3]"},
		{"too small", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 2, 2), z(d, 1, 18, 1, 1), z(d, 2, 3, 3, 3), nil, nil, tensor.DeformConvConfig{})
		}, tensor.ErrShape, "no window fits"},
		{"stride", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 5, 5), z(d, 1, 18, 3, 3), z(d, 2, 3, 3, 3), nil, nil,
				tensor.DeformConvConfig{Stride: []int{0}})
		}, tensor.ErrArgument, "Stride [0]"},
		{"mixed dtypes", func(d tensor.Device) {
			tensor.DeformConv2d(z(d, 1, 3, 5, 5), tensor.ZerosOf(d, tensor.Float64, 1, 18, 3, 3), z(d, 2, 3, 3, 3), nil, nil,
				tensor.DeformConvConfig{})
		}, tensor.ErrDType, "float64"},
	})
}

// BenchmarkDeformConv2d runs a modulated deformable convolution forward
// and backward (16→16 channels, 3×3, 32×32, batch 4) beside the ordinary
// Conv2d of the same geometry, reporting samples/s.
func BenchmarkDeformConv2d(b *testing.B) {
	for _, deform := range []bool{true, false} {
		name := "conv2d"
		if deform {
			name = "deform_conv2d"
		}
		b.Run(name, func(b *testing.B) {
			dev := tensor.CPU()
			ad := dev.Autodiff()
			x := randFloat64(dev, 1, -1, 1, 4, 16, 32, 32).To(tensor.Float32).ToDevice(ad).RequireGrad()
			w := randFloat64(dev, 2, -1, 1, 16, 16, 3, 3).To(tensor.Float32).ToDevice(ad).RequireGrad()
			off := randFloat64(dev, 3, -2, 2, 4, 18, 32, 32).To(tensor.Float32).ToDevice(ad).RequireGrad()
			mask := randFloat64(dev, 4, 0, 1, 4, 9, 32, 32).To(tensor.Float32).ToDevice(ad).RequireGrad()
			b.ResetTimer()
			for range b.N {
				tensor.Scope(func() {
					var y *tensor.Tensor
					if deform {
						y = tensor.DeformConv2d(x, off, w, nil, mask, tensor.DeformConvConfig{Padding: []int{1}})
					} else {
						y = tensor.Conv2d(x, w, nil, tensor.ConvConfig{Padding: []int{1}})
					}
					g := y.Sum().Backward()
					g.Release()
				})
			}
			b.ReportMetric(float64(4*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// TestLayers2EmptyBatch runs every op of this file on an empty batch: the
// result has the right shape and the backward pass gives an empty gradient.
func TestLayers2EmptyBatch(t *testing.T) {
	cases := []struct {
		name  string
		in    []int
		f     func(x *tensor.Tensor) *tensor.Tensor
		shape []int
	}{
		{"unfold", []int{0, 2, 3, 3}, func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Unfold(x, tensor.FoldConfig{Kernel: []int{2}})
		}, []int{0, 8, 4}},
		{"fold", []int{0, 4, 4}, func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Fold(x, []int{3}, tensor.FoldConfig{Kernel: []int{2}})
		}, []int{0, 1, 3, 3}},
		{"pixel_shuffle", []int{0, 4, 2, 2}, func(x *tensor.Tensor) *tensor.Tensor { return tensor.PixelShuffle(x, 2) },
			[]int{0, 1, 4, 4}},
		{"pixel_unshuffle", []int{0, 1, 4, 4}, func(x *tensor.Tensor) *tensor.Tensor { return tensor.PixelUnshuffle(x, 2) },
			[]int{0, 4, 2, 2}},
		{"adaptive_max_pool1d", []int{0, 3, 5}, func(x *tensor.Tensor) *tensor.Tensor {
			v, _ := tensor.AdaptiveMaxPool1d(x, 2)
			return v
		}, []int{0, 3, 2}},
		{"bicubic", []int{0, 2, 3, 3}, func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{5}, Mode: "bicubic"})
		}, []int{0, 2, 5, 5}},
		{"conv_transpose1d", []int{0, 2, 3}, func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvTranspose1d(x, tensor.OnesOf(x.Device(), x.DType(), 2, 1, 2), nil, tensor.ConvTransposeConfig{})
		}, []int{0, 1, 4}},
	}
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, c := range cases {
			for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
				x := tensor.ZerosOf(dev.Autodiff(), dt, c.in...).RequireGrad()
				y := c.f(x)
				if !equalInts(y.Shape(), c.shape) || y.DType() != dt {
					t.Errorf("%s %s: %v %s, want %v", c.name, dt, y.Shape(), y.DType(), c.shape)
					continue
				}
				g := y.Sum().Backward()
				if gx := g.Get(x); gx == nil || !equalInts(gx.Shape(), c.in) {
					t.Errorf("%s %s: gradient %v, want shape %v", c.name, dt, gx, c.in)
				}
				g.Release()
			}
		}
	})
}

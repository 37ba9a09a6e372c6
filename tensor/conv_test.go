package tensor_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/tensor"
)

// nnIn gives a fixture case's inputs to the op under test: float tensors in
// the dtype being tested, others (indices, masks) as stored.
type nnIn struct {
	t     *testing.T
	c     fixtureCase
	dev   tensor.Device
	dtype tensor.DType
}

// T returns the named input, failing the test when the case lacks it.
func (in nnIn) T(name string) *tensor.Tensor {
	f, ok := in.c[name]
	if !ok {
		in.t.Fatalf("fixture has no tensor %q", name)
	}
	x := f.Tensor(in.dev)
	if x.DType().IsFloat() && x.DType() != in.dtype {
		x = x.To(in.dtype)
	}
	return x
}

// Opt returns the named input, or nil when the case has none.
func (in nnIn) Opt(name string) *tensor.Tensor {
	if _, ok := in.c[name]; !ok {
		return nil
	}
	return in.T(name)
}

// nnOut maps expected-tensor names of a fixture case to computed results.
type nnOut map[string]*tensor.Tensor

type nnFixtureFunc func(in nnIn) nnOut

// nnRunFixtures checks every case of table against testdata/nnops.json, in
// Float64 and Float32, on every test device.
func nnRunFixtures(t *testing.T, table map[string]nnFixtureFunc) {
	t.Helper()
	fixtures := loadFixtures(t, "nnops.json")
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c, ok := fixtures[name]
		if !ok {
			t.Errorf("no fixture %q in nnops.json (regenerate with /usr/bin/python3 testdata/gen_nnops.py)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
					rtol, atol := 1e-6, 1e-6
					if dt == tensor.Float32 {
						rtol, atol = 1e-4, 1e-4
					}
					got := table[name](nnIn{t: t, c: c, dev: dev, dtype: dt})
					for key, g := range got {
						want, ok := c[key]
						if !ok {
							t.Fatalf("fixture has no expected %q", key)
						}
						if !g.DType().IsFloat() {
							assertClose(t, dt.String()+" "+key, g, want, 0, 0)
							continue
						}
						if g.DType() != dt {
							t.Errorf("%s %s: dtype %s", dt, key, g.DType())
						}
						assertClose(t, dt.String()+" "+key, g, want, rtol, atol)
					}
				}
			})
		})
	}
}

// nnAllFixtureTables lists every fixture table, so that one test can check
// that each case in nnops.json is exercised.
func nnAllFixtureTables() []map[string]nnFixtureFunc {
	return []map[string]nnFixtureFunc{nnConvFixtures, nnPoolFixtures, nnInterpolateFixtures, nnEmbeddingFixtures,
		nnAttentionFixtures}
}

func TestNNFixturesAllUsed(t *testing.T) {
	used := map[string]bool{}
	for _, table := range nnAllFixtureTables() {
		for name := range table {
			used[name] = true
		}
	}
	for name := range loadFixtures(t, "nnops.json") {
		if !used[name] {
			t.Errorf("fixture case %q is not checked by any test", name)
		}
	}
}

func conv2d(cfg tensor.ConvConfig) nnFixtureFunc {
	return func(in nnIn) nnOut {
		return nnOut{"out": tensor.Conv2d(in.T("x"), in.T("w"), in.Opt("b"), cfg)}
	}
}

func conv1d(cfg tensor.ConvConfig) nnFixtureFunc {
	return func(in nnIn) nnOut {
		return nnOut{"out": tensor.Conv1d(in.T("x"), in.T("w"), in.Opt("b"), cfg)}
	}
}

func convT2d(cfg tensor.ConvTransposeConfig) nnFixtureFunc {
	return func(in nnIn) nnOut {
		return nnOut{"out": tensor.ConvTranspose2d(in.T("x"), in.T("w"), in.Opt("b"), cfg)}
	}
}

func convT1d(cfg tensor.ConvTransposeConfig) nnFixtureFunc {
	return func(in nnIn) nnOut {
		return nnOut{"out": tensor.ConvTranspose1d(in.T("x"), in.T("w"), in.Opt("b"), cfg)}
	}
}

var nnConvFixtures = map[string]nnFixtureFunc{
	"conv2d basic":                             conv2d(tensor.ConvConfig{}),
	"conv2d stride 2 padding 1":                conv2d(tensor.ConvConfig{Stride: []int{2}, Padding: []int{1}}),
	"conv2d rectangular stride padding kernel": conv2d(tensor.ConvConfig{Stride: []int{2, 1}, Padding: []int{1, 0}}),
	"conv2d same odd kernel":                   conv2d(tensor.ConvConfig{PaddingMode: "same"}),
	"conv2d same even kernel":                  conv2d(tensor.ConvConfig{PaddingMode: "same"}),
	"conv2d same dilated":                      conv2d(tensor.ConvConfig{PaddingMode: "same", Dilation: []int{2, 3}}),
	"conv2d valid":                             conv2d(tensor.ConvConfig{PaddingMode: "valid"}),
	"conv2d dilation":                          conv2d(tensor.ConvConfig{Dilation: []int{2}, Padding: []int{2}}),
	"conv2d groups":                            conv2d(tensor.ConvConfig{Groups: 2, Padding: []int{1}}),
	"conv2d depthwise":                         conv2d(tensor.ConvConfig{Groups: 3, Stride: []int{2}}),
	"conv2d no bias":                           conv2d(tensor.ConvConfig{}),
	"conv2d unbatched":                         conv2d(tensor.ConvConfig{Padding: []int{1}}),
	"conv1d stride padding":                    conv1d(tensor.ConvConfig{Stride: []int{2}, Padding: []int{1}}),
	"conv1d groups dilation":                   conv1d(tensor.ConvConfig{Groups: 2, Dilation: []int{2}}),
	"conv1d same":                              conv1d(tensor.ConvConfig{PaddingMode: "same"}),
	"conv1d unbatched":                         conv1d(tensor.ConvConfig{}),
	"conv_transpose2d basic":                   convT2d(tensor.ConvTransposeConfig{}),
	"conv_transpose2d stride padding output padding": convT2d(tensor.ConvTransposeConfig{Stride: []int{2},
		Padding: []int{1}, OutputPadding: []int{1}}),
	"conv_transpose2d rectangular": convT2d(tensor.ConvTransposeConfig{Stride: []int{3, 2}, Padding: []int{0, 1},
		OutputPadding: []int{2, 0}}),
	"conv_transpose2d groups dilation": convT2d(tensor.ConvTransposeConfig{Groups: 2, Dilation: []int{2}}),
	"conv_transpose1d stride output padding": convT1d(tensor.ConvTransposeConfig{Stride: []int{3},
		OutputPadding: []int{2}, Padding: []int{1}}),
}

func TestNNConvFixtures(t *testing.T) { nnRunFixtures(t, nnConvFixtures) }

// nnGradCase is one gradient check: f applied to inputs made on dev.
type nnGradCase struct {
	name   string
	f      func(in []*tensor.Tensor) *tensor.Tensor
	inputs func(dev tensor.Device) []*tensor.Tensor
}

func nnRunGradChecks(t *testing.T, cases []nnGradCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				gradCheck(t, dev, c.f, c.inputs(dev)...)
			})
		})
	}
}

// nnRand is randFloat64 on [-1, 1).
func nnRand(seed uint64, shape ...int) func(dev tensor.Device) *tensor.Tensor {
	return func(dev tensor.Device) *tensor.Tensor { return randFloat64(dev, seed, -1, 1, shape...) }
}

func nnInputs(makers ...func(dev tensor.Device) *tensor.Tensor) func(dev tensor.Device) []*tensor.Tensor {
	return func(dev tensor.Device) []*tensor.Tensor {
		out := make([]*tensor.Tensor, len(makers))
		for i, m := range makers {
			out[i] = m(dev)
		}
		return out
	}
}

func TestNNConvGradients(t *testing.T) {
	conv := func(cfg tensor.ConvConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor {
			var b *tensor.Tensor
			if len(in) > 2 {
				b = in[2]
			}
			return tensor.Conv2d(in[0], in[1], b, cfg)
		}
	}
	convT := func(cfg tensor.ConvTransposeConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor {
			var b *tensor.Tensor
			if len(in) > 2 {
				b = in[2]
			}
			return tensor.ConvTranspose2d(in[0], in[1], b, cfg)
		}
	}
	nnRunGradChecks(t, []nnGradCase{
		{"conv2d bias", conv(tensor.ConvConfig{}), nnInputs(nnRand(1, 2, 2, 4, 4), nnRand(2, 3, 2, 2, 3), nnRand(3, 3))},
		{"conv2d stride padding dilation", conv(tensor.ConvConfig{Stride: []int{2, 1}, Padding: []int{1}, Dilation: []int{1, 2}}),
			nnInputs(nnRand(1, 1, 2, 5, 5), nnRand(2, 2, 2, 3, 2), nnRand(3, 2))},
		{"conv2d same even kernel", conv(tensor.ConvConfig{PaddingMode: "same"}),
			nnInputs(nnRand(1, 1, 2, 4, 3), nnRand(2, 2, 2, 2, 2))},
		{"conv2d groups", conv(tensor.ConvConfig{Groups: 2}), nnInputs(nnRand(1, 2, 4, 3, 3), nnRand(2, 4, 2, 2, 2), nnRand(3, 4))},
		{"conv2d depthwise", conv(tensor.ConvConfig{Groups: 3, Padding: []int{1}}),
			nnInputs(nnRand(1, 1, 3, 3, 3), nnRand(2, 3, 1, 2, 2))},
		{"conv2d non-contiguous input and weight", func(in []*tensor.Tensor) *tensor.Tensor {
			// x arrives as [N, C, W, H], weight as [KW, KH, C, O]
			return tensor.Conv2d(in[0].Transpose(2, 3), in[1].Permute(3, 2, 1, 0), in[2].Expand(2, 3).Sum(0), tensor.ConvConfig{Padding: []int{1}})
		}, nnInputs(nnRand(1, 2, 2, 4, 3), nnRand(2, 2, 2, 2, 3), nnRand(3, 3))},
		{"conv2d unbatched", conv(tensor.ConvConfig{}), nnInputs(nnRand(1, 2, 3, 3), nnRand(2, 2, 2, 2, 2))},
		{"conv1d", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Conv1d(in[0], in[1], in[2], tensor.ConvConfig{Stride: []int{2}, Padding: []int{1}, Dilation: []int{2}})
		}, nnInputs(nnRand(1, 2, 2, 7), nnRand(2, 3, 2, 3), nnRand(3, 3))},
		{"conv1d sliced input", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Conv1d(in[0].Transpose(1, 2), in[1], nil, tensor.ConvConfig{Groups: 2, PaddingMode: "same"})
		}, nnInputs(nnRand(1, 2, 5, 4), nnRand(2, 4, 2, 2))},
		{"conv_transpose2d", convT(tensor.ConvTransposeConfig{}), nnInputs(nnRand(1, 2, 2, 3, 3), nnRand(2, 2, 3, 2, 2), nnRand(3, 3))},
		{"conv_transpose2d stride padding output padding", convT(tensor.ConvTransposeConfig{Stride: []int{2}, Padding: []int{1},
			OutputPadding: []int{1, 0}}), nnInputs(nnRand(1, 1, 2, 3, 2), nnRand(2, 2, 2, 3, 3), nnRand(3, 2))},
		{"conv_transpose2d groups dilation", convT(tensor.ConvTransposeConfig{Groups: 2, Dilation: []int{2, 1}}),
			nnInputs(nnRand(1, 1, 4, 2, 3), nnRand(2, 4, 1, 2, 2))},
		{"conv_transpose2d non-contiguous", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.ConvTranspose2d(in[0].Permute(0, 3, 1, 2), in[1].Transpose(2, 3), nil, tensor.ConvTransposeConfig{Stride: []int{2}})
		}, nnInputs(nnRand(1, 1, 2, 3, 2), nnRand(2, 2, 2, 3, 2))},
		{"conv_transpose1d", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.ConvTranspose1d(in[0], in[1], in[2], tensor.ConvTransposeConfig{Stride: []int{3}, OutputPadding: []int{1}})
		}, nnInputs(nnRand(1, 2, 2, 3), nnRand(2, 2, 2, 2), nnRand(3, 2))},
	})
}

// nnBadCase is one call that must panic with a *tensor.Error of kind err
// whose message contains want.
type nnBadCase struct {
	name string
	fn   func(dev tensor.Device)
	err  error
	want string
}

func nnRunBadInputs(t *testing.T, cases []nnBadCase) {
	t.Helper()
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, c := range cases {
			err := tensor.Try(func() { c.fn(dev) })
			var te *tensor.Error
			switch {
			case err == nil:
				t.Errorf("%s: no error", c.name)
			case !errors.As(err, &te):
				t.Errorf("%s: error %v is not a *tensor.Error", c.name, err)
			case !errors.Is(err, c.err):
				t.Errorf("%s: error %q is not %v", c.name, err, c.err)
			case !strings.Contains(err.Error(), c.want):
				t.Errorf("%s: error %q does not contain %q", c.name, err, c.want)
			}
		}
	})
}

func TestNNConvBadInputs(t *testing.T) {
	z := func(dev tensor.Device, shape ...int) *tensor.Tensor { return tensor.Zeros(dev, shape...) }
	nnRunBadInputs(t, []nnBadCase{
		{"channel mismatch", func(d tensor.Device) { tensor.Conv2d(z(d, 8, 3, 32, 32), z(d, 16, 1, 3, 3), nil, tensor.ConvConfig{}) },
			tensor.ErrShape, "tensor.Conv2d: input [8 3 32 32] has 3 channels, weight [16 1 3 3] expects 1"},
		{"channel mismatch with groups", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 2, 3, 3), nil, tensor.ConvConfig{Groups: 2})
		}, tensor.ErrShape, "input [1 3 5 5] has 3 channels, weight [4 2 3 3] expects 4 (2 per group × 2 groups)"},
		{"output channels not divisible by groups", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 4, 5, 5), z(d, 3, 2, 3, 3), nil, tensor.ConvConfig{Groups: 2})
		}, tensor.ErrShape, "weight [3 2 3 3] has 3 output channels"},
		{"input rank", func(d tensor.Device) { tensor.Conv2d(z(d, 3, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{}) },
			tensor.ErrShape, "tensor.Conv2d: input [3 5] must be [N, C, H, W]"},
		{"weight rank", func(d tensor.Device) { tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3), nil, tensor.ConvConfig{}) },
			tensor.ErrShape, "weight [4 3 3] must have 4 dimensions"},
		{"bias shape", func(d tensor.Device) { tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), z(d, 3), tensor.ConvConfig{}) },
			tensor.ErrShape, "bias [3] does not match weight [4 3 3 3]"},
		{"input too small", func(d tensor.Device) { tensor.Conv2d(z(d, 1, 3, 2, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{}) },
			tensor.ErrShape, "input [1 3 2 5] is too small for weight [4 3 3 3]"},
		{"dtype mismatch", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), tensor.ZerosOf(d, tensor.Float64, 4, 3, 3, 3), nil, tensor.ConvConfig{})
		}, tensor.ErrDType, "tensor.Conv2d: input [1 3 5 5] is float32 but parameter [4 3 3 3] is float64"},
		{"integer input", func(d tensor.Device) {
			tensor.Conv2d(tensor.ZerosOf(d, tensor.Int64, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{})
		}, tensor.ErrDType, "is int64"},
		{"three strides", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{Stride: []int{1, 2, 3}})
		}, tensor.ErrArgument, "Stride [1 2 3]: want 1 or 2 values"},
		{"zero stride", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{Stride: []int{0}})
		}, tensor.ErrArgument, "Stride [0]: values must be at least 1"},
		{"negative padding", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{Padding: []int{-1}})
		}, tensor.ErrArgument, "Padding [-1]"},
		{"same with stride", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{PaddingMode: "same", Stride: []int{2}})
		}, tensor.ErrArgument, "needs stride 1"},
		{"same with padding", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{PaddingMode: "same", Padding: []int{1}})
		}, tensor.ErrArgument, "set one or the other"},
		{"unknown padding mode", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{PaddingMode: "reflect"})
		}, tensor.ErrArgument, "unknown PaddingMode \"reflect\""},
		{"negative groups", func(d tensor.Device) {
			tensor.Conv2d(z(d, 1, 3, 5, 5), z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{Groups: -1})
		}, tensor.ErrArgument, "Groups -1"},
		{"nil weight", func(d tensor.Device) { tensor.Conv2d(z(d, 1, 3, 5, 5), nil, nil, tensor.ConvConfig{}) },
			tensor.ErrArgument, "tensor.Conv2d: nil tensor"},
		{"released input", func(d tensor.Device) {
			x := z(d, 1, 3, 5, 5)
			x.Release()
			tensor.Conv2d(x, z(d, 4, 3, 3, 3), nil, tensor.ConvConfig{})
		}, tensor.ErrReleased, "tensor.Conv2d"},
		{"conv1d channel mismatch", func(d tensor.Device) { tensor.Conv1d(z(d, 2, 3, 9), z(d, 4, 2, 3), nil, tensor.ConvConfig{}) },
			tensor.ErrShape, "tensor.Conv1d: input [2 3 9] has 3 channels, weight [4 2 3] expects 2"},
		{"conv1d two strides", func(d tensor.Device) {
			tensor.Conv1d(z(d, 2, 3, 9), z(d, 4, 3, 3), nil, tensor.ConvConfig{Stride: []int{1, 1}})
		}, tensor.ErrArgument, "want one value"},
		{"conv transpose channel mismatch", func(d tensor.Device) {
			tensor.ConvTranspose2d(z(d, 1, 3, 4, 4), z(d, 2, 3, 3, 3), nil, tensor.ConvTransposeConfig{})
		}, tensor.ErrShape, "tensor.ConvTranspose2d: input [1 3 4 4] has 3 channels, weight [2 3 3 3] expects 2"},
		{"conv transpose groups", func(d tensor.Device) {
			tensor.ConvTranspose2d(z(d, 1, 3, 4, 4), z(d, 3, 3, 3, 3), nil, tensor.ConvTransposeConfig{Groups: 2})
		}, tensor.ErrShape, "which 2 groups do not divide"},
		{"conv transpose bias", func(d tensor.Device) {
			tensor.ConvTranspose2d(z(d, 1, 4, 4, 4), z(d, 4, 3, 3, 3), z(d, 3), tensor.ConvTransposeConfig{Groups: 2})
		}, tensor.ErrShape, "bias [3] does not match weight [4 3 3 3] with 2 groups: want [6]"},
		{"conv transpose output padding", func(d tensor.Device) {
			tensor.ConvTranspose2d(z(d, 1, 2, 4, 4), z(d, 2, 3, 3, 3), nil, tensor.ConvTransposeConfig{Stride: []int{2}, OutputPadding: []int{2}})
		}, tensor.ErrArgument, "OutputPadding [2] must be smaller than the stride [2 2] or the dilation [1 1]"},
		{"conv transpose empty output", func(d tensor.Device) {
			tensor.ConvTranspose2d(z(d, 1, 2, 1, 1), z(d, 2, 3, 1, 1), nil, tensor.ConvTransposeConfig{Padding: []int{1}})
		}, tensor.ErrShape, "gives an empty output"},
	})
}

// TestNNConvRecordsOneNode checks that a convolution is one named graph
// node with its configuration as attributes, and that its output keeps no
// graph when nothing requires gradients.
func TestNNConvRecordsOneNode(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.Randn(ad, 1, 2, 5, 5)
		w := tensor.Randn(ad, 3, 2, 3, 3).RequireGrad()
		y := tensor.Conv2d(x, w, nil, tensor.ConvConfig{Stride: []int{2}, PaddingMode: "", Padding: []int{1}})
		n := y.Node()
		if n == nil || n.Op != "conv2d" {
			t.Fatalf("node %v, want conv2d", n)
		}
		if got := n.Attrs["stride"]; !equalInts(got, []int{2, 2}) {
			t.Errorf("stride attribute %v", got)
		}
		if got := n.Attrs["padding"]; !equalInts(got, []int{1, 1, 1, 1}) {
			t.Errorf("padding attribute %v", got)
		}
		if n.Inputs[0] == nil || n.Inputs[1] == nil || len(n.Inputs) != 2 {
			t.Errorf("inputs %v", n.Inputs)
		}
		plain := tensor.Conv2d(tensor.Randn(dev, 1, 2, 5, 5), tensor.Randn(dev, 3, 2, 3, 3), nil, tensor.ConvConfig{})
		if plain.Node() != nil {
			t.Errorf("conv of plain tensors recorded a node")
		}
	})
}

func equalInts(v any, want []int) bool {
	got, ok := v.([]int)
	if !ok || len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestNNReleasesTemporaries runs every op outside any Scope on the strict
// device and checks that the forward pass (without a graph) and the
// backward pass leave no buffer behind once the caller releases what it
// was given: the Scope around ordinary tests would hide such leaks.
func TestNNReleasesTemporaries(t *testing.T) {
	dev := tensor.MustDevice("strict")
	sb := strict.Default()
	r := func(seed uint64, shape ...int) *tensor.Tensor { return randFloat64(dev, seed, -1, 1, shape...) }
	type op struct {
		name   string
		inputs func() []*tensor.Tensor
		f      func(in []*tensor.Tensor) []*tensor.Tensor
	}
	one := func(x *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x} }
	ops := []op{
		{"conv2d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 4, 5, 5), r(2, 6, 2, 3, 3), r(3, 6)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return one(tensor.Conv2d(in[0], in[1], in[2], tensor.ConvConfig{Groups: 2, PaddingMode: "same"}))
			}},
		{"conv1d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 3, 7), r(2, 4, 3, 2)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return one(tensor.Conv1d(in[0], in[1], nil, tensor.ConvConfig{Stride: []int{2}}))
			}},
		{"conv_transpose2d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 4, 3, 3), r(2, 4, 1, 2, 2), r(3, 2)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return one(tensor.ConvTranspose2d(in[0], in[1], in[2], tensor.ConvTransposeConfig{Stride: []int{2}, Groups: 2}))
			}},
		{"max_pool2d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 3, 5, 5)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				v, i := tensor.MaxPool2d(in[0], tensor.PoolConfig{Kernel: []int{2}, CeilMode: true})
				return []*tensor.Tensor{v, i}
			}},
		{"avg_pool2d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 3, 5, 5)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return one(tensor.AvgPool2d(in[0], tensor.AvgPoolConfig{Kernel: []int{3}, Padding: []int{1}}))
			}},
		{"adaptive_avg_pool2d", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 3, 5, 5)} },
			func(in []*tensor.Tensor) []*tensor.Tensor { return one(tensor.AdaptiveAvgPool2d(in[0], 2, 3)) }},
		{"interpolate", func() []*tensor.Tensor { return []*tensor.Tensor{r(1, 2, 3, 5, 5)} },
			func(in []*tensor.Tensor) []*tensor.Tensor {
				return one(tensor.Interpolate(in[0], tensor.InterpolateConfig{Size: []int{7, 3}, Mode: "bilinear"}))
			}},
		{"embedding", func() []*tensor.Tensor {
			return []*tensor.Tensor{r(1, 5, 3), tensor.FromInt32s(dev, []int32{1, 4, 1, 0}, 2, 2)}
		}, func(in []*tensor.Tensor) []*tensor.Tensor { return one(tensor.EmbeddingPadded(in[0], in[1], 0)) }},
		{"attention", func() []*tensor.Tensor {
			return []*tensor.Tensor{r(1, 2, 3, 4), r(2, 2, 5, 4), r(3, 2, 5, 2), r(4, 3, 5)}
		}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return one(tensor.ScaledDotProductAttention(in[0], in[1], in[2], in[3], tensor.AttentionConfig{}))
		}},
		{"causal attention", func() []*tensor.Tensor {
			return []*tensor.Tensor{r(1, 2, 3, 4), r(2, 2, 5, 4), r(3, 2, 5, 2)}
		}, func(in []*tensor.Tensor) []*tensor.Tensor {
			return one(tensor.ScaledDotProductAttention(in[0], in[1], in[2], nil, tensor.AttentionConfig{Causal: true}))
		}},
	}
	release := func(ts ...*tensor.Tensor) {
		for _, x := range ts {
			x.Release()
		}
	}
	leaks := func(what string, mark uint64) {
		if err := dev.Sync(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, l := range sb.LiveSince(mark) {
			t.Errorf("%s: leaked %s", what, l)
		}
	}
	for _, o := range ops {
		in := o.inputs()
		mark := sb.Mark()
		release(o.f(in)...)
		leaks(o.name+" forward", mark)

		ad := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			ad[i] = x.ToDevice(dev.Autodiff())
			if x.DType().IsFloat() {
				ad[i].RequireGrad()
			}
		}
		outs := o.f(ad)
		seed := tensor.OnesLike(outs[0])
		mark = sb.Mark()
		grads := outs[0].BackwardWith(seed)
		grads.Release()
		leaks(o.name+" backward", mark)
		release(seed)
		release(outs...)
		release(ad...)
		release(in...)
	}
}

// TestNNHalfPrecision runs the ops on float16 and bfloat16 inputs and
// compares with float32 (backends compute halves in float32).
func TestNNHalfPrecision(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := randFloat64(dev, 1, -1, 1, 1, 2, 5, 5).To(tensor.Float32)
		w := randFloat64(dev, 2, -1, 1, 3, 2, 3, 3).To(tensor.Float32)
		ops := map[string]func(x, w *tensor.Tensor) *tensor.Tensor{
			"conv2d": func(x, w *tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2d(x, w, nil, tensor.ConvConfig{Padding: []int{1}})
			},
			"max_pool2d": func(x, _ *tensor.Tensor) *tensor.Tensor {
				v, _ := tensor.MaxPool2d(x, tensor.PoolConfig{Kernel: []int{2}})
				return v
			},
			"avg_pool2d": func(x, _ *tensor.Tensor) *tensor.Tensor {
				return tensor.AvgPool2d(x, tensor.AvgPoolConfig{Kernel: []int{3}, Padding: []int{1}})
			},
			"interpolate": func(x, _ *tensor.Tensor) *tensor.Tensor {
				return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{7, 4}, Mode: "bilinear"})
			},
			"attention": func(x, _ *tensor.Tensor) *tensor.Tensor {
				return tensor.ScaledDotProductAttention(x, x, x, nil, tensor.AttentionConfig{Causal: true})
			},
		}
		for name, f := range ops {
			want := f(x, w)
			for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
				got := f(x.To(dt), w.To(dt))
				if got.DType() != dt {
					t.Errorf("%s %s: result dtype %s", name, dt, got.DType())
				}
				assertValues(t, name+" "+dt.String(), got, want.Shape(), want.Float64s(), 0.05, 0.05)
			}
		}
	})
}

// BenchmarkConv2dForwardBackward times a 3×3 convolution layer's forward
// and backward passes on the CPU in float32 and reports GFLOP/s (counting
// 2·N·O·C·9·H·W per pass, three passes).
func BenchmarkConv2dForwardBackward(b *testing.B) {
	dev := tensor.CPU().Autodiff()
	const n, c, o, h, w = 8, 32, 32, 32, 32
	x := tensor.Randn(dev, n, c, h, w).RequireGrad()
	k := tensor.Randn(dev, o, c, 3, 3).RequireGrad()
	b.ResetTimer()
	for range b.N {
		tensor.Scope(func() {
			y := tensor.Conv2d(x, k, nil, tensor.ConvConfig{Padding: []int{1}})
			y.Backward()
		})
	}
	flops := 3 * 2 * float64(n*o*c*9*h*w)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

package nn_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

func TestVolumetricLayersStateDict(t *testing.T) {
	dev := tensor.CPU()
	cases := []struct {
		name  string
		layer any
		want  map[string][]int
	}{
		{"conv3d", nn.NewConv3d(dev, 4, 6, 3, nn.ConvConfig{Groups: 2, Kernel: []int{3, 1, 2}}),
			map[string][]int{"weight": {6, 2, 3, 1, 2}, "bias": {6}}},
		{"conv3d no bias", nn.NewConv3d(dev, 2, 3, 2, nn.ConvConfig{NoBias: true}), map[string][]int{"weight": {3, 2, 2, 2, 2}}},
		{"conv_transpose3d", nn.NewConvTranspose3d(dev, 4, 6, 2, nn.ConvTransposeConfig{Groups: 2}),
			map[string][]int{"weight": {4, 3, 2, 2, 2}, "bias": {6}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := nn.StateDict(c.layer)
			if len(sd) != len(c.want) {
				t.Fatalf("state dict has %d entries, want %d", len(sd), len(c.want))
			}
			for name, shape := range c.want {
				got, ok := sd[name]
				if !ok || fmt.Sprint(got.Shape()) != fmt.Sprint(shape) {
					t.Errorf("%s: got %v, want shape %v", name, got, shape)
				}
			}
		})
	}
}

func TestVolumetricLayersForward(t *testing.T) {
	dev := tensor.CPU()
	x := tensor.Randn(dev, 2, 4, 5, 6, 7)
	conv := nn.NewConv3d(dev, 4, 2, 3, nn.ConvConfig{Stride: []int{1, 2, 2}, Padding: []int{1}})
	want := tensor.Conv3d(x, conv.Weight.Tensor, conv.Bias.Tensor, tensor.ConvConfig{Stride: []int{1, 2, 2}, Padding: []int{1}})
	closeTo(t, "Conv3d", conv.Forward(x), want)
	same := nn.NewConv3d(dev, 4, 2, 2, nn.ConvConfig{Same: true, PaddingMode: "replicate"})
	if got := same.Forward(x).Shape(); fmt.Sprint(got) != "[2 2 5 6 7]" {
		t.Errorf("Conv3d same replicate: shape %v, want [2 2 5 6 7]", got)
	}
	convT := nn.NewConvTranspose3d(dev, 4, 3, 2, nn.ConvTransposeConfig{Stride: []int{2}})
	if got := convT.Forward(x).Shape(); fmt.Sprint(got) != "[2 3 10 12 14]" {
		t.Errorf("ConvTranspose3d: shape %v, want [2 3 10 12 14]", got)
	}
	mp := nn.NewMaxPool3d(2, tensor.PoolConfig{Stride: []int{1, 2, 2}})
	wantMax, _ := tensor.MaxPool3d(x, tensor.PoolConfig{Kernel: []int{2}, Stride: []int{1, 2, 2}})
	closeTo(t, "MaxPool3d", mp.Forward(x), wantMax)
	ap := nn.NewAvgPool3d(3, tensor.AvgPoolConfig{Padding: []int{1}, ExcludePad: true})
	closeTo(t, "AvgPool3d", ap.Forward(x), tensor.AvgPool3d(x, tensor.AvgPoolConfig{Kernel: []int{3}, Padding: []int{1}, ExcludePad: true}))
}

func closeTo(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range g {
		if d := g[i] - w[i]; d > 1e-5 || d < -1e-5 {
			t.Fatalf("%s: element %d is %g, want %g", what, i, g[i], w[i])
		}
	}
}

func TestVolumetricLayersBadInputs(t *testing.T) {
	dev := tensor.CPU()
	cases := []struct {
		name string
		fn   func()
		err  error
	}{
		{"conv3d two kernel sizes", func() { nn.NewConv3d(dev, 1, 1, 0, nn.ConvConfig{Kernel: []int{1, 2}}) }, tensor.ErrArgument},
		{"conv3d wrong channels", func() { nn.NewConv3d(dev, 2, 1, 1).Forward(tensor.Zeros(dev, 1, 3, 2, 2, 2)) }, tensor.ErrShape},
		{"max_pool3d 2-D input", func() { nn.NewMaxPool3d(2).Forward(tensor.Zeros(dev, 3, 2, 2)) }, tensor.ErrShape},
		{"avg_pool3d padding over half", func() { nn.NewAvgPool3d(2, tensor.AvgPoolConfig{Padding: []int{2}}) }, tensor.ErrArgument},
		{"conv_transpose3d output padding", func() {
			nn.NewConvTranspose3d(dev, 1, 1, 2, nn.ConvTransposeConfig{OutputPadding: []int{1}})
		}, tensor.ErrArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				e, ok := recover().(*tensor.Error)
				if !ok || !errors.Is(e, c.err) {
					t.Fatalf("got %v, want a *tensor.Error wrapping %v", e, c.err)
				}
			}()
			c.fn()
		})
	}
}

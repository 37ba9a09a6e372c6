package onnx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// scopeMLP is a feed-forward block whose middle op (a cumulative product)
// has no ONNX form when odd is set.
type scopeMLP struct {
	FC1, FC2 *nn.Linear
	odd      bool
}

func (m *scopeMLP) Forward(x *tensor.Tensor) *tensor.Tensor {
	h := m.FC1.Forward(x).Tanh()
	if m.odd {
		h = h.Cumprod(-1)
	}
	return m.FC2.Forward(h)
}

// scopeLayer is a residual layer around a scopeMLP; with lead set its
// first op has no ONNX form.
type scopeLayer struct {
	Norm *nn.LayerNorm
	MLP  *scopeMLP
	lead bool
}

func (l *scopeLayer) Forward(x *tensor.Tensor) *tensor.Tensor {
	if l.lead {
		x = x.Cumprod(-1)
	}
	return x.Add(l.MLP.Forward(l.Norm.Forward(x)))
}

// scopeEncoder runs its layers in turn.
type scopeEncoder struct{ Layers []*scopeLayer }

func (e *scopeEncoder) Forward(x *tensor.Tensor) *tensor.Tensor {
	for _, l := range e.Layers {
		x = l.Forward(x)
	}
	return x
}

// scopeModel is an input projection, an encoder and a head.
type scopeModel struct {
	In      *nn.Linear
	Encoder *scopeEncoder
	Head    nn.Module
}

func (m *scopeModel) Forward(x *tensor.Tensor) *tensor.Tensor {
	return m.Head.Forward(m.Encoder.Forward(m.In.Forward(x)))
}

// cumprodHead is a head whose own Forward uses an op without ONNX form.
type cumprodHead struct{ Out *nn.Linear }

func (h *cumprodHead) Forward(x *tensor.Tensor) *tensor.Tensor { return h.Out.Forward(x).Cumprod(-1) }

// TestExportNamesModuleOfMissingOp checks that an op without an ONNX form
// fails the export with its name and the dotted path of the module that
// ran it, for each of several layers of one type, for a module behind an
// interface, and for the model's own Forward.
func TestExportNamesModuleOfMissingOp(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(8)
	build := func(odd int, head nn.Module) *scopeModel {
		m := &scopeModel{In: nn.NewLinear(dev, 4, 6), Encoder: &scopeEncoder{}, Head: head}
		for i := range 3 {
			m.Encoder.Layers = append(m.Encoder.Layers, &scopeLayer{nn.NewLayerNorm(dev, []int{6}),
				&scopeMLP{nn.NewLinear(dev, 6, 8), nn.NewLinear(dev, 8, 6), i == odd}, false})
		}
		return m
	}
	lead := build(-1, nn.NewLinear(dev, 6, 2))
	lead.Encoder.Layers[1].lead = true
	for _, c := range []struct {
		name  string
		model nn.Module
		says  string
	}{
		{"the first layer", build(0, nn.NewLinear(dev, 6, 2)), `op "cumprod" in module "Encoder.Layers.0.MLP" has no ONNX form`},
		{"the second layer", build(1, nn.NewLinear(dev, 6, 2)), `op "cumprod" in module "Encoder.Layers.1.MLP" has no ONNX form`},
		{"the last layer", build(2, nn.NewLinear(dev, 6, 2)), `op "cumprod" in module "Encoder.Layers.2.MLP" has no ONNX form`},
		{"the first op of the second layer", lead, `op "cumprod" in module "Encoder.Layers.1" has no ONNX form`},
		{"a head behind an interface", build(-1, &cumprodHead{nn.NewLinear(dev, 6, 2)}), `op "cumprod" in module "Head" has no ONNX form`},
		{"the model's own Forward", &fnModel{f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Cumprod(-1) }},
			`op "cumprod" in the model's own Forward has no ONNX form`},
	} {
		_, err := onnx.Trace(c.model, tensor.Randn(dev, 3, 4))
		if !errors.Is(err, onnx.ErrExport) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrExport saying %s", c.name, err, c.says)
		}
		nn.Release(c.model)
	}
	// Without the odd op the same model exports, and scopes are off again.
	m := build(-1, nn.NewLinear(dev, 6, 2))
	defer nn.Release(m)
	if _, err := onnx.Trace(m, tensor.Randn(dev, 3, 4)); err != nil {
		t.Fatal(err)
	}
	x := tensor.Randn(dev.Autodiff(), 2, 3).RequireGrad()
	if s := x.Tanh().Node().Scope; s != "" {
		t.Errorf("an op recorded after Export has scope %q, want none", s)
	}
}

package nn

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/kiln-ml/kiln/tensor"
)

// Sequential chains modules: Forward passes its input through each in
// turn, as torch.nn.Sequential. It is a slice, so its parameters are named
// by position exactly as PyTorch names them: a Sequential model has the
// state-dict keys "0.weight", "0.bias", "2.weight" …, and a Sequential
// held in a field Features gives "Features.0.weight". Layers without
// parameters (activations, pooling) keep their positions, as in PyTorch.
// Append to it and index it like any slice.
type Sequential []Module

// NewSequential returns a Sequential of layers. It panics with ErrArgument
// when a layer is nil.
func NewSequential(layers ...Module) Sequential {
	for i, l := range layers {
		if l == nil {
			argError("nn.NewSequential", "layer %d is nil", i)
		}
		if v := reflect.ValueOf(l); v.Kind() == reflect.Pointer && v.IsNil() {
			argError("nn.NewSequential", "layer %d is a nil %T", i, l)
		}
	}
	return append(Sequential(nil), layers...)
}

// Forward applies the layers in order. A layer that panics with a
// *tensor.Error (wrong input shape, say) panics with the same Op and kind,
// its message naming the layer's position: "... [Sequential layer 2]". A
// Conv2d followed by a ReLU runs as tensor.Conv2dActivation: the same
// graph nodes and bits, the activation applied as the convolution writes
// its output where the backend fuses the two (but for a tracer, which
// sees the two layers run one at a time: tensor.Observing).
func (s Sequential) Forward(x *tensor.Tensor) *tensor.Tensor {
	i := 0
	defer func() {
		if r := recover(); r != nil {
			var te *tensor.Error
			if err, ok := r.(error); ok && errors.As(err, &te) {
				panic(&tensor.Error{Op: te.Op, Msg: fmt.Sprintf("%s [Sequential layer %d]", te.Msg, i), Err: te.Err})
			}
			panic(r)
		}
	}()
	for ; i < len(s); i++ {
		if c, ok := s[i].(*Conv2d); ok && i+1 < len(s) && !tensor.Observing() {
			if _, relu := s[i+1].(ReLU); relu {
				x = c.forwardAct(x, "relu")
				i++
				continue
			}
		}
		x = s[i].Forward(x)
	}
	return x
}

// Flatten merges dimensions StartDim through EndDim (inclusive, negative
// counting from the end) into one, as torch.nn.Flatten; NewFlatten's
// default, dimensions 1 to −1, turns [N, C, H, W] into [N, C·H·W]. It is
// a view where the layout allows, a copy otherwise.
type Flatten struct {
	StartDim int `kiln:"-"`
	EndDim   int `kiln:"-"`
}

// NewFlatten returns a Flatten: with no arguments from dimension 1 to the
// last (PyTorch's default), with one from that dimension to the last,
// with two between them. It panics with ErrArgument for more arguments.
func NewFlatten(dims ...int) Flatten {
	switch len(dims) {
	case 0:
		return Flatten{StartDim: 1, EndDim: -1}
	case 1:
		return Flatten{StartDim: dims[0], EndDim: -1}
	case 2:
		return Flatten{StartDim: dims[0], EndDim: dims[1]}
	}
	argError("nn.NewFlatten", "takes at most 2 dimensions (start, end), got %v", dims)
	return Flatten{}
}

// Forward flattens x. It panics with a *tensor.Error whose Op is
// "nn.Flatten" when x has too few dimensions for StartDim and EndDim, or
// they are in the wrong order.
func (f Flatten) Forward(x *tensor.Tensor) *tensor.Tensor {
	r := x.Dims()
	s, e := f.StartDim, f.EndDim
	n := max(r, 1) // a 0-d tensor flattens as if 1-d, as in PyTorch
	if s < 0 {
		s += n
	}
	if e < 0 {
		e += n
	}
	if s < 0 || s >= n || e < 0 || e >= n || s > e {
		shapeError("Flatten", "expects input with dimensions %d to %d (start before end), got %v", f.StartDim,
			f.EndDim, x.Shape())
	}
	return x.Flatten(f.StartDim, f.EndDim)
}

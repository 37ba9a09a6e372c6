package nn

import "github.com/kiln-ml/kiln/tensor"

// Unfold extracts sliding blocks into columns, torch.nn.Unfold: [N, C, H, W]
// (or [C, H, W]) becomes [N, C·KH·KW, L] (see tensor.Unfold). It holds no
// state.
type Unfold struct {
	Config tensor.FoldConfig `kiln:"-"`
}

// NewUnfold returns an Unfold with a kernel×kernel block; cfg, if given,
// sets the dilation, padding and stride (one value or two each), and a
// non-empty cfg.Kernel replaces the square block. It panics with
// ErrArgument for a non-positive kernel, lists of another length, or
// values out of range (stride and dilation below 1, padding below 0).
func NewUnfold(kernel int, cfg ...tensor.FoldConfig) Unfold {
	c := foldConfig("nn.NewUnfold", kernel, cfg)
	return Unfold{Config: c}
}

// Forward unfolds x; it panics as tensor.Unfold does.
func (l Unfold) Forward(x *tensor.Tensor) *tensor.Tensor { return tensor.Unfold(x, l.Config) }

// Fold combines columns into an image, summing overlaps, torch.nn.Fold:
// [N, C·KH·KW, L] (or [C·KH·KW, L]) becomes [N, C, H, W] with
// [H, W] = OutputSize (see tensor.Fold). It holds no state.
type Fold struct {
	OutputSize []int             `kiln:"-"`
	Config     tensor.FoldConfig `kiln:"-"`
}

// NewFold returns a Fold into images of outputSize (one value or two)
// with a kernel×kernel block; cfg sets the rest as for NewUnfold. It
// panics with ErrArgument for a non-positive or malformed output size and
// as NewUnfold otherwise.
func NewFold(outputSize []int, kernel int, cfg ...tensor.FoldConfig) Fold {
	const op = "nn.NewFold"
	c := foldConfig(op, kernel, cfg)
	return Fold{OutputSize: perDim(op, "output size", outputSize, 2, 0, 1), Config: c}
}

// Forward folds x; it panics as tensor.Fold does (ErrShape when x's rows
// or block count do not fit the kernel and output size).
func (l Fold) Forward(x *tensor.Tensor) *tensor.Tensor { return tensor.Fold(x, l.OutputSize, l.Config) }

func foldConfig(op string, kernel int, cfg []tensor.FoldConfig) tensor.FoldConfig {
	var c tensor.FoldConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Kernel = poolKernel(op, kernel, c.Kernel)
	perDim(op, "Kernel", c.Kernel, 2, 1, 1)
	perDim(op, "Dilation", c.Dilation, 2, 1, 1)
	perDim(op, "Padding", c.Padding, 2, 0, 0)
	perDim(op, "Stride", c.Stride, 2, 1, 1)
	return c
}

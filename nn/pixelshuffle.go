package nn

import "github.com/kiln-ml/kiln/tensor"

// PixelShuffle rearranges [*, C·r², H, W] into [*, C, H·r, W·r],
// torch.nn.PixelShuffle with upscale factor Factor (see
// tensor.PixelShuffle). It holds no state.
type PixelShuffle struct {
	Factor int `kiln:"-"`
}

// NewPixelShuffle returns a PixelShuffle with upscale factor r. It panics
// with ErrArgument when r is not positive.
func NewPixelShuffle(r int) PixelShuffle {
	if r < 1 {
		argError("nn.NewPixelShuffle", "upscale factor %d must be positive", r)
	}
	return PixelShuffle{Factor: r}
}

// Forward shuffles x; it panics as tensor.PixelShuffle does (ErrShape when
// x has fewer than 3 dimensions or its channels are not a multiple of r²).
func (l PixelShuffle) Forward(x *tensor.Tensor) *tensor.Tensor {
	return tensor.PixelShuffle(x, l.Factor)
}

// PixelUnshuffle rearranges [*, C, H·r, W·r] into [*, C·r², H, W],
// torch.nn.PixelUnshuffle with downscale factor Factor (see
// tensor.PixelUnshuffle). It holds no state.
type PixelUnshuffle struct {
	Factor int `kiln:"-"`
}

// NewPixelUnshuffle returns a PixelUnshuffle with downscale factor r. It
// panics with ErrArgument when r is not positive.
func NewPixelUnshuffle(r int) PixelUnshuffle {
	if r < 1 {
		argError("nn.NewPixelUnshuffle", "downscale factor %d must be positive", r)
	}
	return PixelUnshuffle{Factor: r}
}

// Forward unshuffles x; it panics as tensor.PixelUnshuffle does (ErrShape
// when x has fewer than 3 dimensions or r does not divide its height and
// width).
func (l PixelUnshuffle) Forward(x *tensor.Tensor) *tensor.Tensor {
	return tensor.PixelUnshuffle(x, l.Factor)
}

package tensor

// PixelShuffle and PixelUnshuffle are pure data movement: a reshape that
// splits the channel (or spatial) axes, a permutation and a reshape that
// merges them again. Each is recorded as one node, whose backward pass is
// the other op applied to the gradient.

// PixelShuffle rearranges x [*, C·r², H, W] into [*, C, H·r, W·r], as
// torch.nn.functional.pixel_shuffle with upscale factor r: output
// (c, h·r + i, w·r + j) is input (c·r² + i·r + j, h, w). Leading dimensions
// are batch dimensions. It works on every dtype; gradients flow to x. It
// panics with ErrArgument when r is not positive and with ErrShape when x
// has fewer than 3 dimensions or its channels are not a multiple of r².
func PixelShuffle(x *Tensor, r int) *Tensor {
	const op = "PixelShuffle"
	x.live(op)
	if r < 1 {
		fail(op, ErrArgument, "upscale factor %d must be positive", r)
	}
	rank := len(x.shape)
	if rank < 3 {
		fail(op, ErrShape, "input %s must be [*, C·r², H, W] with at least 3 dimensions", shapeString(x.shape))
	}
	c := x.shape[rank-3]
	if c%(r*r) != 0 {
		fail(op, ErrShape, "input %s has %d channels, not a multiple of the upscale factor squared %d", shapeString(x.shape), c, r*r)
	}
	out := pixelShuffle(op, x, r)
	return record("pixel_shuffle", map[string]any{"upscale_factor": r}, out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		return []*Tensor{pixelUnshuffle(op, g, r)}
	})
}

// PixelUnshuffle is the inverse of PixelShuffle: it rearranges
// x [*, C, H·r, W·r] into [*, C·r², H, W], as
// torch.nn.functional.pixel_unshuffle with downscale factor r. It panics
// with ErrArgument when r is not positive and with ErrShape when x has
// fewer than 3 dimensions or its height or width is not a multiple of r.
func PixelUnshuffle(x *Tensor, r int) *Tensor {
	const op = "PixelUnshuffle"
	x.live(op)
	if r < 1 {
		fail(op, ErrArgument, "downscale factor %d must be positive", r)
	}
	rank := len(x.shape)
	if rank < 3 {
		fail(op, ErrShape, "input %s must be [*, C, H·r, W·r] with at least 3 dimensions", shapeString(x.shape))
	}
	h, w := x.shape[rank-2], x.shape[rank-1]
	if h%r != 0 || w%r != 0 {
		fail(op, ErrShape, "input %s has height %d and width %d, which the downscale factor %d must divide",
			shapeString(x.shape), h, w, r)
	}
	out := pixelUnshuffle(op, x, r)
	return record("pixel_unshuffle", map[string]any{"downscale_factor": r}, out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		return []*Tensor{pixelShuffle(op, g, r)}
	})
}

// pixelShuffle returns a new, unrecorded [*, C, H·r, W·r] tensor.
func pixelShuffle(op string, x *Tensor, r int) *Tensor {
	rank := len(x.shape)
	lead := x.shape[:rank-3]
	c, h, w := x.shape[rank-3]/(r*r), x.shape[rank-2], x.shape[rank-1]
	split := append(append([]int(nil), lead...), c, r, r, h, w)
	b := len(lead)
	perm := make([]int, 0, b+5)
	for i := range b {
		perm = append(perm, i)
	}
	perm = append(perm, b, b+3, b+1, b+4, b+2) // C, H, r, W, r
	return pixelPermute(op, x, split, perm, append(append([]int(nil), lead...), c, h*r, w*r))
}

// pixelUnshuffle returns a new, unrecorded [*, C·r², H, W] tensor.
func pixelUnshuffle(op string, x *Tensor, r int) *Tensor {
	rank := len(x.shape)
	lead := x.shape[:rank-3]
	c, h, w := x.shape[rank-3], x.shape[rank-2]/r, x.shape[rank-1]/r
	split := append(append([]int(nil), lead...), c, h, r, w, r)
	b := len(lead)
	perm := make([]int, 0, b+5)
	for i := range b {
		perm = append(perm, i)
	}
	perm = append(perm, b, b+2, b+4, b+1, b+3) // C, r, r, H, W
	return pixelPermute(op, x, split, perm, append(append([]int(nil), lead...), c*r*r, h, w))
}

// pixelPermute reshapes x to split, permutes it by perm and copies it into
// a new contiguous tensor of shape out.
func pixelPermute(op string, x *Tensor, split, perm, out []int) *Tensor {
	s := rawReshape(op, x, split)
	p := rawPermute(op, s, perm)
	s.Release()
	c := newTensor(op, x.dev, x.dtype, p.shape)
	c.backend().Copy(c.view(), p.view())
	p.Release()
	return nnReshapeOwned(op, c, out)
}

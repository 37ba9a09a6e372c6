package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// Embedding returns the rows of weight [V, D] picked by indices (any shape,
// integer dtype): an [..., D] tensor with out[i…] = weight[indices[i…]], as
// torch.nn.functional.embedding. The gradient of weight adds each output
// row's gradient into its row, so repeated indices accumulate (in the order
// of the positions). Where the backend has fused embedding kernels
// (backends.EmbeddingFusion: the CPU's) the lookup copies whole rows and the
// gradient is one pass that writes each row once from the positions that
// picked it (zeros for the others); elsewhere they are a Gather through a
// broadcast view of the indices and a ScatterAdd into zeros. It panics with
// ErrShape when weight is not 2-D and ErrDType for non-integer indices. An
// index outside [−V, V) is a device error reported at the next sync;
// negative indices count from the end (PyTorch rejects them).
func Embedding(weight, indices *Tensor) *Tensor {
	return nnEmbedding("Embedding", weight, indices, -1, false)
}

// EmbeddingPadded is Embedding whose row paddingIndex (negative counts
// from the end) receives no gradient, as PyTorch's padding_idx: the row is
// still read in the forward pass, so it is usually initialised to zeros.
// It panics with ErrArgument when paddingIndex is outside [−V, V).
func EmbeddingPadded(weight, indices *Tensor, paddingIndex int) *Tensor {
	return nnEmbedding("EmbeddingPadded", weight, indices, paddingIndex, true)
}

func nnEmbedding(op string, weight, indices *Tensor, pad int, padded bool) *Tensor {
	sameDevice(op, weight, indices)
	if len(weight.shape) != 2 {
		fail(op, ErrShape, "weight %s must be [num_embeddings, embedding_dim]", shapeString(weight.shape))
	}
	if !indices.dtype.IsInt() {
		fail(op, ErrDType, "indices %s are %s; they must be integers (int64, int32, int16, int8 or uint8)", shapeString(indices.shape),
			indices.dtype)
	}
	v, d := weight.shape[0], weight.shape[1]
	if padded {
		if pad < -v || pad >= v {
			fail(op, ErrArgument, "padding index %d out of range for weight %s", pad, shapeString(weight.shape))
		}
		if pad < 0 {
			pad += v
		}
	}
	m := indices.NumElements()
	idx := indices
	if indices.dtype != Int64 {
		idx = rawCast(op, indices, Int64)
	}
	col := rawReshape(op, idx, []int{m, 1})
	if idx != indices {
		idx.Release()
	}
	// index [M, D]: each row's index repeated along D by a zero stride
	indexView := func() backends.View {
		iv := col.view()
		iv.Shape, iv.Strides = []int{m, d}, []int{col.strides[0], 0}
		return iv
	}
	out2 := newTensor(op, weight.dev, weight.dtype, []int{m, d})
	if f, ok := embeddingFusion(weight); ok && weight.IsContiguous() {
		ic := rawContiguous(op, col)
		iv := ic.view()
		iv.Shape, iv.Strides = []int{m}, []int{1}
		f.EmbeddingForward(out2.view(), weight.view(), iv)
		ic.Release()
	} else {
		out2.backend().Gather(out2.view(), weight.view(), indexView(), 0)
	}
	out := nnReshapeOwned(op, out2, append(indices.Shape(), d))
	var attrs map[string]any
	if padded {
		attrs = map[string]any{"padding_idx": pad}
	}
	out = record("embedding", attrs, out, []*Tensor{weight, indices}, func(g *Tensor) []*Tensor {
		skip := -1
		if padded {
			skip = pad
		}
		if dw, ok := embeddingGradFused(op, g, col, v, d, skip); ok {
			return []*Tensor{castGrad(dw, weight), nil}
		}
		g2 := rawReshape(op, g, []int{m, d})
		dw := rawFull(op, g.dev, g.dtype, []int{v, d}, 0)
		nnScatterAdd(dw, indexView(), g2.view(), 0)
		g2.Release()
		if padded {
			row := dw.view()
			row.Shape, row.Strides, row.Offset = []int{d}, []int{1}, pad*d
			dw.backend().Fill(row, 0)
		}
		return []*Tensor{castGrad(dw, weight), nil}
	})
	if out.node == nil {
		col.Release()
	}
	return out
}

// embeddingGradFused returns the gradient of the weight [v, d] of an
// embedding whose output gradient is g and whose indices are col [m, 1]
// through the backend's fused kernel, or false where it has none (or g is
// not Float32 or Float64).
func embeddingGradFused(op string, g, col *Tensor, v, d, skip int) (*Tensor, bool) {
	f, ok := embeddingFusion(g)
	if !ok {
		return nil, false
	}
	m := col.NumElements()
	gc := rawContiguous(op, g)
	ic := rawContiguous(op, col)
	dw := newTensor(op, g.dev.Inner(), g.dtype, []int{v, d})
	gv, iv := gc.view(), ic.view()
	gv.Shape, gv.Strides = []int{m, d}, []int{d, 1}
	iv.Shape, iv.Strides = []int{m}, []int{1}
	f.EmbeddingBackward(dw.view(), gv, iv, skip)
	gc.Release()
	ic.Release()
	return dw, true
}

// embeddingFusion returns the backend's fused embedding kernels when they
// take t's dtype.
func embeddingFusion(t *Tensor) (backends.EmbeddingFusion, bool) {
	if composeOnly.Load() || (t.dtype != Float32 && t.dtype != Float64) {
		return nil, false
	}
	f, ok := t.backend().(backends.EmbeddingFusion)
	return f, ok
}

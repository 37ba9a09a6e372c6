package backends

// Optional fused kernels for transformer models: attention, layer and RMS
// normalisation, embedding gradients and a multi-tensor Adam step. Package
// tensor looks for each interface with a type assertion and otherwise
// composes the same results from the primitives of Backend. Unlike Fusion
// and CrossEntropyFusion, these kernels may differ from the composition
// within rounding (their sums run in another order, online softmax
// rescales partial sums), but, as every kernel, never with the number of
// threads.

// AttentionGeometry describes one fused attention call (AttentionFusion):
// Batch independent problems (the product of the batch dimensions) of Lq
// queries and Lk keys, D features per query and key and Dv per value.
type AttentionGeometry struct {
	// Batch is the number of problems, Lq and Lk the queries and keys per
	// problem, D the features of a query or key and Dv those of a value.
	Batch, Lq, Lk, D, Dv int
	// Scale multiplies the scores q·kᵀ.
	Scale float64
	// Causal lets query i attend only to keys j ≤ i + CausalOffset.
	Causal bool
	// CausalOffset shifts the causal diagonal: 0 is the lower triangle
	// aligned at the top-left corner (PyTorch's is_causal), Lk − Lq aligns
	// it at the end of the keys.
	CausalOffset int
}

// AttentionFusion is an optional interface for scaled dot-product attention,
// out = softmax(q·kᵀ·scale + mask)·v, computed a tile of queries and keys
// at a time with an online softmax (FlashAttention), so that the Lq×Lk
// scores are never held in memory, and its gradient, which recomputes each
// tile's probabilities from the per-query log-sum-exp of the scores kept by
// the forward pass.
//
// Every view has the same leading batch dimensions, Batch elements in all:
// q [batch…, Lq, D], k [batch…, Lk, D], v [batch…, Lk, Dv], out
// [batch…, Lq, Dv] and lse [batch…, Lq], of one dtype, Float32 or Float64.
// Their strides are free (so heads split out of a projection are read and
// written in place, and a stride of 0 broadcasts an input) except that the
// last dimension of q, k, v, out and the gradients must have stride 1; lse
// is contiguous. mask has no Buf for none, or is [batch…, Lq, Lk] with any
// strides, Bool (true: may attend) or of q's dtype (added to the scores). A
// query that may attend to no key gives NaN, as the composition does.
type AttentionFusion interface {
	// AttentionForward writes out and lse (the log of the softmax's
	// denominator, after the row maximum; −Inf for a row with no key).
	AttentionForward(out, lse, q, k, v, mask View, g AttentionGeometry)
	// AttentionBackward overwrites dq, dk and dv (shaped as q, k and v;
	// any of them without Buf is not computed) with the gradients of the
	// attention for the output gradient dout, given the forward pass's out
	// and lse.
	AttentionBackward(dq, dk, dv, q, k, v, mask, out, dout, lse View, g AttentionGeometry)
}

// NormFusion is an optional interface for layer normalisation and RMS
// normalisation over the last dimension of x [Rows, N], Float32 or Float64,
// in one pass over each row for its statistics and one for the output, and
// their gradients in one kernel. Every view is contiguous and of x's dtype;
// weight and bias are [N], or have no Buf for none; mean and rstd are
// [Rows]. Statistics accumulate at least in the dtype's precision (the
// CPU's AVX-512 float32 rows in float32 lanes, its other rows in float64).
type NormFusion interface {
	// LayerNormForward writes y = (x − mean)·rstd·weight + bias, and the
	// per-row mean and rstd = 1/√(var + eps) (biased variance).
	LayerNormForward(y, mean, rstd, x, weight, bias View, eps float64)
	// LayerNormBackward overwrites dx, dweight and dbias (each skipped
	// when it has no Buf) with the gradients of LayerNormForward for the
	// output gradient dy. dweight and dbias sum over the rows in chunks of
	// a fixed size whose partial sums are added in order.
	LayerNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight View)
	// RMSNormForward writes y = x·rstd·weight with rstd = 1/√(mean(x²) +
	// eps), and rstd.
	RMSNormForward(y, rstd, x, weight View, eps float64)
	// RMSNormBackward overwrites dx and dweight (skipped without Buf) with
	// the gradients of RMSNormForward for the output gradient dy.
	RMSNormBackward(dx, dweight, dy, x, rstd, weight View)
}

// EmbeddingFusion is an optional interface for an embedding lookup and its
// gradient by whole rows, without a gather or scatter element by element
// over an index broadcast along the rows. Views are contiguous: the table
// w and its gradient dw [V, D] and the rows out and dy [M, D] of one dtype,
// Float32 or Float64, and index [M], Int64, with values in [−V, V)
// (negative counting from the end). An index out of range is an error
// reported as Gather's is. Results are exactly the composition's.
type EmbeddingFusion interface {
	// EmbeddingForward copies row index[i] of w into row i of out.
	EmbeddingForward(out, w, index View)
	// EmbeddingBackward zeroes dw and adds each row i of dy to row
	// index[i] of it, rows receiving several in the order of i. Row skip
	// (when in [0, V)) stays zero.
	EmbeddingBackward(dw, dy, index View, skip int)
}

// MultiAdamFusion is an optional interface for Adam's update of many
// parameters in one call: AdamFusion's update applied to each entry of ps
// with the hyper-parameters hs (one per parameter; the update is in
// place: each parameter and its moments are read and written in the same
// views). The moments m and v are read unless hs[i].First; each view is
// contiguous, of one dtype (Float32 or Float64) per entry, and the views of
// an entry share one shape. Results are bit-identical to AdamFusion's.
type MultiAdamFusion interface {
	// AdamSteps updates ps[i], ms[i] and vs[i] in place from gs[i] with
	// hs[i], for every i; slices of different lengths are an error.
	AdamSteps(ps, gs, ms, vs []View, hs []AdamHyper)
}

// LinearFusion is an optional interface for a matrix product with a bias
// added to every row, out = x·w + bias, as a linear layer computes it: x
// [M, K] and w [K, N] with any strides (as Matmul's operands), bias [N]
// and out [M, N] contiguous, all Float32 or Float64. Each element is
// Matmul's sum plus its column's bias, added once: bit for bit the product
// followed by Binary's Add, without a second pass over the output.
type LinearFusion interface {
	// MatmulBias overwrites out with x·w + bias.
	MatmulBias(out, x, w, bias View)
}

// LinearActFusion is an optional interface for a linear layer followed by
// an activation, out = op(x·w + bias), with the product's operands as in
// LinearFusion and out and pre [M, N] contiguous of the same dtype. pre
// receives x·w + bias, bit for bit MatmulBias, and out op(pre), bit for bit
// Unary(op) of pre: the activation runs on each block of rows of the
// product while it is still in cache instead of in a pass of its own. pre
// is kept because the gradient is UnaryGrad(op) of it. The ops are Relu,
// Gelu, GeluTanh, Silu, Sigmoid and Tanh (IsLinearAct); any other is
// refused as a bad shape is.
type LinearActFusion interface {
	// MatmulBiasAct overwrites pre with x·w + bias and out with op(pre).
	MatmulBiasAct(out, pre, x, w, bias View, op UnaryOp)
}

// UnaryOutputGrad is an optional interface for the backward of the unary
// ops whose derivative is a function of their output (UnaryDef.DFOut:
// Exp, Tanh, Sigmoid): out = g·DFOut(y) element-wise, y being
// Unary(op)'s result, as PyTorch's autograd computes them. It reads y and
// g and writes out, all of one shape and float dtype, without
// recomputing the function, so it runs at memory speed where UnaryGrad
// (from x) is bound by the function's arithmetic; and autodiff keeps y,
// which the next layer usually holds anyway, instead of x. The backend
// documents its error: that of y carries into the result, and for Tanh
// and Sigmoid the factor 1 − y² or 1 − y loses relative precision as |y|
// nears 1, where the result is small against g. An op without DFOut is
// refused as a bad shape is.
type UnaryOutputGrad interface {
	// UnaryGradOutput overwrites out with g·DFOut(y).
	UnaryGradOutput(op UnaryOp, out, y, g View)
}

// IsLinearAct reports whether LinearActFusion accepts op: the activations
// without parameters that commonly follow a linear layer.
func IsLinearAct(op UnaryOp) bool {
	switch op {
	case Relu, Gelu, GeluTanh, Silu, Sigmoid, Tanh:
		return true
	}
	return false
}

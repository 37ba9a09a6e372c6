package backends

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrOutOfMemory is wrapped by Alloc errors when the device has no memory
// left, after a caching allocator has already returned its cached blocks.
var ErrOutOfMemory = errors.New("out of device memory")

// ErrDivideByZero is wrapped by the sticky error a backend records when an
// integer Rem or FloorDiv (Binary or BinaryScalar) divides by zero. The
// elements concerned hold unspecified values.
var ErrDivideByZero = errors.New("integer division by zero")

// Buffer is device memory owned by one backend. It is opaque: host code reads
// and writes it only through Backend.Read and Backend.Write.
type Buffer interface {
	// Bytes is the size of the buffer in bytes.
	Bytes() int64
}

// View describes a strided window onto a buffer: the element at index
// (i0, i1, …) lives at element offset Offset + Σ ik·Strides[k]. A stride of 0
// broadcasts a dimension. Strides and Offset count elements, not bytes.
type View struct {
	Buf     Buffer
	DType   DType
	Shape   []int
	Strides []int
	Offset  int
}

// Contiguous returns a row-major view of the whole of buf with the given shape.
func Contiguous(buf Buffer, dtype DType, shape ...int) View {
	return View{Buf: buf, DType: dtype, Shape: shape, Strides: RowMajorStrides(shape)}
}

// NumElements returns the number of elements v addresses.
func (v View) NumElements() int { return NumElements(v.Shape) }

// IsContiguous reports whether v is row-major with no gaps, so that its
// elements are the range [Offset, Offset+NumElements) of the buffer.
func (v View) IsContiguous() bool {
	want := 1
	for i := len(v.Shape) - 1; i >= 0; i-- {
		if v.Shape[i] != 1 && v.Strides[i] != want {
			return false
		}
		want *= v.Shape[i]
	}
	return true
}

// String formats v for error messages.
func (v View) String() string {
	return fmt.Sprintf("%s%v strides %v offset %d", v.DType, v.Shape, v.Strides, v.Offset)
}

// NumElements returns the product of shape (1 for a scalar shape). It does
// not check for overflow: shapes are checked once, when a tensor is made
// (see CheckedNumElements).
func NumElements(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// CheckedNumElements returns the product of shape (1 for a scalar shape)
// and true, or 0 and false when a dimension is negative or the product
// does not fit in an int. A shape with a zero dimension has no elements
// however large its other dimensions are.
func CheckedNumElements(shape []int) (int, bool) {
	n := 1
	for _, s := range shape {
		if s < 0 {
			return 0, false
		}
		if s == 0 {
			n = 0
		}
	}
	if n == 0 {
		return 0, true
	}
	for _, s := range shape {
		hi, lo := bits.Mul64(uint64(n), uint64(s))
		if hi != 0 || lo > math.MaxInt {
			return 0, false
		}
		n = int(lo)
	}
	return n, true
}

// RowMajorStrides returns the strides of a contiguous row-major layout of shape.
func RowMajorStrides(shape []int) []int {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return st
}

// ConvGeometry describes a 2-D sliding window over an [N, C, H, W] input, as
// used by Im2Col and Col2Im (convolution and pooling). One-dimensional
// windows use H = KH = OutH = 1.
type ConvGeometry struct {
	N, C, H, W int // input batch, channels, height, width
	KH, KW     int // window (kernel) size
	StrideH    int
	StrideW    int
	PadTop     int // rows of padding before the input (bottom padding is implied by OutH)
	PadLeft    int // columns of padding before the input
	DilationH  int
	DilationW  int
	OutH, OutW int     // number of window positions
	PadValue   float64 // value read where the window hangs over the edge (Im2Col only)
}

// RandomKind selects the distribution Backend.Random draws from.
type RandomKind uint8

// The distributions of Backend.Random; P0 and P1 are its parameters.
const (
	Uniform   RandomKind = iota // uniform on [P0, P1)
	Normal                      // normal with mean P0 and standard deviation P1
	Bernoulli                   // 1 with probability P0, else 0
	RandInt                     // integers uniform on [P0, P1)
)

// DeviceInfo describes one device a backend drives.
type DeviceInfo struct {
	Kind        string // "cpu", "cuda", "vulkan", "strict"
	Index       int    // ordinal among devices of the same kind
	Name        string // human-readable model name
	MemoryBytes int64  // total memory, 0 when unknown
	Cores       int    // CPU cores or GPU multiprocessors
	Detail      string // anything else worth showing (compute capability, driver)
	Vendor      string // the maker ("NVIDIA", "AMD", "Intel", "Apple", "Mesa (software)"), "" when unknown
	Software    bool   // a CPU implementation of a GPU API (lavapipe): listed, never chosen by default
}

// String returns the device's identifier as ParseDevice accepts it ("cpu", "cuda:1").
func (d DeviceInfo) String() string {
	if d.Kind == "cpu" || d.Kind == "strict" {
		return d.Kind
	}
	return fmt.Sprintf("%s:%d", d.Kind, d.Index)
}

// MemoryStats reports a backend's own view of its memory.
type MemoryStats struct {
	LiveBytes     int64 // bytes in buffers allocated and not yet freed
	PeakBytes     int64 // highest LiveBytes seen
	LiveBuffers   int64 // number of buffers allocated and not yet freed
	ReservedBytes int64 // bytes held from the system (≥ LiveBytes with a caching allocator)
	Allocations   int64 // number of Alloc calls so far
}

// Backend is the contract every device implementation fulfils: buffers plus a
// small set of kernels over strided views. Everything richer (softmax, layer
// norm, losses, convolution, pooling) is written once above it, in package
// tensor, from these primitives.
//
// Execution may be asynchronous: kernel methods may return before the work is
// done. Read and Sync are the synchronisation points. Kernel methods never
// return errors: a failure (an index out of range, an integer division by
// zero, a device fault) is recorded and returned by the next Read or Sync,
// which then forgets it (each failure is reported once). A backend whose device cannot continue after a fault
// (a lost GPU context) keeps reporting it. Callers (package tensor)
// check shapes and dtypes before calling; backends may assume that
//   - out views of elementwise kernels have the broadcast shape of the inputs,
//   - inputs of Binary share one dtype (promotion happens above),
//   - index views hold Int64.
//
// A backend still refuses (with the sticky error, running nothing) a view
// whose dtype is not its buffer's, or that reaches outside its buffer, so
// that a wrong call never reads or writes memory it does not own.
//
// Kernels may write only to out; an out view may alias no input unless the
// method says so.
type Backend interface {
	// Info describes the device.
	Info() DeviceInfo
	// Alloc returns an uninitialised buffer for n elements of dtype.
	Alloc(dtype DType, n int) (Buffer, error)
	// Free returns buf to the backend. Work already queued that reads buf
	// still sees its contents; buf must not be used afterwards.
	Free(buf Buffer)
	// Write copies host bytes into buf starting at byte offset off. The
	// backend copies src before returning, so the caller may reuse it.
	Write(buf Buffer, off int64, src []byte)
	// Read waits for queued work and copies len(dst) bytes starting at byte
	// offset off of buf into dst. It returns the sticky error, if any.
	Read(buf Buffer, off int64, dst []byte) error
	// Sync waits for all queued work and returns the sticky error, if any.
	Sync() error
	// MemoryStats reports the backend's memory use.
	MemoryStats() MemoryStats

	// Fill sets every element of out to v (converted to out's dtype).
	Fill(out View, v float64)
	// Copy copies x into out element by element, converting dtypes.
	// Shapes are equal; strides may differ (this is Contiguous, Cast and
	// strided assignment).
	Copy(out, x View)
	// Unary applies op to x element-wise. p0 and p1 are op's parameters
	// (UnaryOps documents them). out's dtype is x's, or Bool for predicates.
	Unary(op UnaryOp, out, x View, p0, p1 float64)
	// UnaryGrad computes g·op'(x) element-wise: the backward pass of Unary.
	UnaryGrad(op UnaryOp, out, x, g View, p0, p1 float64)
	// Binary applies op to a and b element-wise, broadcasting by stride 0.
	// An integer Rem or FloorDiv by zero records an error wrapping
	// ErrDivideByZero.
	Binary(op BinaryOp, out, a, b View)
	// BinaryScalar applies op to a and the scalar s (s op a when reverse),
	// with Binary's integer division rule.
	BinaryScalar(op BinaryOp, out, a View, s float64, reverse bool)
	// Where sets out to a where cond (Bool) is true and to b elsewhere.
	Where(out, cond, a, b View)
	// Reduce reduces x over axes into out, whose shape is x's with the
	// reduced axes set to 1. Reduction order is fixed, so results do not
	// depend on the number of threads.
	Reduce(op ReduceOp, out, x View, axes []int)
	// ArgReduce writes the Int64 index of the first maximum (ArgMax) or
	// minimum (ArgMin) of x along axis into out (x's shape with axis set to 1).
	ArgReduce(op ReduceOp, out, x View, axis int)
	// Scan writes the inclusive cumulative sum or product of x along axis.
	Scan(op ReduceOp, out, x View, axis int)
	// Sort sorts x along axis (stably) into values and Int64 indices.
	Sort(values, indices, x View, axis int, descending bool)
	// Matmul computes out[b] = a[b] · b[b] for a [batch…, M, K], b
	// [batch…, K, N], out [batch…, M, N]. Batch dimensions are already
	// broadcast to out's (stride 0 where an input repeats). All three share
	// one dtype.
	Matmul(out, a, b View)
	// Gather sets out[…i…] = x[…index[…i…]…] along axis; index and out
	// have the same shape, and x matches it on every other axis.
	Gather(out, x, index View, axis int)
	// Scatter writes src into out at positions given by index along axis:
	// out[…index[…i…]…] = src[…i…], or += when add is true. out is updated
	// in place; with add, duplicate indices accumulate in a fixed order.
	Scatter(out, index, src View, axis int, add bool)
	// Im2Col unfolds x [N, C, H, W] into out [N, C·KH·KW, OutH·OutW].
	Im2Col(out, x View, g ConvGeometry)
	// Col2Im folds cols [N, C·KH·KW, OutH·OutW] back into out [N, C, H, W],
	// adding overlapping windows; out is overwritten.
	Col2Im(out, cols View, g ConvGeometry)
	// Random fills out from the distribution kind with a counter-based
	// generator: element i of out (in row-major order) is a pure function of
	// (seed, counter+i), so results depend on neither the thread count nor
	// the backend.
	Random(out View, kind RandomKind, seed, counter uint64, p0, p1 float64)
}

// Fusion is an optional interface a Backend implements to run composite
// operations in one kernel where the composition of primitives would make
// several passes over memory or build large temporaries. Package tensor
// looks for it (a type assertion) and otherwise composes the same results
// from the primitives; results must agree with that composition exactly
// (same values, same tie and NaN rules). Every method takes contiguous
// views of Float32 or Float64 data (indices Int64) and is asynchronous
// like a primitive.
type Fusion interface {
	// MaxPool2d writes the maximum of each window of x [N, C, H, W] into
	// out [N, C, OutH, OutW] and, into indices (same shape), the flat
	// position h·W+w of that maximum within its input plane. Windows are
	// scanned row by row; the first maximum wins ties, and the first NaN
	// wins over everything. Positions in the padding never win (the
	// composition reads them as -Inf).
	MaxPool2d(out, indices, x View, g ConvGeometry)
	// MaxPool2dGrad overwrites dx [N, C, H, W] with the gradient of
	// MaxPool2d: zero, plus each element of dy [N, C, OutH, OutW] added at
	// its position in indices. Overlapping windows add in window order.
	MaxPool2dGrad(dx, dy, indices View, g ConvGeometry)
}

// ConvFusion is an optional interface for a two-dimensional convolution
// (one group, no bias) and its two gradients in single kernels, without
// materialising the unfolded windows of the whole batch. Like Fusion it
// takes contiguous Float32 or Float64 views; x is [N, C, H, W], w is
// [O, C, KH, KW] and the output and its gradient dy are [N, O, OutH, OutW],
// for the windows g describes. The forward result must equal the
// composition Im2Col then Matmul; the gradients may differ from their
// compositions by rounding (they sum in another order), but must not depend
// on the number of threads.
type ConvFusion interface {
	// Conv2d overwrites out with the convolution of x with w.
	Conv2d(out, x, w View, g ConvGeometry)
	// Conv2dInputGrad overwrites dx [N, C, H, W] with the gradient of the
	// convolution with respect to its input, for output gradient dy.
	Conv2dInputGrad(dx, dy, w View, g ConvGeometry)
	// Conv2dWeightGrad overwrites dw [O, C, KH, KW] with the gradient of
	// the convolution with respect to its weights.
	Conv2dWeightGrad(dw, dy, x View, g ConvGeometry)
}

// ConvBiasFusion is an optional interface for a convolution with a bias
// added to each output channel, out = conv(x, w) + bias[o], as a
// convolution layer computes it: the views as ConvFusion's, and bias [O]
// contiguous, of out's dtype. Each element is Conv2d's plus its channel's
// bias, added once: bit for bit Conv2d followed by Binary's Add, without a
// second pass over the output.
type ConvBiasFusion interface {
	// Conv2dBias overwrites out with the convolution of x with w plus bias.
	Conv2dBias(out, x, w, bias View, g ConvGeometry)
}

// ConvBiasActFusion is an optional interface for a convolution layer
// followed by an activation, out = op(conv(x, w) + bias): pre receives
// Conv2dBias's result, bit for bit, and out op(pre), bit for bit Unary(op)
// of pre, each output plane while it is still in cache instead of in a
// pass of its own. The views are as ConvBiasFusion's, with out and pre
// [N, O, OutH, OutW] contiguous, of one dtype and apart; the ops are
// LinearActFusion's (IsLinearAct), any other is refused.
type ConvBiasActFusion interface {
	// Conv2dBiasAct overwrites pre with conv(x, w) + bias and out with
	// op(pre).
	Conv2dBiasAct(out, pre, x, w, bias View, g ConvGeometry, op UnaryOp)
}

// CrossEntropyFusion is an optional interface for the cross-entropy of
// class-index targets over the rows of logits x [N, C] (no class weights,
// no label smoothing), in one pass per direction where the composition of
// primitives takes a few dozen small ones. Like Fusion it takes contiguous
// Float32 or Float64 views (targets Int64) and must agree exactly with the
// composition package tensor uses: log-softmax as max, subtract, Exp, sum
// (the Reduce order), Log and subtract; the picked entries gathered and
// negated.
//
// Rows hold at most CrossEntropyMaxClasses classes.
type CrossEntropyFusion interface {
	// CrossEntropyForward writes logp [N, C], the log-softmax of x's rows,
	// and for each row i nll[i] = −logp[i, t_i] and weight[i] = 1, or both
	// 0 where t_i = ignore (nll and weight [N] or [N, 1]). A target outside
	// [0, C) that is not ignore is an out-of-range error, as Gather's.
	CrossEntropyForward(logp, nll, weight, x, target View, ignore int64)
	// CrossEntropyBackward overwrites dx [N, C] with exp(logp[i, c])·a_i,
	// then adds −a_i at (i, t_i) (at (i, 0) for an ignored row), where
	// a_i = coef·weight[i]; coef holds one value or one per row.
	CrossEntropyBackward(dx, logp, weight, target, coef View, ignore int64)
}

// CrossEntropyMaxClasses is the most classes a CrossEntropyFusion row
// holds; package tensor composes wider rows.
const CrossEntropyMaxClasses = 4096

// AdamHyper holds the scalars of one Adam or AdamW update (see
// AdamFusion): the parameter is first scaled by Decay (1 − lr·wd for
// AdamW, else 1), the gradient gains WeightDecay·p (Adam's L2 form; 0 for
// AdamW) and is negated when Maximize, the moments move by Beta1 and
// Beta2, and the parameter moves by m / (√v·InvDenom + EpsTerm).
type AdamHyper struct {
	Decay, WeightDecay, Beta1, Beta2, InvDenom, EpsTerm float64
	Maximize, First, MovesParam                         bool // First: no moments yet (m and v are unused)
}

// AdamFusion is an optional interface for Adam's update in one pass over
// memory, for contiguous Float32 or Float64 views of one shape. Every
// intermediate is rounded to the dtype exactly as the composition of
// element-wise primitives rounds it, so results are bit-identical to it.
// outP is written only when h.MovesParam. The update is element-wise, so
// outP, outM and outV may be p, m and v themselves (an update in place).
type AdamFusion interface {
	AdamStep(outP, outM, outV, p, g, m, v View, h AdamHyper)
}

// SGDHyper holds the scalars of one SGD update (see SGDFusion), as
// torch.optim.SGD applies them: the gradient is negated when Maximize and
// gains WeightDecay·p; with Momentum ≠ 0 the buffer becomes that gradient
// on the First step, else Momentum·buf + (1 − Dampening)·d, and the step
// direction is d + Momentum·buf (Nesterov) or buf; the parameter then
// moves by −LR times the direction. A scalar product is skipped when its
// scalar makes it the identity (WeightDecay 0, Dampening 0).
type SGDHyper struct {
	LR, Momentum, Dampening, WeightDecay float64
	Nesterov, Maximize, First            bool // First: no buffer yet (buf is unused)
}

// SGDFusion is an optional interface for SGD's update in one pass over
// memory, for contiguous Float32 or Float64 views of one shape. Every
// intermediate is rounded to the dtype exactly as the composition of
// element-wise primitives rounds it (a product with a scalar computed in
// float64, then rounded), so results are bit-identical to it. Without
// momentum (h.Momentum 0) buf and outBuf are unused and may have no
// buffer. The update is element-wise, so outP and outBuf may be p and buf
// themselves (an update in place).
type SGDFusion interface {
	SGDStep(outP, outBuf, p, g, buf View, h SGDHyper)
}

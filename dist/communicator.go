package dist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/kiln-ml/kiln/tensor"
)

// Communicator runs collective operations between the ranks of one group.
// Every rank must call the same collectives in the same order with tensors
// of the same dtype and (except where a method says otherwise) the same
// shape. Collectives on one Communicator must not be called concurrently.
//
// Communication failures and disagreements between ranks are returned as
// errors naming the rank; after such an error the Communicator is broken and
// every later collective fails too.
type Communicator interface {
	// Rank is this member's index in the group, 0 ≤ Rank < Size.
	Rank() int
	// Size is the number of ranks in the group.
	Size() int
	// LocalRank is this member's index among the ranks on the same machine
	// (the GPU it should use, say).
	LocalRank() int
	// AllReduce replaces t's values, in place, by their reduction over all
	// ranks. Mean is only allowed on float tensors.
	AllReduce(t *tensor.Tensor, op ReduceOp) error
	// Broadcast replaces t's values, in place, by those of rank root.
	Broadcast(t *tensor.Tensor, root int) error
	// AllGather returns every rank's t concatenated along dimension 0 in
	// rank order. Ranks may differ in dimension 0 but not in the others.
	AllGather(t *tensor.Tensor) (*tensor.Tensor, error)
	// ReduceScatter reduces t over all ranks and returns this rank's slice
	// of the result along dimension 0. When dimension 0 does not divide by
	// Size, the first (dim0 mod Size) ranks get one row more.
	ReduceScatter(t *tensor.Tensor, op ReduceOp) (*tensor.Tensor, error)
	// Barrier returns once every rank has called it.
	Barrier() error
	// Close releases the member. For MPI it finalises MPI, which cannot be
	// initialised again in the same process.
	Close() error
	// Backend names the implementation: "local", "mpi" or "nccl".
	Backend() string
}

// ReduceOp is how AllReduce and ReduceScatter combine values.
type ReduceOp int

// The reductions.
const (
	Sum ReduceOp = iota
	Mean
	Max
	Min
)

// String returns the op's name.
func (op ReduceOp) String() string {
	switch op {
	case Sum:
		return "Sum"
	case Mean:
		return "Mean"
	case Max:
		return "Max"
	case Min:
		return "Min"
	}
	return fmt.Sprintf("ReduceOp(%d)", int(op))
}

// Errors callers can test with errors.Is.
var (
	// ErrMismatch: ranks disagreed on the collective, dtype or shape.
	ErrMismatch = errors.New("dist: ranks disagree")
	// ErrTimeout: a collective did not complete in the configured time.
	ErrTimeout = errors.New("dist: collective timed out")
	// ErrClosed: the communicator (or another member of its group) is closed.
	ErrClosed = errors.New("dist: communicator closed")
	// ErrNoLibrary: the MPI shared library could not be loaded.
	ErrNoLibrary = errors.New("dist: MPI library not available")
	// ErrUnsupported: a dtype, op or size the communicator cannot handle.
	ErrUnsupported = errors.New("dist: unsupported")
)

// le is the byte order of tensor.Bytes and tensor.FromBytes.
var le = binary.LittleEndian

// DefaultTimeout is how long a collective waits for the other ranks when a
// config leaves Timeout zero.
const DefaultTimeout = 5 * time.Minute

// payload is one rank's contribution to a collective: its tensor's raw
// little-endian elements with its dtype and shape.
type payload struct {
	dtype tensor.DType
	shape []int
	raw   []byte
}

// elemSize returns the byte size of the dtypes the communicators support.
func elemSize(d tensor.DType) (int, bool) {
	switch d {
	case tensor.Float32:
		return 4, true
	case tensor.Float64, tensor.Int64:
		return 8, true
	}
	return 0, false
}

// catchPanic turns a *tensor.Error panic (a released tensor, say) into an error.
func catchPanic(op string, rank int, err *error) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok {
			*err = fmt.Errorf("dist: rank %d: %s: %w", rank, op, e)
			return
		}
		panic(r)
	}
}

// readPayload copies t to the host. It checks the dtype and op.
func readPayload(op string, rank int, t *tensor.Tensor, rop ReduceOp, reduces bool) (p payload, err error) {
	if err := checkArgs(op, rank, t, rop, reduces); err != nil {
		return p, err
	}
	defer catchPanic(op, rank, &err)
	return payload{dtype: t.DType(), shape: t.Shape(), raw: t.Bytes()}, nil
}

// checkArgs reports whether the communicators handle t's dtype and, for
// a reduction, the op on it.
func checkArgs(op string, rank int, t *tensor.Tensor, rop ReduceOp, reduces bool) (err error) {
	if t == nil {
		return fmt.Errorf("dist: rank %d: %s: nil tensor", rank, op)
	}
	defer catchPanic(op, rank, &err)
	if _, ok := elemSize(t.DType()); !ok {
		return fmt.Errorf("%w: rank %d: %s of a %s tensor (float32, float64 and int64 are supported)", ErrUnsupported, rank, op, t.DType())
	}
	if reduces {
		if rop < Sum || rop > Min {
			return fmt.Errorf("%w: rank %d: %s with %s", ErrUnsupported, rank, op, rop)
		}
		if rop == Mean && t.DType() == tensor.Int64 {
			return fmt.Errorf("%w: rank %d: %s Mean of an int64 tensor (use Sum and divide)", ErrUnsupported, rank, op)
		}
	}
	return nil
}

// writeBack stores raw into t in place.
func writeBack(op string, rank int, t *tensor.Tensor, raw []byte) (err error) {
	defer catchPanic(op, rank, &err)
	src := tensor.FromBytes(t.Device().Inner(), t.DType(), raw, t.Shape()...)
	t.Assign(src)
	src.Release()
	return nil
}

// newTensor builds a result tensor on t's device.
func newTensor(op string, rank int, like *tensor.Tensor, raw []byte, shape []int) (out *tensor.Tensor, err error) {
	defer catchPanic(op, rank, &err)
	return tensor.FromBytes(like.Device().Inner(), like.DType(), raw, shape...), nil
}

// shapeString formats a shape as [2 3].
func shapeString(s []int) string { return fmt.Sprint(s) }

// rowSplit returns the first row and row count of rank r when rows are
// split over size ranks, the first (rows mod size) ranks getting one more.
func rowSplit(rows, size, r int) (start, count int) {
	q, rem := rows/size, rows%size
	count = q
	if r < rem {
		count++
	}
	start = r*q + min(r, rem)
	return start, count
}

// rowBytes is the byte size of one row (dimension 0 slice) of shape.
func rowBytes(shape []int, esize int) int {
	n := esize
	for _, d := range shape[1:] {
		n *= d
	}
	return n
}

// reduceInto combines src into acc element by element.
func reduceInto(dtype tensor.DType, op ReduceOp, acc, src []byte) {
	switch dtype {
	case tensor.Float32:
		for i := 0; i+4 <= len(acc); i += 4 {
			a := math.Float32frombits(le.Uint32(acc[i:]))
			b := math.Float32frombits(le.Uint32(src[i:]))
			le.PutUint32(acc[i:], math.Float32bits(combine(op, a, b)))
		}
	case tensor.Float64:
		for i := 0; i+8 <= len(acc); i += 8 {
			a := math.Float64frombits(le.Uint64(acc[i:]))
			b := math.Float64frombits(le.Uint64(src[i:]))
			le.PutUint64(acc[i:], math.Float64bits(combine(op, a, b)))
		}
	case tensor.Int64:
		for i := 0; i+8 <= len(acc); i += 8 {
			a, b := int64(le.Uint64(acc[i:])), int64(le.Uint64(src[i:]))
			le.PutUint64(acc[i:], uint64(combine(op, a, b)))
		}
	}
}

// divide divides float elements by n (the last step of Mean). Bytes
// aligned for their dtype (tensor storage, Go allocations) are divided
// through a typed view; a power of two is applied as a multiplication by
// its reciprocal, which rounds identically.
func divide(dtype tensor.DType, acc []byte, n int) {
	if len(acc) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(acc))
	switch {
	case dtype == tensor.Float32 && uintptr(p)%4 == 0:
		divideFloats(unsafe.Slice((*float32)(p), len(acc)/4), n)
		return
	case dtype == tensor.Float64 && uintptr(p)%8 == 0:
		divideFloats(unsafe.Slice((*float64)(p), len(acc)/8), n)
		return
	}
	switch dtype {
	case tensor.Float32:
		for i := 0; i+4 <= len(acc); i += 4 {
			a := math.Float32frombits(le.Uint32(acc[i:]))
			le.PutUint32(acc[i:], math.Float32bits(a/float32(n)))
		}
	case tensor.Float64:
		for i := 0; i+8 <= len(acc); i += 8 {
			a := math.Float64frombits(le.Uint64(acc[i:]))
			le.PutUint64(acc[i:], math.Float64bits(a/float64(n)))
		}
	}
}

func divideFloats[T float32 | float64](xs []T, n int) {
	if n&(n-1) == 0 {
		r := 1 / T(n)
		for i := range xs {
			xs[i] *= r
		}
		return
	}
	d := T(n)
	for i := range xs {
		xs[i] /= d
	}
}

func combine[T float32 | float64 | int64](op ReduceOp, a, b T) T {
	switch op {
	case Max:
		return max(a, b)
	case Min:
		return min(a, b)
	}
	return a + b
}

package tensor

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"
)

// The decompositions (LU, Cholesky, QR, SVD, eigh) and the ops built on
// them run on the host: inputs are copied out in float64, factored with the
// algorithms of linalg_kernels.go, and the results copied back in the
// input's dtype. Their backward rules run on the host the same way. This
// keeps them correct on every backend through the Backend contract's Read
// and Write; a device with its own solver could offer one later as an
// optional interface.

// linalgType returns the dtype a linear-algebra op computes in: Float32 or
// Float64, the promotion of its inputs. Other dtypes fail with ErrDType, as
// torch.linalg does for integers.
func linalgType(op string, ts ...*Tensor) DType {
	dt := Float32
	for _, t := range ts {
		t.live(op)
		switch t.dtype {
		case Float32:
		case Float64:
			dt = Float64
		default:
			fail(op, ErrDType, "expected a float32 or float64 tensor, got %s %s", t.dtype, shapeString(t.shape))
		}
	}
	if len(ts) > 1 {
		sameDevice(op, ts...)
	}
	return dt
}

// linalgMatrix checks that t is a batch of matrices (rank ≥ 2, square when
// asked) and returns its batch shape and matrix size.
func linalgMatrix(op string, t *Tensor, square bool) (batch []int, m, n int) {
	r := len(t.shape)
	if r < 2 {
		fail(op, ErrShape, "expected a matrix or a batch of matrices (rank ≥ 2), got shape %s", shapeString(t.shape))
	}
	m, n = t.shape[r-2], t.shape[r-1]
	if square && m != n {
		fail(op, ErrShape, "expected a batch of square matrices, got shape %s (%d×%d)", shapeString(t.shape), m, n)
	}
	return append([]int{}, t.shape[:r-2]...), m, n
}

// hostFloat64s copies t's elements to the host as float64 in row-major order.
func hostFloat64s(op string, t *Tensor) []float64 {
	raw := t.hostBytes(op)
	out := make([]float64, t.NumElements())
	for i := range out {
		out[i] = decode(t.dtype, raw, i)
	}
	return out
}

// hostTensor uploads data (row-major, float64) as a new tensor of dtype.
func hostTensor(op string, dev Device, dtype DType, shape []int, data []float64) *Tensor {
	sz := dtype.Size()
	raw := make([]byte, len(data)*sz)
	for i, v := range data {
		switch dtype {
		case Float32:
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(v)))
		case Float64:
			binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
		case Int32:
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(v)))
		case Int64:
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(int64(v)))
		}
	}
	return fromBytes(op, dev, dtype, append([]int{}, shape...), raw)
}

// linalgOutput is one output of a host op: its shape and data.
type linalgOutput struct {
	shape []int
	data  []float64
}

// linalgRecord uploads outs in dtype onto inputs[0]'s device and records
// one graph node named node for all of them. backward receives the host
// gradient of every output (zeros for outputs that received none) and
// returns one host gradient per input (nil for none), each of the shape
// gradShape(i) gives (the input's own shape when gradShape is nil); the
// result is reduced to the input's shape (broadcast batch dimensions) and
// cast to its dtype. Several outputs are packed into one 1-D tensor whose
// recorded pieces (Narrow, Reshape) are returned, so that one backward rule
// sees the gradients of all of them.
func linalgRecord(op, node string, attrs map[string]any, dtype DType, inputs []*Tensor, outs []linalgOutput,
	gradShape func(i int) []int, backward func(gouts [][]float64) [][]float64) []*Tensor {
	dev := inputs[0].dev
	var packed *Tensor
	if len(outs) == 1 {
		packed = hostTensor(op, dev, dtype, outs[0].shape, outs[0].data)
	} else {
		var all []float64
		for _, o := range outs {
			all = append(all, o.data...)
		}
		packed = hostTensor(op, dev, dtype, []int{len(all)}, all)
	}
	packed = record(node, attrs, packed, inputs, func(g *Tensor) []*Tensor {
		gh := hostFloat64s(op, g)
		gouts := make([][]float64, len(outs))
		off := 0
		for i, o := range outs {
			gouts[i] = gh[off : off+len(o.data)]
			off += len(o.data)
		}
		gins := backward(gouts)
		res := make([]*Tensor, len(inputs))
		for i, x := range inputs {
			if i >= len(gins) || gins[i] == nil || !x.requiresGrad {
				continue
			}
			shape := x.shape
			if gradShape != nil {
				shape = gradShape(i)
			}
			gt := hostTensor(op, g.dev, g.dtype, shape, gins[i])
			res[i] = gradFor(gt, x)
		}
		return res
	})
	if len(outs) == 1 {
		return []*Tensor{packed}
	}
	res := make([]*Tensor, len(outs))
	off := 0
	for i, o := range outs {
		n := len(o.data)
		piece := packed.Narrow(0, off, n)
		res[i] = piece.Reshape(o.shape...)
		piece.Release()
		off += n
	}
	packed.Release()
	return res
}

// parallelBatch runs fn(b) for b in [0, n) on up to GOMAXPROCS goroutines:
// the matrices of a batch are factored independently.
func parallelBatch(n, work int, fn func(b int)) {
	workers := runtime.GOMAXPROCS(0)
	if n <= 1 || workers <= 1 || work < 4096 {
		for b := range n {
			fn(b)
		}
		return
	}
	workers = min(workers, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var panicked any
	next := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					if panicked == nil {
						panicked = r
					}
					mu.Unlock()
				}
			}()
			for {
				mu.Lock()
				b := next
				next++
				stop := panicked != nil
				mu.Unlock()
				if b >= n || stop {
					return
				}
				fn(b)
			}
		}()
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}

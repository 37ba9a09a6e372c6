package tensor

import (
	"math"
	"math/bits"

	"github.com/kiln-ml/kiln/backends"
)

// Shape arithmetic is checked wherever a shape is computed from numbers a
// caller gave (creation, reshape, expand, repeat, cat, pad, the outputs of
// matmul, convolution and pooling): a negative dimension, an element count
// past 2^63 − 1 or a byte size past 2^63 − 1 panics with ErrShape, naming
// the op and the shape, instead of wrapping around to a small tensor that
// later indexing walks off. Every tensor's shape passes checkedNumel when
// its storage is allocated (newTensor) and when a view is made of it
// (newView), so the unchecked products elsewhere (backends.NumElements,
// stride computations) cannot overflow.

// checkedNumel returns the number of elements of shape, panicking with
// ErrShape for op when a dimension is negative or the count does not fit
// in an int.
func checkedNumel(op string, shape []int) int {
	n, ok := backends.CheckedNumElements(shape)
	if ok {
		return n
	}
	for _, s := range shape {
		if s < 0 {
			fail(op, ErrShape, "negative dimension in shape %s", shapeString(shape))
		}
	}
	fail(op, ErrShape, "shape %s has more than 2^63 elements", shapeString(shape))
	return 0
}

// checkedBytes returns the byte size of a tensor of dtype and shape,
// panicking with ErrShape for op as checkedNumel does, or when the size
// does not fit in an int64.
func checkedBytes(op string, dtype DType, shape []int) int64 {
	n := checkedNumel(op, shape)
	hi, lo := bits.Mul64(uint64(n), uint64(dtype.Size()))
	if hi != 0 || lo > math.MaxInt64 {
		fail(op, ErrShape, "shape %s of %s is more than 2^63 bytes", shapeString(shape), dtype)
	}
	return int64(lo)
}

// checkedMul returns a·b, panicking with ErrShape for op (what names the
// quantity) when it does not fit in an int.
func checkedMul(op, what string, a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	c := a * b
	if c/b != a || a == -1 && b == math.MinInt || b == -1 && a == math.MinInt {
		fail(op, ErrShape, "%s: %d × %d overflows", what, a, b)
	}
	return c
}

// checkedAdd returns the sum of vs, panicking with ErrShape for op (what
// names the quantity) when it leaves the range of an int.
func checkedAdd(op, what string, vs ...int) int {
	s := 0
	for _, v := range vs {
		if v > 0 && s > math.MaxInt-v || v < 0 && s < math.MinInt-v {
			fail(op, ErrShape, "%s: the sum of %v overflows", what, vs)
		}
		s += v
	}
	return s
}

// checkFits panics as an allocation would (ErrShape, or ErrOutOfMemory
// past the device's budget) when a tensor of dtype and shape cannot be
// made on dev now. Ops that build a tensor's values on the host first
// (Arange, Linspace) call it before allocating that host memory, so a huge
// request is an error rather than the Go runtime running out of memory.
func checkFits(op string, dev Device, dtype DType, shape []int) {
	dev.check(op)
	bytes := checkedBytes(op, dtype, shape)
	st := dev.st
	if b, live := st.budget.Load(), st.live.Load(); b > 0 && bytes > b-live {
		st.failOverBudget(op, bytes, shapeString(shape)+" "+dtype.String(), live, b)
	}
}

package tensor

import "math"

// Ranges are computed on the host, exactly as PyTorch's CPU kernels round
// them, and uploaded: they are small next to the work done with them.

// mathUpload returns a 1-D tensor of dtype holding vals (converted as Copy
// converts: integers truncate toward zero).
func mathUpload(op string, dev Device, dtype DType, vals []float64) *Tensor {
	n := len(vals)
	switch dtype {
	case Float64:
		return FromFloat64s(dev, vals, n)
	case Float32:
		f := make([]float32, n)
		for i, v := range vals {
			f[i] = float32(v)
		}
		return FromFloat32s(dev, f, n)
	}
	t := FromFloat64s(dev, vals, n)
	out := rawCast(op, t, dtype)
	t.Release()
	return out
}

// mathRangeDType panics unless ranges of dtype can be built.
func mathRangeDType(op string, dtype DType) {
	if !dtype.Valid() || dtype == Bool {
		fail(op, ErrDType, "cannot build a range of %s", dtype)
	}
}

// Arange returns the 1-D tensor start, start+step, … up to but excluding
// end (torch.arange). It is Int64 when start, end and step are all integral
// and Float32 otherwise; Go cannot tell 5.0 from 5, so ask for a float
// range of integral bounds with ArangeOf. It panics with ErrArgument when
// step is 0, has the wrong sign for the range, or a bound is not finite.
func Arange(dev Device, start, end, step float64) *Tensor {
	dtype := Float32
	if mathIsIntegral(start) && mathIsIntegral(end) && mathIsIntegral(step) {
		dtype = Int64
	}
	return arange("Arange", dev, dtype, start, end, step)
}

// ArangeOf is Arange with an explicit dtype (any but Bool, which panics
// with ErrDType). Values are start + i·step computed in float64 (in int64
// when every argument is integral and dtype is an integer type) and then
// converted.
func ArangeOf(dev Device, dtype DType, start, end, step float64) *Tensor {
	return arange("ArangeOf", dev, dtype, start, end, step)
}

func arange(op string, dev Device, dtype DType, start, end, step float64) *Tensor {
	dev.check(op)
	mathRangeDType(op, dtype)
	for _, v := range []float64{start, end, step} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			fail(op, ErrArgument, "unsupported range %v to %v by %v: bounds and step must be finite", start, end, step)
		}
	}
	if step == 0 {
		fail(op, ErrArgument, "step must be non-zero")
	}
	if (end > start && step < 0) || (end < start && step > 0) {
		fail(op, ErrArgument, "range %v to %v is inconsistent with the sign of step %v", start, end, step)
	}
	size := math.Ceil((end - start) / step)
	if size > math.MaxInt32*16 {
		fail(op, ErrArgument, "range %v to %v by %v has %v elements, too many", start, end, step, size)
	}
	n := int(size)
	checkFits(op, dev, dtype, []int{n})
	checkFits(op, dev, Float64, []int{n}) // the values built on the host
	if dtype == Int64 && mathIsIntegral(start) && mathIsIntegral(step) {
		s, d := int64(start), int64(step)
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = s + int64(i)*d
		}
		return FromInt64s(dev, vals, n)
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = start + float64(i)*step
	}
	return mathUpload(op, dev, dtype, vals)
}

// Linspace returns n Float32 values evenly spaced from start to end
// inclusive (torch.linspace): one value gives [start], zero gives an empty
// tensor. It panics with ErrArgument when n is negative.
func Linspace(dev Device, start, end float64, n int) *Tensor {
	return linspace("Linspace", dev, Float32, start, end, n)
}

// LinspaceOf is Linspace with an explicit dtype; integer dtypes truncate
// the evenly spaced values toward zero, as PyTorch does. Bool panics with
// ErrDType.
func LinspaceOf(dev Device, dtype DType, start, end float64, n int) *Tensor {
	return linspace("LinspaceOf", dev, dtype, start, end, n)
}

func linspace(op string, dev Device, dtype DType, start, end float64, n int) *Tensor {
	dev.check(op)
	mathRangeDType(op, dtype)
	if n < 0 {
		fail(op, ErrArgument, "number of steps %d must be non-negative", n)
	}
	checkFits(op, dev, dtype, []int{n})
	checkFits(op, dev, Float64, []int{n}) // the values built on the host
	vals := make([]float64, n)
	// PyTorch fills the first half forwards from start and the second
	// half backwards from end, so both ends are exact and the values are
	// symmetric; Float32 (and the half types) are computed in float32.
	half := n / 2
	switch {
	case n == 1:
		vals[0] = start
	case dtype == Float32 || dtype == Float16 || dtype == BFloat16:
		s, e := float32(start), float32(end)
		step := (e - s) / float32(n-1)
		for i := range vals {
			if i < half {
				vals[i] = float64(s + float32(step*float32(i)))
			} else {
				vals[i] = float64(e - float32(step*float32(n-1-i)))
			}
		}
	default:
		step := (end - start) / float64(n-1)
		for i := range vals {
			if i < half {
				vals[i] = start + float64(step*float64(i))
			} else {
				vals[i] = end - float64(step*float64(n-1-i))
			}
		}
	}
	return mathUpload(op, dev, dtype, vals)
}

// Eye returns the n×m Float32 matrix with ones on the main diagonal and
// zeros elsewhere (torch.eye(n, m)); pass m = n for the identity. It panics
// with ErrShape when n or m is negative.
func Eye(dev Device, n, m int) *Tensor { return eye("Eye", dev, Float32, n, m) }

// EyeOf is Eye with an explicit dtype.
func EyeOf(dev Device, dtype DType, n, m int) *Tensor { return eye("EyeOf", dev, dtype, n, m) }

func eye(op string, dev Device, dtype DType, n, m int) *Tensor {
	if !dtype.Valid() {
		fail(op, ErrDType, "unknown dtype %d", dtype)
	}
	if n < 0 || m < 0 {
		fail(op, ErrShape, "negative size %d×%d", n, m)
	}
	out := rawFull(op, dev, dtype, []int{n, m}, 0)
	if k := min(n, m); k > 0 {
		diag := out.view()
		diag.Shape, diag.Strides = []int{k}, []int{m + 1}
		out.backend().Fill(diag, 1)
	}
	return out
}

package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// hostTensor is a small tensor held on the host: constants, initializers
// used as operator arguments, and the shape computations (Shape → Gather →
// Concat → Reshape) that exporters emit, which are evaluated here rather
// than on the device. Float dtypes keep their values in f, integer and bool
// dtypes in i (bools as 0 and 1).
type hostTensor struct {
	dtype tensor.DType
	shape []int
	f     []float64
	i     []int64
	s     []string // dtypeString elements
}

func newHost(dt tensor.DType, shape []int) *hostTensor {
	h := &hostTensor{dtype: dt, shape: append([]int{}, shape...)}
	n := backends.NumElements(shape)
	if dt.IsFloat() {
		h.f = make([]float64, n)
	} else {
		h.i = make([]int64, n)
	}
	return h
}

func hostInts(v []int64, shape ...int) *hostTensor {
	if shape == nil {
		shape = []int{len(v)}
	}
	return &hostTensor{dtype: tensor.Int64, shape: shape, i: v}
}

func (h *hostTensor) size() int { return backends.NumElements(h.shape) }

// at returns element k as float64.
func (h *hostTensor) at(k int) float64 {
	if h.f != nil {
		return h.f[k]
	}
	return float64(h.i[k])
}

// set stores v at k, converting to h's dtype (integers truncate toward
// zero, as ONNX Cast does).
func (h *hostTensor) set(k int, v float64) {
	switch {
	case h.f != nil:
		h.f[k] = roundTo(h.dtype, v)
	case h.dtype == tensor.Bool:
		if v != 0 {
			h.i[k] = 1
		} else {
			h.i[k] = 0
		}
	default:
		h.i[k] = wrapInt(h.dtype, int64(v))
	}
}

// setInt stores an integer exactly.
func (h *hostTensor) setInt(k int, v int64) {
	switch {
	case h.f != nil:
		h.f[k] = roundTo(h.dtype, float64(v))
	case h.dtype == tensor.Bool:
		if v != 0 {
			v = 1
		}
		h.i[k] = v
	default:
		h.i[k] = wrapInt(h.dtype, v)
	}
}

func roundTo(dt tensor.DType, v float64) float64 {
	switch dt {
	case tensor.Float32:
		return float64(float32(v))
	case tensor.Float16:
		return float64(backends.Float16ToFloat32(backends.Float32ToFloat16(float32(v))))
	case tensor.BFloat16:
		return float64(backends.BFloat16ToFloat32(backends.Float32ToBFloat16(float32(v))))
	}
	return v
}

func wrapInt(dt tensor.DType, v int64) int64 {
	switch dt {
	case tensor.Int32:
		return int64(int32(v))
	case tensor.Int16:
		return int64(int16(v))
	case tensor.Int8:
		return int64(int8(v))
	case tensor.Uint8:
		return int64(uint8(v))
	}
	return v
}

// ints returns h's elements as int64 (floats truncated).
func (h *hostTensor) ints() []int64 {
	if h.i != nil {
		return h.i
	}
	out := make([]int64, len(h.f))
	for k, v := range h.f {
		out[k] = int64(v)
	}
	return out
}

// floats returns h's elements as float64.
func (h *hostTensor) floats() []float64 {
	if h.f != nil {
		return h.f
	}
	out := make([]float64, len(h.i))
	for k, v := range h.i {
		out[k] = float64(v)
	}
	return out
}

// cast returns h converted to dt.
func (h *hostTensor) cast(dt tensor.DType) *hostTensor {
	out := newHost(dt, h.shape)
	for k := range h.size() {
		if h.i != nil {
			out.setInt(k, h.i[k])
		} else {
			v := h.f[k]
			if !dt.IsFloat() && dt != tensor.Bool && (math.IsNaN(v) || math.IsInf(v, 0)) {
				v = 0
			}
			out.set(k, v)
		}
	}
	return out
}

// reshaped returns h with another shape of the same size (sharing data).
func (h *hostTensor) reshaped(shape []int) *hostTensor {
	return &hostTensor{dtype: h.dtype, shape: append([]int{}, shape...), f: h.f, i: h.i}
}

// device uploads h to dev.
func (h *hostTensor) device(dev tensor.Device) *tensor.Tensor {
	if h.dtype == dtypeString {
		panic(&tensor.Error{Op: "onnx", Msg: "string tensors stay on the host: this operator does not take strings", Err: tensor.ErrDType})
	}
	n := h.size()
	sz := h.dtype.Size()
	raw := make([]byte, n*sz)
	for k := range n {
		switch h.dtype {
		case tensor.Float32:
			binary.LittleEndian.PutUint32(raw[4*k:], math.Float32bits(float32(h.f[k])))
		case tensor.Float64:
			binary.LittleEndian.PutUint64(raw[8*k:], math.Float64bits(h.f[k]))
		case tensor.Float16:
			binary.LittleEndian.PutUint16(raw[2*k:], backends.Float32ToFloat16(float32(h.f[k])))
		case tensor.BFloat16:
			binary.LittleEndian.PutUint16(raw[2*k:], backends.Float32ToBFloat16(float32(h.f[k])))
		case tensor.Int64:
			binary.LittleEndian.PutUint64(raw[8*k:], uint64(h.i[k]))
		case tensor.Int32:
			binary.LittleEndian.PutUint32(raw[4*k:], uint32(h.i[k]))
		case tensor.Int16:
			binary.LittleEndian.PutUint16(raw[2*k:], uint16(h.i[k]))
		case tensor.Int8:
			raw[k] = byte(h.i[k])
		case tensor.Uint8, tensor.Bool:
			raw[k] = byte(h.i[k])
		}
	}
	t := tensor.FromBytes(dev, h.dtype, raw, h.shape...)
	if len(h.shape) == 0 {
		// From* functions read an empty shape as a vector.
		s := t.Reshape()
		t.Release()
		t = s
	}
	return t
}

// hostOf downloads t (a synchronisation point).
func hostOf(t *tensor.Tensor) *hostTensor {
	h := &hostTensor{dtype: t.DType(), shape: t.Shape()}
	if t.DType().IsFloat() {
		h.f = t.Float64s()
	} else {
		h.i = t.Int64s()
	}
	return h
}

// strides returns row-major strides of shape.
func stridesOf(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// broadcastShapes returns the NumPy broadcast of shapes, or an error.
func broadcastShapes(shapes ...[]int) ([]int, error) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := r - len(s)
		for i, d := range s {
			switch {
			case out[off+i] == 1:
				out[off+i] = d
			case d != 1 && d != out[off+i]:
				return nil, fmt.Errorf("shapes %v do not broadcast", shapes)
			}
		}
	}
	return out, nil
}

// broadcastIndex maps flat index k of shape out to the flat index of an
// operand of shape in (right-aligned, size-1 axes repeated).
func broadcastIndex(k int, out, in []int) int {
	idx := 0
	stride := 1
	for i := len(out) - 1; i >= 0; i-- {
		c := k % out[i]
		k /= out[i]
		j := i - (len(out) - len(in))
		if j >= 0 {
			if in[j] != 1 {
				idx += c * stride
			}
			stride *= in[j]
		}
	}
	return idx
}

// hostMap applies f elementwise over broadcast inputs, producing dtype dt.
// Integer inputs with an integer result go through fi when it is not nil,
// so int64 shape arithmetic stays exact.
func hostMap(dt tensor.DType, ins []*hostTensor, f func(v []float64) float64, fi func(v []int64) int64) (*hostTensor, error) {
	shapes := make([][]int, len(ins))
	allInt := fi != nil && !dt.IsFloat()
	for i, h := range ins {
		shapes[i] = h.shape
		if h.i == nil {
			allInt = false
		}
	}
	shape, err := broadcastShapes(shapes...)
	if err != nil {
		return nil, err
	}
	out := newHost(dt, shape)
	vf := make([]float64, len(ins))
	vi := make([]int64, len(ins))
	for k := range out.size() {
		for j, h := range ins {
			p := broadcastIndex(k, shape, h.shape)
			if allInt {
				vi[j] = h.i[p]
			} else {
				vf[j] = h.at(p)
			}
		}
		if allInt {
			out.setInt(k, fi(vi))
		} else {
			out.set(k, f(vf))
		}
	}
	return out, nil
}

// hostGather is ONNX Gather on the host.
func hostGather(data, idx *hostTensor, axis int) (*hostTensor, error) {
	r := len(data.shape)
	if axis < -r || axis >= r {
		return nil, fmt.Errorf("axis %d out of range for rank %d", axis, r)
	}
	if axis < 0 {
		axis += r
	}
	outShape := append(append(append([]int{}, data.shape[:axis]...), idx.shape...), data.shape[axis+1:]...)
	out := newHost(data.dtype, outShape)
	outer := backends.NumElements(data.shape[:axis])
	inner := backends.NumElements(data.shape[axis+1:])
	n := data.shape[axis]
	ii := idx.ints()
	k := 0
	for o := range outer {
		for _, x := range ii {
			if x < 0 {
				x += int64(n)
			}
			if x < 0 || x >= int64(n) {
				return nil, fmt.Errorf("index %d out of range for axis %d of size %d", x, axis, n)
			}
			base := (o*n + int(x)) * inner
			for j := range inner {
				if data.f != nil {
					out.f[k] = data.f[base+j]
				} else {
					out.i[k] = data.i[base+j]
				}
				k++
			}
		}
	}
	return out, nil
}

// hostConcat concatenates along axis.
func hostConcat(ins []*hostTensor, axis int) (*hostTensor, error) {
	r := len(ins[0].shape)
	if axis < -r || axis >= r {
		return nil, fmt.Errorf("axis %d out of range for rank %d", axis, r)
	}
	if axis < 0 {
		axis += r
	}
	shape := append([]int{}, ins[0].shape...)
	shape[axis] = 0
	dt := ins[0].dtype
	for _, h := range ins {
		if len(h.shape) != r {
			return nil, fmt.Errorf("inputs of ranks %d and %d", r, len(h.shape))
		}
		for i := range r {
			if i != axis && h.shape[i] != ins[0].shape[i] {
				return nil, fmt.Errorf("shapes %v and %v differ outside axis %d", ins[0].shape, h.shape, axis)
			}
		}
		shape[axis] += h.shape[axis]
	}
	out := newHost(dt, shape)
	outer := backends.NumElements(shape[:axis])
	k := 0
	for o := range outer {
		for _, h := range ins {
			chunk := backends.NumElements(h.shape[axis:])
			for j := range chunk {
				if h.i != nil && out.i != nil {
					out.i[k] = h.i[o*chunk+j]
				} else {
					out.set(k, h.at(o*chunk+j))
				}
				k++
			}
		}
	}
	return out, nil
}

// hostSlice takes data[starts:ends:steps] over axes (already normalised and
// clamped by sliceBounds).
func hostSlice(data *hostTensor, b []sliceBound) *hostTensor {
	shape := append([]int{}, data.shape...)
	start := make([]int, len(shape))
	step := make([]int, len(shape))
	for i := range step {
		step[i] = 1
	}
	for _, s := range b {
		shape[s.axis] = s.n
		start[s.axis] = s.start
		step[s.axis] = s.step
	}
	out := newHost(data.dtype, shape)
	st := stridesOf(data.shape)
	for k := range out.size() {
		rem, src := k, 0
		for i := len(shape) - 1; i >= 0; i-- {
			c := rem % shape[i]
			rem /= shape[i]
			src += (start[i] + c*step[i]) * st[i]
		}
		if data.f != nil {
			out.f[k] = data.f[src]
		} else {
			out.i[k] = data.i[src]
		}
	}
	return out
}

// hostTranspose permutes axes.
func hostTranspose(data *hostTensor, perm []int) *hostTensor {
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = data.shape[p]
	}
	out := newHost(data.dtype, shape)
	st := stridesOf(data.shape)
	for k := range out.size() {
		rem, src := k, 0
		for i := len(shape) - 1; i >= 0; i-- {
			c := rem % shape[i]
			rem /= shape[i]
			src += c * st[perm[i]]
		}
		if data.f != nil {
			out.f[k] = data.f[src]
		} else {
			out.i[k] = data.i[src]
		}
	}
	return out
}

// hostExpand broadcasts data to shape.
func hostExpand(data *hostTensor, shape []int) *hostTensor {
	out := newHost(data.dtype, shape)
	for k := range out.size() {
		p := broadcastIndex(k, shape, data.shape)
		if data.f != nil {
			out.f[k] = data.f[p]
		} else {
			out.i[k] = data.i[p]
		}
	}
	return out
}

// hostReduce reduces over axes (normalised, sorted) with keepdims.
func hostReduce(data *hostTensor, axes []int, keep bool, init float64, f func(acc, v float64) float64, fin func(acc float64, n int) float64) *hostTensor {
	red := make([]bool, len(data.shape))
	for _, a := range axes {
		red[a] = true
	}
	var outShape, keptShape []int
	for i, d := range data.shape {
		if red[i] {
			keptShape = append(keptShape, 1)
			if keep {
				outShape = append(outShape, 1)
			}
		} else {
			keptShape = append(keptShape, d)
			outShape = append(outShape, d)
		}
	}
	dt := data.dtype
	out := newHost(dt, outShape)
	acc := make([]float64, out.size())
	for k := range acc {
		acc[k] = init
	}
	for k := range data.size() {
		rem, dst := k, 0
		stride := 1
		for i := len(data.shape) - 1; i >= 0; i-- {
			c := rem % data.shape[i]
			rem /= data.shape[i]
			if !red[i] {
				dst += c * stride
				stride *= keptShape[i]
			}
		}
		acc[dst] = f(acc[dst], data.at(k))
	}
	n := 1
	for _, a := range axes {
		n *= data.shape[a]
	}
	for k := range acc {
		out.set(k, fin(acc[k], n))
	}
	return out
}

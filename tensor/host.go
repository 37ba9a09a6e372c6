package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// hostBytes copies t's elements, in row-major order, to the host. It waits
// for queued work and panics with ErrDeviceFailed if the device failed (the
// *Error also matches the backend's own sentinel, ErrDivideByZero say).
func (t *Tensor) hostBytes(op string) []byte {
	t.live(op)
	t.dev.st.hostReads.Add(1)
	c := t
	if !t.IsContiguous() {
		c = rawContiguous(op, t)
		defer c.Release()
	}
	sz := c.dtype.Size()
	raw := make([]byte, c.NumElements()*sz)
	if err := c.backend().Read(c.st.buf, int64(c.offset*sz), raw); err != nil {
		fail(op, errors.Join(ErrDeviceFailed, err), "reading %s %s from %s: %v", shapeString(t.shape), t.dtype, t.dev, err)
	}
	return raw
}

// Bytes returns t's elements as raw little-endian bytes in row-major order.
func (t *Tensor) Bytes() []byte { return t.hostBytes("Bytes") }

// decode converts raw element bytes of dtype to float64.
func decode(dtype DType, raw []byte, i int) float64 {
	switch dtype {
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	case Float16:
		return float64(backends.Float16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:])))
	case BFloat16:
		return float64(backends.BFloat16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:])))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(raw[8*i:])))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(raw[2*i:])))
	case Int8:
		return float64(int8(raw[i]))
	case Uint8, Bool:
		return float64(raw[i])
	}
	return math.NaN()
}

// Float64s returns a copy of t's elements as float64, in row-major order.
func (t *Tensor) Float64s() []float64 {
	raw := t.hostBytes("Float64s")
	out := make([]float64, t.NumElements())
	for i := range out {
		out[i] = decode(t.dtype, raw, i)
	}
	return out
}

// Float32s returns a copy of t's elements as float32, in row-major order.
func (t *Tensor) Float32s() []float32 {
	raw := t.hostBytes("Float32s")
	out := make([]float32, t.NumElements())
	for i := range out {
		out[i] = float32(decode(t.dtype, raw, i))
	}
	return out
}

// Int64s returns a copy of t's elements as int64 (floats truncated toward zero).
func (t *Tensor) Int64s() []int64 {
	raw := t.hostBytes("Int64s")
	out := make([]int64, t.NumElements())
	for i := range out {
		switch t.dtype {
		case Int64:
			out[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		default:
			out[i] = int64(decode(t.dtype, raw, i))
		}
	}
	return out
}

// Bools returns a copy of t's elements as bool (non-zero is true).
func (t *Tensor) Bools() []bool {
	raw := t.hostBytes("Bools")
	out := make([]bool, t.NumElements())
	for i := range out {
		out[i] = decode(t.dtype, raw, i) != 0
	}
	return out
}

// Item returns the single element of a one-element tensor as float64.
func (t *Tensor) Item() float64 {
	t.live("Item")
	if t.NumElements() != 1 {
		fail("Item", ErrShape, "Item needs a tensor with one element, got shape %s", shapeString(t.shape))
	}
	return t.Float64s()[0]
}

// To returns t converted to dtype. Gradients flow back through float
// conversions.
//
// Floats convert to integers by truncating toward zero, as in PyTorch.
// A float outside the integer type's range (undefined in PyTorch) is
// converted to int64 (saturating, NaN giving 0) and then wrapped to the
// narrower type by two's complement truncation, as a Go conversion of the
// int64 does: 300.7 to Int8 gives 44. Integers convert to narrower
// integers by the same wrap (int64 200 to Int8 gives -56), as in PyTorch.
func (t *Tensor) To(dtype DType) *Tensor {
	t.live("To")
	if !dtype.Valid() {
		fail("To", ErrDType, "unknown dtype %d", dtype)
	}
	out := rawCast("To", t, dtype)
	if !dtype.IsFloat() {
		if t.traced {
			return recordTraced("cast", map[string]any{"dtype": dtype.String()}, out, t)
		}
		return out
	}
	return record("cast", map[string]any{"dtype": dtype.String()}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{rawCast("To", g, t.dtype)}
	})
}

// ToDevice returns t on dev. On the same physical device it returns a view
// carrying dev's flags (Autodiff, NoGrad) without copying; across devices
// it copies through the host. Gradients flow back across the move.
func (t *Tensor) ToDevice(dev Device) *Tensor {
	t.live("ToDevice")
	dev.check("ToDevice")
	var out *Tensor
	if dev.st == t.dev.st {
		out = t.newView(t.shape, t.strides, t.offset)
	} else {
		out = fromBytes("ToDevice", dev.Inner(), t.dtype, t.Shape(), t.hostBytes("ToDevice"))
	}
	out.dev = dev
	src := t.dev
	out = record("to_device", map[string]any{"device": dev.String()}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		if g.dev.st == src.st {
			return []*Tensor{g}
		}
		return []*Tensor{fromBytes("ToDevice", src.Inner(), g.dtype, g.Shape(), g.hostBytes("ToDevice"))}
	})
	if dev.noGrad {
		out.dev = dev
	}
	return out
}

// AllClose reports whether t and other have the same shape and
// |t − other| ≤ atol + rtol·|other| everywhere (NaNs equal only to NaNs).
func (t *Tensor) AllClose(other *Tensor, rtol, atol float64) bool {
	if !sameShape(t.shape, other.shape) {
		return false
	}
	a, b := t.Float64s(), other.Float64s()
	for i := range a {
		if math.IsNaN(a[i]) || math.IsNaN(b[i]) {
			if math.IsNaN(a[i]) != math.IsNaN(b[i]) {
				return false
			}
			continue
		}
		if a[i] == b[i] {
			continue
		}
		if math.Abs(a[i]-b[i]) > atol+rtol*math.Abs(b[i]) {
			return false
		}
	}
	return true
}

// String formats t like PyTorch: values (truncated with ... for large
// tensors), then shape, dtype and device.
func (t *Tensor) String() string {
	if t == nil {
		return "tensor(nil)"
	}
	if t.ref == nil {
		return "tensor(<invalid>)"
	}
	if t.Released() {
		return fmt.Sprintf("tensor(<released>, shape=%s, dtype=%s)", shapeString(t.shape), t.dtype)
	}
	return formatTensor(t)
}

// Assign copies src's values into t's storage in place (broadcasting src to
// t's shape, converting dtype), and returns t. It records nothing: it is how
// optimizers update parameters and how state is restored. Views sharing t's
// storage see the change.
func (t *Tensor) Assign(src *Tensor) *Tensor {
	sameDevice("Assign", t, src)
	broadcastShapes("Assign", src.shape, t.shape)
	if len(src.shape) > len(t.shape) {
		fail("Assign", ErrShape, "cannot assign %s into %s", shapeString(src.shape), shapeString(t.shape))
	}
	for i := range src.shape {
		if d := t.shape[len(t.shape)-len(src.shape)+i]; src.shape[i] != d && src.shape[i] != 1 {
			fail("Assign", ErrShape, "cannot assign %s into %s", shapeString(src.shape), shapeString(t.shape))
		}
	}
	t.backend().Copy(t.view(), src.broadcastView(t.shape))
	return t
}

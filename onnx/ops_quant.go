package onnx

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// Quantized operators (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger,
// ConvInteger) run on the host: Kiln's devices have no 8-bit arithmetic,
// and a quantized graph is something to import and check, not to train.
// Int8 and Int16 values are held as Int8 and Int16 (as Load holds them),
// saturated to their range where ONNX says so; the integer products of
// MatMulInteger and ConvInteger are Int32.

func init() {
	ops["QuantizeLinear"] = hostOp(func(c *call) []*hostTensor {
		x, scale := c.h(0), c.h(1)
		dt, lo, hi := quantType(c, 2)
		var zp *hostTensor
		if c.has(2) {
			zp = c.h(2)
		}
		axis := quantAxis(c, len(x.shape), scale)
		checkQuantParams(c, scale, zp)
		out := newHost(dt, x.shape)
		for k := range x.size() {
			ch := quantChannel(x.shape, axis, k)
			z := 0.0
			if zp != nil {
				z = zp.at(min(ch, zp.size()-1))
			}
			v := math.RoundToEven(float64(float32(x.at(k))/float32(scale.at(min(ch, scale.size()-1))))) + z
			out.setInt(k, int64(math.Max(lo, math.Min(hi, v))))
		}
		return hosts(out)
	})
	ops["DequantizeLinear"] = hostOp(func(c *call) []*hostTensor {
		x, scale := c.h(0), c.h(1)
		var zp *hostTensor
		if c.has(2) {
			zp = c.h(2)
		}
		axis := quantAxis(c, len(x.shape), scale)
		checkQuantParams(c, scale, zp)
		out := newHost(scale.dtype, x.shape)
		for k := range x.size() {
			ch := quantChannel(x.shape, axis, k)
			z := 0.0
			if zp != nil {
				z = zp.at(min(ch, zp.size()-1))
			}
			out.set(k, float64(float32(x.at(k)-z)*float32(scale.at(min(ch, scale.size()-1)))))
		}
		return hosts(out)
	})
	ops["DynamicQuantizeLinear"] = hostOp(func(c *call) []*hostTensor {
		x := c.h(0)
		lo, hi := float32(0), float32(0)
		for k := range x.size() {
			v := float32(x.at(k))
			lo, hi = min(lo, v), max(hi, v)
		}
		scale := (hi - lo) / 255
		zp := float32(0)
		if scale != 0 {
			zp = float32(math.RoundToEven(float64(max(0, min(255, 0-lo/scale)))))
		}
		y := newHost(tensor.Uint8, x.shape)
		for k := range x.size() {
			v := 0.0
			if scale != 0 {
				v = math.RoundToEven(float64(float32(x.at(k))/scale)) + float64(zp)
			}
			y.setInt(k, int64(math.Max(0, math.Min(255, v))))
		}
		s := newHost(tensor.Float32, nil)
		s.set(0, float64(scale))
		z := newHost(tensor.Uint8, nil)
		z.setInt(0, int64(zp))
		return hosts(y, s, z)
	})
	ops["MatMulInteger"] = hostOp(func(c *call) []*hostTensor {
		a, b := quantShift(c, 0, 2, len(c.h(0).shape)-2), quantShift(c, 1, 3, -1)
		return hosts(hostMatmul(c, a, b, tensor.Int32))
	})
	ops["QLinearMatMul"] = hostOp(func(c *call) []*hostTensor {
		a, b := quantShift(c, 0, 2, len(c.h(0).shape)-2), quantShift(c, 3, 5, -1)
		acc := hostMatmul(c, a, b, tensor.Float64)
		return hosts(requantize(c, acc, c.h(1), c.h(4), 6, 7, len(acc.shape)-1))
	})
	ops["ConvInteger"] = hostOp(func(c *call) []*hostTensor {
		x, w := quantShift(c, 0, 2, -1), quantShift(c, 1, 3, 0)
		return hosts(hostConv(c, x, w, nil, tensor.Int32))
	})
	ops["QLinearConv"] = hostOp(func(c *call) []*hostTensor {
		x, w := quantShift(c, 0, 2, -1), quantShift(c, 3, 5, 0)
		var b *hostTensor
		if c.has(8) {
			b = c.h(8)
		}
		acc := hostConv(c, x, w, b, tensor.Float64)
		return hosts(requantize(c, acc, c.h(1), c.h(4), 6, 7, 1))
	})
}

// hostOp makes an operator computed on the host whatever its inputs:
// device inputs are downloaded, the outputs stay on the host until an
// operator needs them on the device.
func hostOp(f func(c *call) []*hostTensor) *opDef {
	return &opDef{host: f, run: func(c *call) []*value {
		var vs []*value
		for _, h := range f(c) {
			if h == nil {
				vs = append(vs, nil)
				continue
			}
			vs = append(vs, &value{h: h})
		}
		return vs
	}}
}

// quantType returns the quantized element type that zero-point input k
// gives (uint8 when it is left out) with its range.
func quantType(c *call, k int) (tensor.DType, float64, float64) {
	if !c.has(k) || c.h(k).dtype == tensor.Uint8 {
		return tensor.Uint8, 0, 255
	}
	switch c.h(k).dtype {
	case tensor.Int8:
		return tensor.Int8, math.MinInt8, math.MaxInt8
	case tensor.Int16:
		return tensor.Int16, math.MinInt16, math.MaxInt16
	}
	switch c.declaredType(k) {
	case TypeInt16:
		return tensor.Int32, math.MinInt16, math.MaxInt16
	case TypeUint16:
		return tensor.Int32, 0, math.MaxUint16
	}
	if c.h(k).dtype == tensor.Int32 {
		// An int8 zero point computed as Int32 (a zero point whose
		// declared type is unknown is taken for int8, the common case).
		return tensor.Int32, -128, 127
	}
	c.fail(tensor.ErrDType, "zero point of type %s: Kiln quantizes to uint8, int8, int16 and uint16", c.h(k).dtype)
	return 0, 0, 0
}

// declaredType returns the ONNX element type the graph declares for input
// k (TypeUndefined when it does not say).
func (c *call) declaredType(k int) int32 {
	if c.p == nil || c.p.proto == nil || c.p.proto.Graph == nil || k >= len(c.node.Inputs) {
		return TypeUndefined
	}
	name := c.node.Inputs[k]
	g := c.p.proto.Graph
	for _, vs := range [][]*ValueInfoProto{g.Inputs, g.ValueInfo, g.Outputs} {
		for _, v := range vs {
			if v.Name == name && v.Type != nil {
				return v.Type.ElemType
			}
		}
	}
	for _, t := range g.Initializers {
		if t.Name == name {
			return t.DataType
		}
	}
	return TypeUndefined
}

// checkQuantParams fails for an empty scale or zero point, or for ones of
// different sizes.
func checkQuantParams(c *call, scale, zp *hostTensor) {
	if scale.size() == 0 || zp != nil && zp.size() != scale.size() {
		c.fail(tensor.ErrShape, "scale %v and zero point do not fit each other", scale.shape)
	}
}

// quantAxis returns the axis a per-axis scale runs along (-1 for a
// per-tensor scale).
func quantAxis(c *call, rank int, scale *hostTensor) int {
	if scale.size() <= 1 && len(scale.shape) <= 1 {
		return -1
	}
	a := c.axis(c.attrInt("axis", 1), rank)
	return a
}

// quantChannel returns the index along axis of flat element k of shape
// (0 when axis < 0).
func quantChannel(shape []int, axis, k int) int {
	if axis < 0 {
		return 0
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	return k / inner % shape[axis]
}

// quantShift returns input k minus zero-point input z (a scalar, or one
// value per index along axis; axis -1 allows scalars only), as Int64.
func quantShift(c *call, k, z, axis int) *hostTensor {
	x := c.h(k)
	out := newHost(tensor.Int64, x.shape)
	var zp *hostTensor
	if c.has(z) {
		zp = c.h(z)
	}
	for e := range x.size() {
		v := x.ints()[e]
		if zp != nil {
			if zp.size() == 1 {
				v -= zp.ints()[0]
			} else if axis >= 0 && axis < len(x.shape) && zp.size() == x.shape[axis] {
				v -= zp.ints()[quantChannel(x.shape, axis, e)]
			} else {
				c.fail(tensor.ErrShape, "zero point %v does not fit input %v", zp.shape, x.shape)
			}
		}
		out.i[e] = v
	}
	return out
}

// requantize maps accumulators acc to the output's quantized type:
// acc·aScale·bScale/yScale rounded half to even, plus the zero point
// (input z), saturated. bScale may hold one value per index along axis.
func requantize(c *call, acc, aScale, bScale *hostTensor, s, z, axis int) *hostTensor {
	dt, lo, hi := quantType(c, z)
	yScale := c.scalar(s)
	zp := 0.0
	if c.has(z) {
		zp = c.scalar(z)
	}
	if aScale.size() == 0 || bScale.size() == 0 {
		c.fail(tensor.ErrShape, "empty scale")
	}
	out := newHost(dt, acc.shape)
	for k := range acc.size() {
		bs := bScale.at(0)
		if bScale.size() > 1 {
			bs = bScale.at(quantChannel(acc.shape, axis, k) % bScale.size())
		}
		m := float32(aScale.at(0)) * float32(bs)
		v := math.RoundToEven(float64(float32(acc.at(k))*m/float32(yScale))) + zp
		out.setInt(k, int64(math.Max(lo, math.Min(hi, v))))
	}
	return out
}

// hostMatmul multiplies a [..., m, k] by b [..., k, n] with NumPy's
// broadcasting of the leading dimensions (1-D operands promoted and
// demoted as by MatMul).
func hostMatmul(c *call, a, b *hostTensor, dt tensor.DType) *hostTensor {
	as, bs := append([]int{}, a.shape...), append([]int{}, b.shape...)
	va, vb := len(as) == 1, len(bs) == 1
	if va {
		as = []int{1, as[0]}
	}
	if vb {
		bs = []int{bs[0], 1}
	}
	if len(as) < 2 || len(bs) < 2 || as[len(as)-1] != bs[len(bs)-2] {
		c.fail(tensor.ErrShape, "matmul of %v and %v", a.shape, b.shape)
	}
	m, kk, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	batch, err := broadcastShapes(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		c.fail(tensor.ErrShape, "matmul of %v and %v: %v", a.shape, b.shape, err)
	}
	shape := append(append([]int{}, batch...), m, n)
	out := newHost(dt, shape)
	nb := 1
	for _, d := range batch {
		nb *= d
	}
	aBatch := as[:len(as)-2]
	bBatch := bs[:len(bs)-2]
	for q := range nb {
		ao := broadcastIndex(q, batch, aBatch) * m * kk
		bo := broadcastIndex(q, batch, bBatch) * kk * n
		for i := range m {
			for j := range n {
				var acc float64
				for p := range kk {
					acc += a.at(ao+i*kk+p) * b.at(bo+p*n+j)
				}
				out.set(q*m*n+i*n+j, acc)
			}
		}
	}
	var final []int
	switch {
	case va && vb:
		final = batch
	case va:
		final = append(append([]int{}, batch...), n)
	case vb:
		final = append(append([]int{}, batch...), m)
	default:
		return out
	}
	return out.reshaped(final)
}

// hostConv runs an N-D grouped convolution of x [N, C, ...] with w [M,
// C/group, ...] and bias b ([M] or nil) under the node's strides,
// dilations and pads.
func hostConv(c *call, x, w, b *hostTensor, dt tensor.DType) *hostTensor {
	if len(x.shape) < 3 || len(w.shape) != len(x.shape) {
		c.fail(tensor.ErrShape, "convolution of %v by %v", x.shape, w.shape)
	}
	nsp := len(x.shape) - 2
	in, k := x.shape[2:], w.shape[2:]
	strides, dil, begin, end := windowArgs(c, in, k)
	group := int(c.attrInt("group", 1))
	N, C, M := x.shape[0], x.shape[1], w.shape[0]
	if group <= 0 || C%group != 0 || M%group != 0 || w.shape[1] != C/group || b != nil && b.size() != M {
		c.fail(tensor.ErrShape, "convolution of %v by %v with group %d", x.shape, w.shape, group)
	}
	outSp := make([]int, nsp)
	for i := range nsp {
		outSp[i] = (in[i]+begin[i]+end[i]-(k[i]-1)*dil[i]-1)/strides[i] + 1
		if outSp[i] < 0 {
			outSp[i] = 0
		}
	}
	shape := append([]int{N, M}, outSp...)
	c.size(shape)
	out := newHost(dt, shape)
	outSize, kSize, inSize := 1, 1, 1
	for i := range nsp {
		outSize *= outSp[i]
		kSize *= k[i]
		inSize *= in[i]
	}
	cg := C / group
	pos := make([]int, nsp)
	kp := make([]int, nsp)
	for n := range N {
		for m := range M {
			g := m / (M / group)
			for o := range outSize {
				rem := o
				for i := nsp - 1; i >= 0; i-- {
					pos[i] = rem % outSp[i]
					rem /= outSp[i]
				}
				acc := 0.0
				if b != nil {
					acc = b.at(m)
				}
				for q := range kSize {
					rem := q
					for i := nsp - 1; i >= 0; i-- {
						kp[i] = rem % k[i]
						rem /= k[i]
					}
					off, inside := 0, true
					for i := range nsp {
						p := pos[i]*strides[i] - begin[i] + kp[i]*dil[i]
						if p < 0 || p >= in[i] {
							inside = false
							break
						}
						off = off*in[i] + p
					}
					if !inside {
						continue
					}
					for ci := range cg {
						acc += x.at((n*C+g*cg+ci)*inSize+off) * w.at((m*cg+ci)*kSize+q)
					}
				}
				out.set((n*M+m)*outSize+o, acc)
			}
		}
	}
	return out
}

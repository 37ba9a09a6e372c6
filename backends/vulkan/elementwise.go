//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"fmt"
	"math"
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// Element-wise kernels: Fill, Copy, Unary, UnaryGrad, Binary, BinaryScalar
// and Where (shaders/fill.comp, copy.comp, unary.comp, binary.comp,
// where.comp). Each walks its out view in row-major order, one element per
// invocation of a 256-wide grid-stride loop.

// Fill sets every element of out to v, converted to out's dtype.
func (b *Backend) Fill(out backends.View, v float64) {
	if !b.ok("fill", out) {
		return
	}
	n := out.NumElements()
	if n == 0 {
		return
	}
	var w argWriter
	w.view(out)
	w.i64(int64(n))
	w.f64(v)
	b.launch("fill", []int32{int32(out.DType)}, &w, groups1D(n))
}

// launchCoded launches one of the element-wise shaders whose dtype and op
// codes are specialisation constants on hardware, and arguments read at run
// time (spec constant DYN = 1) on software devices: llvmpipe compiles each
// specialisation anew, which for every dtype and op pair takes minutes, so
// there one pipeline per shader serves every call. The codes are written
// after w's arguments either way.
func (b *Backend) launchCoded(name string, codes []int32, w *argWriter, groups [3]uint32) {
	spec := make([]int32, len(codes)+1)
	if b.pd.software() {
		spec[len(codes)] = 1
	} else {
		copy(spec, codes)
	}
	for _, c := range codes {
		w.i64(int64(c))
	}
	b.launch(name, spec, w, groups)
}

// intLike reports whether d is an integer dtype or Bool.
func intLike(d backends.DType) bool { return d.IsInt() || d == backends.Bool }

// elementwiseN checks the views of an element-wise kernel (each belongs to
// the device and stays inside its buffer, and each has out's shape) and
// returns out's element count; false when there is nothing to launch: a
// view was refused (the sticky error says why) or out is empty.
func (b *Backend) elementwiseN(op string, out backends.View, ins ...backends.View) (int, bool) {
	if !b.ok(op, append([]backends.View{out}, ins...)...) {
		return 0, false
	}
	for _, v := range ins {
		if !slices.Equal(v.Shape, out.Shape) {
			b.fail(fmt.Errorf("vulkan: %s: input shape %v differs from out's %v", op, v.Shape, out.Shape))
			return 0, false
		}
	}
	n := out.NumElements()
	return n, n > 0
}

// Copy copies x into out element by element, converting dtypes.
func (b *Backend) Copy(out, x backends.View) {
	if !b.pd.features.float64 {
		b.onHost("copy "+x.DType.String()+" to "+out.DType.String(), []backends.View{out}, []backends.View{x}, func(c backends.Backend, o, i []backends.View) { c.Copy(o[0], i[0]) })
		return
	}
	n, ok := b.elementwiseN("copy", out, x)
	if !ok {
		return
	}
	var w argWriter
	w.view(out)
	w.view(x)
	w.i64(int64(n))
	b.launchCoded("copy", []int32{int32(out.DType), int32(x.DType)}, &w, groups1D(n))
}

// unaryInDouble lists the ops unary.comp computes in double, exactly, for
// every dtype; the others compute in float (Float32, Float16, BFloat16).
var unaryInDouble = map[backends.UnaryOp]bool{
	backends.Neg: true, backends.Abs: true, backends.Sign: true, backends.Sqrt: true, backends.Rsqrt: true,
	backends.Square: true, backends.Recip: true, backends.Floor: true, backends.Ceil: true, backends.Round: true,
	backends.Relu: true, backends.LeakyRelu: true, backends.Relu6: true, backends.HardSigmoid: true,
	backends.HardSwish: true, backends.Softsign: true, backends.Clamp: true, backends.IsNaN: true,
	backends.IsInf: true, backends.Not: true,
}

// unaryF64 lists the transcendental ops unary.comp also computes in double
// (with shaders/f64math.glsl's exp and log) for Float64 and integer inputs.
var unaryF64 = map[backends.UnaryOp]bool{
	backends.Exp: true, backends.Log: true, backends.Log1p: true, backends.Tanh: true, backends.Sigmoid: true,
	backends.LogSigmoid: true, backends.Silu: true, backends.Softplus: true, backends.Elu: true,
	backends.Selu: true, backends.Celu: true,
}

// f32Like reports whether d is Float32, Float16 or BFloat16: the dtypes
// whose transcendental ops unary.comp and binary.comp compute in float.
func f32Like(d backends.DType) bool {
	return d == backends.Float32 || d == backends.Float16 || d == backends.BFloat16
}

// unaryShader returns the shader that computes op on these dtypes:
// unary.comp for the exact ops, those of unaryF64 and every op on Float32,
// Float16 and BFloat16 alone; math_f64.comp, in double, for the other
// transcendental ops (sin, erf, asin, …) on Float64 and integers. It
// returns "" on a device without shaderFloat64: the host runs everything.
func (b *Backend) unaryShader(op backends.UnaryOp, dts ...backends.DType) string {
	if !b.pd.features.float64 || op >= backends.UnaryOp(len(backends.UnaryOps)) {
		return ""
	}
	if unaryInDouble[op] || unaryF64[op] {
		return "unary"
	}
	for _, dt := range dts {
		if !f32Like(dt) {
			return "math_f64"
		}
	}
	return "unary"
}

// Unary applies op to x element-wise. On a device without shaderFloat64 it
// runs on the host (counted in HostOps).
func (b *Backend) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	shader := b.unaryShader(op, x.DType)
	if shader == "" {
		b.onHost("unary "+op.String()+" "+x.DType.String(), []backends.View{out}, []backends.View{x}, func(c backends.Backend, o, i []backends.View) {
			c.Unary(op, o[0], i[0], p0, p1)
		})
		return
	}
	n, ok := b.elementwiseN(op.String(), out, x)
	if !ok {
		return
	}
	var w argWriter
	w.view(out)
	w.view(x)
	w.view(x) // g: unused
	w.i64(int64(n))
	w.f64(p0)
	w.f64(p1)
	// unary.comp's codes are XDT, ODT, OP, GRAD, GDT; math_f64.comp's XDT,
	// ODT, OP, KIND (0: forward), YDT: the same words.
	b.launchCoded(shader, []int32{int32(x.DType), int32(out.DType), int32(op), 0, int32(x.DType)}, &w, groups1D(n))
}

// UnaryGrad computes g·op'(x) element-wise.
func (b *Backend) UnaryGrad(op backends.UnaryOp, out, x, g backends.View, p0, p1 float64) {
	shader := b.unaryShader(op, x.DType, g.DType, out.DType)
	if shader == "" {
		b.onHost("unary_grad "+op.String()+" "+x.DType.String(), []backends.View{out}, []backends.View{x, g}, func(c backends.Backend, o, i []backends.View) {
			c.UnaryGrad(op, o[0], i[0], i[1], p0, p1)
		})
		return
	}
	n, ok := b.elementwiseN(op.String()+" grad", out, x, g)
	if !ok {
		return
	}
	var w argWriter
	w.view(out)
	w.view(x)
	w.view(g)
	w.i64(int64(n))
	w.f64(p0)
	w.f64(p1)
	b.launchCoded(shader, []int32{int32(x.DType), int32(out.DType), int32(op), 1, int32(g.DType)}, &w, groups1D(n))
}

// binaryIntForm lists the ops binary.comp computes exactly in int64 on
// integer inputs: the CPU's integer forms.
var binaryIntForm = map[backends.BinaryOp]bool{
	backends.Add: true, backends.Sub: true, backends.Mul: true, backends.Maximum: true, backends.Minimum: true,
	backends.BitAnd: true, backends.BitOr: true, backends.BitXor: true, backends.LeftShift: true,
	backends.RightShift: true, backends.Rem: true, backends.FloorDiv: true, backends.Pow: true,
}

// binaryInDouble lists the ops binary.comp computes in double: exact, as
// the CPU computes them in float64 (or in float32, which rounds the same).
// The bitwise ops on floats are int64(a) op int64(b), as backends.BinaryOps
// defines them; Rem and FloorDiv go through f64math.glsl's exact fmod.
var binaryInDouble = map[backends.BinaryOp]bool{
	backends.Add: true, backends.Sub: true, backends.Mul: true, backends.Div: true, backends.Maximum: true,
	backends.Minimum: true, backends.Eq: true, backends.Ne: true, backends.Lt: true, backends.Le: true,
	backends.Gt: true, backends.Ge: true, backends.And: true, backends.Or: true, backends.Xor: true,
	backends.BitAnd: true, backends.BitOr: true, backends.BitXor: true, backends.LeftShift: true,
	backends.RightShift: true, backends.Rem: true, backends.FloorDiv: true,
}

// How a binary op is computed (binaryPath).
const (
	binaryDouble = 0 // binary.comp in double (Pow and Atan2 in float on Float32, Float16, BFloat16)
	binaryInt    = 1 // binary.comp exactly in int64
	binaryMath   = 2 // math_f64.comp in double (Pow and Atan2 on Float64 and integers)
)

// binaryPath returns how op is computed on inputs of dtype dt and false
// on a device without shaderFloat64, where such calls run on the host.
// intOK says whether the CPU would take its integer path.
func (b *Backend) binaryPath(op backends.BinaryOp, dt backends.DType, intOK bool) (int32, bool) {
	if !b.pd.features.float64 || op >= backends.BinaryOp(len(backends.BinaryOps)) {
		return 0, false
	}
	switch {
	case intOK && intLike(dt) && (backends.BinaryOps[op].Predicate || binaryIntForm[op]):
		return binaryInt, true
	case binaryInDouble[op]:
		return binaryDouble, true
	case (op == backends.Pow || op == backends.Atan2) && f32Like(dt):
		return binaryDouble, true
	case op == backends.Pow || op == backends.Atan2:
		return binaryMath, true
	}
	return 0, false
}

// Binary applies op to a and b element-wise, broadcasting by stride 0. An
// integer Rem or FloorDiv by zero records an error wrapping
// backends.ErrDivideByZero at the next Sync.
func (b *Backend) Binary(op backends.BinaryOp, out, x, y backends.View) {
	path, onDevice := b.binaryPath(op, x.DType, intLike(y.DType))
	if !onDevice || x.DType != y.DType {
		b.onHost("binary "+op.String()+" "+x.DType.String(), []backends.View{out}, []backends.View{x, y}, func(c backends.Backend, o, i []backends.View) {
			c.Binary(op, o[0], i[0], i[1])
		})
		return
	}
	n, ok := b.elementwiseN(op.String(), out, x, y)
	if !ok {
		return
	}
	var w argWriter
	w.view(out)
	w.view(x)
	w.view(y)
	w.i64(int64(n))
	w.f64(0)
	w.i64(0)
	if path == binaryMath { // codes XDT, ODT, OP, KIND (2: a op b), YDT
		b.launchCoded("math_f64", []int32{int32(x.DType), int32(out.DType), int32(op), 2, int32(y.DType)}, &w, groups1D(n))
		return
	}
	b.launchCoded("binary", []int32{int32(x.DType), int32(out.DType), int32(op), 0, path}, &w, groups1D(n))
}

// BinaryScalar applies op to a and the scalar s (s op a when reverse), with
// Binary's integer division rule.
func (b *Backend) BinaryScalar(op backends.BinaryOp, out, x backends.View, s float64, reverse bool) {
	intOK := !backends.BinaryOps[op].Predicate && s == math.Trunc(s) && !math.IsInf(s, 0)
	path, onDevice := b.binaryPath(op, x.DType, intOK)
	if !onDevice {
		b.onHost("binary_scalar "+op.String()+" "+x.DType.String(), []backends.View{out}, []backends.View{x}, func(c backends.Backend, o, i []backends.View) {
			c.BinaryScalar(op, o[0], i[0], s, reverse)
		})
		return
	}
	n, ok := b.elementwiseN(op.String(), out, x)
	if !ok {
		return
	}
	mode := int32(1)
	if reverse {
		mode = 2
	}
	var w argWriter
	w.view(out)
	w.view(x)
	w.view(x) // b: unused
	w.i64(int64(n))
	w.f64(s)
	w.i64(int64(s))
	if path == binaryMath { // KIND 3: a op s, 4: s op a
		b.launchCoded("math_f64", []int32{int32(x.DType), int32(out.DType), int32(op), 2 + mode, int32(x.DType)}, &w, groups1D(n))
		return
	}
	b.launchCoded("binary", []int32{int32(x.DType), int32(out.DType), int32(op), mode, path}, &w, groups1D(n))
}

// Where sets out to a where cond is true and to b elsewhere.
func (b *Backend) Where(out, cond, x, y backends.View) {
	if !b.pd.features.float64 {
		b.onHost("where", []backends.View{out}, []backends.View{cond, x, y}, func(c backends.Backend, o, i []backends.View) {
			c.Where(o[0], i[0], i[1], i[2])
		})
		return
	}
	n, ok := b.elementwiseN("where", out, cond, x, y)
	if !ok {
		return
	}
	var w argWriter
	w.view(out)
	w.view(cond)
	w.view(x)
	w.view(y)
	w.i64(int64(n))
	b.launch("where", []int32{int32(out.DType), int32(cond.DType)}, &w, groups1D(n))
}

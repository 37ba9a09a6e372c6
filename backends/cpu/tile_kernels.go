package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Per-tile entry points for package fusion: each returns a function that
// runs one element-wise op over plain float32 slices with no checks, no
// allocation and no hand-off to the worker pool, computing each element
// exactly as the corresponding Backend method computes it for Float32
// views (the same vector kernels and the same float64 fallbacks), so a
// fused tile gives the bits of the unfused op. They return nil for an op
// they do not serve that way; the caller then uses the Backend method.

// TileUnaryF32 returns o = op(x, p0, p1) as Unary computes it for Float32
// out and x; x is as long as o.
func (b *Backend) TileUnaryF32(op backends.UnaryOp, p0, p1 float64) func(o, x []float32) {
	if int(op) < 0 || int(op) >= len(backends.UnaryOps) || backends.UnaryOps[op].Predicate {
		return nil
	}
	if k := transcendentalF32(op); k != nil {
		return k.forward
	}
	return func(o, x []float32) {
		if !vecUnary(op, o, x) {
			unaryFloat(op, o, x, p0, p1)
		}
	}
}

// TileUnaryGradF32 returns o = g·op'(x) as UnaryGrad computes it for
// Float32 out, x and g; x and g are as long as o.
func (b *Backend) TileUnaryGradF32(op backends.UnaryOp, p0, p1 float64) func(o, x, g []float32) {
	if int(op) < 0 || int(op) >= len(backends.UnaryOps) {
		return nil
	}
	if k := transcendentalF32(op); k != nil {
		return k.backward
	}
	return func(o, x, g []float32) { unaryGradFloat(op, o, x, g, p0, p1) }
}

// TileBinaryF32 returns o = x op y as Binary computes it for Float32 out,
// x and y, for the arithmetic ops Binary computes in float32; x and y are
// each as long as o or one element (a broadcast scalar). With nt, the
// vector kernels write o with non-temporal stores (for an output that
// will not be read again soon; the values are the same).
func (b *Backend) TileBinaryF32(op backends.BinaryOp, nt bool) func(o, x, y []float32) {
	if !typedFloatOp(op) {
		return nil
	}
	return func(o, x, y []float32) {
		if !ewF32(op, o, x, y, nt) {
			binaryFloat(op, o, x, y)
		}
	}
}

// TileScalarF32 returns o = x op s (s op x when reverse) as BinaryScalar
// computes it for Float32 out and x: in float32 when s is exactly a float32
// and op is exact in float32, else as float32(float64(x) op s) through the
// op's float64 definition. x is as long as o; nt is as for TileBinaryF32.
// Predicates are not served.
func (b *Backend) TileScalarF32(op backends.BinaryOp, s float64, reverse, nt bool) func(o, x []float32) {
	if int(op) < 0 || int(op) >= len(backends.BinaryOps) || backends.BinaryOps[op].Predicate {
		return nil
	}
	if typedFloatOp(op) && float64(float32(s)) == s {
		sv := []float32{float32(s)}
		return func(o, x []float32) {
			a, c := x, sv
			if reverse {
				a, c = sv, x
			}
			if !ewF32(op, o, a, c, nt) {
				binaryFloat(op, o, a, c)
			}
		}
	}
	loop := scalarF64Loop(op, s, reverse)
	if loop == nil {
		return nil
	}
	return func(o, x []float32) {
		x = x[:len(o)]
		if k := tileF64Scalar(op, o, x, s, reverse); k > 0 {
			o, x = o[k:], x[k:]
		}
		loop(o, x)
	}
}

// scalarF64Loop returns the loop computing o = float32(float64(x) op s)
// (s op x when reverse) as BinaryScalar's float64 path does: binaryF64 on
// float64 rows, rounded by storeF64 — the typed loops of binaryFloat for
// its ops, math.Pow for Pow, the definition otherwise.
func scalarF64Loop(op backends.BinaryOp, s float64, reverse bool) func(o, x []float32) {
	switch op {
	case backends.Add:
		return func(o, x []float32) {
			x = x[:len(o)]
			for i, v := range x {
				o[i] = float32(float64(v) + s)
			}
		}
	case backends.Mul:
		return func(o, x []float32) {
			x = x[:len(o)]
			for i, v := range x {
				o[i] = float32(float64(v) * s)
			}
		}
	case backends.Sub:
		if reverse {
			return func(o, x []float32) {
				x = x[:len(o)]
				for i, v := range x {
					o[i] = float32(s - float64(v))
				}
			}
		}
		return func(o, x []float32) {
			x = x[:len(o)]
			for i, v := range x {
				o[i] = float32(float64(v) - s)
			}
		}
	case backends.Div:
		if reverse {
			return func(o, x []float32) {
				x = x[:len(o)]
				for i, v := range x {
					o[i] = float32(s / float64(v))
				}
			}
		}
		return func(o, x []float32) {
			x = x[:len(o)]
			for i, v := range x {
				o[i] = float32(float64(v) / s)
			}
		}
	case backends.Maximum:
		return func(o, x []float32) {
			x = x[:len(o)]
			for i, v := range x {
				if reverse {
					o[i] = float32(max(s, float64(v)))
				} else {
					o[i] = float32(max(float64(v), s))
				}
			}
		}
	case backends.Minimum:
		return func(o, x []float32) {
			x = x[:len(o)]
			for i, v := range x {
				if reverse {
					o[i] = float32(min(s, float64(v)))
				} else {
					o[i] = float32(min(float64(v), s))
				}
			}
		}
	}
	f := backends.BinaryOps[op].F
	if op == backends.Pow {
		f = math.Pow
	}
	if f == nil {
		return nil
	}
	return func(o, x []float32) {
		x = x[:len(o)]
		for i, v := range x {
			if reverse {
				o[i] = float32(f(s, float64(v)))
			} else {
				o[i] = float32(f(float64(v), s))
			}
		}
	}
}

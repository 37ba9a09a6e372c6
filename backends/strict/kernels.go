package strict

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// Fill implements backends.Backend.
func (s *Backend) Fill(out backends.View, v float64) {
	s.enqueue("fill", []backends.View{out}, func(vs []backends.View) { s.inner.Fill(vs[0], v) })
}

// Copy implements backends.Backend.
func (s *Backend) Copy(out, x backends.View) {
	s.enqueue("copy", []backends.View{out, x}, func(vs []backends.View) { s.inner.Copy(vs[0], vs[1]) })
}

// Unary implements backends.Backend.
func (s *Backend) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	s.enqueue(op.String(), []backends.View{out, x}, func(vs []backends.View) { s.inner.Unary(op, vs[0], vs[1], p0, p1) })
}

// UnaryGrad implements backends.Backend.
func (s *Backend) UnaryGrad(op backends.UnaryOp, out, x, g backends.View, p0, p1 float64) {
	s.enqueue(op.String()+" grad", []backends.View{out, x, g}, func(vs []backends.View) {
		s.inner.UnaryGrad(op, vs[0], vs[1], vs[2], p0, p1)
	})
}

// UnaryGradOutput implements backends.UnaryOutputGrad by forwarding.
func (s *Backend) UnaryGradOutput(op backends.UnaryOp, out, y, g backends.View) {
	if f, ok := wrapped[backends.UnaryOutputGrad](s, op.String()+" grad from output", "backward from an op's output"); ok {
		s.enqueue(op.String()+" grad from output", []backends.View{out, y, g}, func(vs []backends.View) {
			f.UnaryGradOutput(op, vs[0], vs[1], vs[2])
		})
	}
}

// Binary implements backends.Backend.
func (s *Backend) Binary(op backends.BinaryOp, out, a, b backends.View) {
	s.enqueue(op.String(), []backends.View{out, a, b}, func(vs []backends.View) { s.inner.Binary(op, vs[0], vs[1], vs[2]) })
}

// BinaryScalar implements backends.Backend.
func (s *Backend) BinaryScalar(op backends.BinaryOp, out, a backends.View, v float64, reverse bool) {
	s.enqueue(op.String(), []backends.View{out, a}, func(vs []backends.View) {
		s.inner.BinaryScalar(op, vs[0], vs[1], v, reverse)
	})
}

// Where implements backends.Backend.
func (s *Backend) Where(out, cond, a, b backends.View) {
	s.enqueue("where", []backends.View{out, cond, a, b}, func(vs []backends.View) {
		s.inner.Where(vs[0], vs[1], vs[2], vs[3])
	})
}

// Reduce implements backends.Backend.
func (s *Backend) Reduce(op backends.ReduceOp, out, x backends.View, axes []int) {
	axes = append([]int(nil), axes...)
	s.enqueue(op.String(), []backends.View{out, x}, func(vs []backends.View) { s.inner.Reduce(op, vs[0], vs[1], axes) })
}

// ArgReduce implements backends.Backend.
func (s *Backend) ArgReduce(op backends.ReduceOp, out, x backends.View, axis int) {
	s.enqueue(op.String(), []backends.View{out, x}, func(vs []backends.View) { s.inner.ArgReduce(op, vs[0], vs[1], axis) })
}

// Scan implements backends.Backend.
func (s *Backend) Scan(op backends.ReduceOp, out, x backends.View, axis int) {
	s.enqueue("scan", []backends.View{out, x}, func(vs []backends.View) { s.inner.Scan(op, vs[0], vs[1], axis) })
}

// Sort implements backends.Backend.
func (s *Backend) Sort(values, indices, x backends.View, axis int, descending bool) {
	s.enqueue("sort", []backends.View{values, indices, x}, func(vs []backends.View) {
		s.inner.Sort(vs[0], vs[1], vs[2], axis, descending)
	})
}

// Matmul implements backends.Backend.
func (s *Backend) Matmul(out, a, b backends.View) {
	s.enqueue("matmul", []backends.View{out, a, b}, func(vs []backends.View) { s.inner.Matmul(vs[0], vs[1], vs[2]) })
}

// Gather implements backends.Backend.
func (s *Backend) Gather(out, x, index backends.View, axis int) {
	s.enqueue("gather", []backends.View{out, x, index}, func(vs []backends.View) { s.inner.Gather(vs[0], vs[1], vs[2], axis) })
}

// Scatter implements backends.Backend.
func (s *Backend) Scatter(out, index, src backends.View, axis int, add bool) {
	s.enqueue("scatter", []backends.View{out, index, src}, func(vs []backends.View) {
		s.inner.Scatter(vs[0], vs[1], vs[2], axis, add)
	})
}

// Im2Col implements backends.Backend.
func (s *Backend) Im2Col(out, x backends.View, g backends.ConvGeometry) {
	s.enqueue("im2col", []backends.View{out, x}, func(vs []backends.View) { s.inner.Im2Col(vs[0], vs[1], g) })
}

// Col2Im implements backends.Backend.
func (s *Backend) Col2Im(out, cols backends.View, g backends.ConvGeometry) {
	s.enqueue("col2im", []backends.View{out, cols}, func(vs []backends.View) { s.inner.Col2Im(vs[0], vs[1], g) })
}

// Random implements backends.Backend.
func (s *Backend) Random(out backends.View, kind backends.RandomKind, seed, counter uint64, p0, p1 float64) {
	s.enqueue("random", []backends.View{out}, func(vs []backends.View) { s.inner.Random(vs[0], kind, seed, counter, p0, p1) })
}

// wrapped returns the inner backend as the optional interface F, failing
// (sticky) when it is not one: tensor only calls fused kernels on a
// backend that offers them, and Strict offers them only by forwarding.
// what names the kernels in the error.
func wrapped[F any](s *Backend, op, what string) (F, bool) {
	f, ok := s.inner.(F)
	if !ok {
		s.fail(fmt.Errorf("strict: %s: the wrapped backend has no %s", op, what))
	}
	return f, ok
}

// MaxPool2d implements backends.Fusion by forwarding to the wrapped
// backend, after the same buffer checks as every kernel.
func (s *Backend) MaxPool2d(out, indices, x backends.View, g backends.ConvGeometry) {
	if f, ok := wrapped[backends.Fusion](s, "maxpool2d", "fused kernels"); ok {
		s.enqueue("maxpool2d", []backends.View{out, indices, x}, func(vs []backends.View) { f.MaxPool2d(vs[0], vs[1], vs[2], g) })
	}
}

// MaxPool2dGrad implements backends.Fusion by forwarding.
func (s *Backend) MaxPool2dGrad(dx, dy, indices backends.View, g backends.ConvGeometry) {
	if f, ok := wrapped[backends.Fusion](s, "maxpool2d grad", "fused kernels"); ok {
		s.enqueue("maxpool2d grad", []backends.View{dx, dy, indices}, func(vs []backends.View) {
			f.MaxPool2dGrad(vs[0], vs[1], vs[2], g)
		})
	}
}

// Conv2d implements backends.ConvFusion by forwarding.
func (s *Backend) Conv2d(out, x, w backends.View, g backends.ConvGeometry) {
	if f, ok := wrapped[backends.ConvFusion](s, "conv2d", "fused convolution"); ok {
		s.enqueue("conv2d", []backends.View{out, x, w}, func(vs []backends.View) { f.Conv2d(vs[0], vs[1], vs[2], g) })
	}
}

// Conv2dInputGrad implements backends.ConvFusion by forwarding.
func (s *Backend) Conv2dInputGrad(dx, dy, w backends.View, g backends.ConvGeometry) {
	if f, ok := wrapped[backends.ConvFusion](s, "conv2d input grad", "fused convolution"); ok {
		s.enqueue("conv2d input grad", []backends.View{dx, dy, w}, func(vs []backends.View) {
			f.Conv2dInputGrad(vs[0], vs[1], vs[2], g)
		})
	}
}

// Conv2dWeightGrad implements backends.ConvFusion by forwarding.
func (s *Backend) Conv2dWeightGrad(dw, dy, x backends.View, g backends.ConvGeometry) {
	if f, ok := wrapped[backends.ConvFusion](s, "conv2d weight grad", "fused convolution"); ok {
		s.enqueue("conv2d weight grad", []backends.View{dw, dy, x}, func(vs []backends.View) {
			f.Conv2dWeightGrad(vs[0], vs[1], vs[2], g)
		})
	}
}

// AdamStep implements backends.AdamFusion by forwarding. Moments that are
// absent (a first step) are views with no buffer and are not checked.
func (s *Backend) AdamStep(outP, outM, outV, p, g, m, v backends.View, h backends.AdamHyper) {
	f, ok := wrapped[backends.AdamFusion](s, "adam step", "fused Adam")
	if !ok {
		return
	}
	views := []backends.View{outM, outV, p, g}
	if h.MovesParam {
		views = append(views, outP)
	}
	if !h.First {
		views = append(views, m, v)
	}
	s.enqueue("adam step", views, func(vs []backends.View) {
		op, im, iv := outP, m, v
		if h.MovesParam {
			op = vs[4]
		}
		if !h.First {
			im, iv = vs[len(vs)-2], vs[len(vs)-1]
		}
		f.AdamStep(op, vs[0], vs[1], vs[2], vs[3], im, iv, h)
	})
}

// SGDStep implements backends.SGDFusion by forwarding. A momentum buffer
// that is absent (no momentum, or a first step) is a view with no buffer
// and is not checked.
func (s *Backend) SGDStep(outP, outBuf, p, g, buf backends.View, h backends.SGDHyper) {
	if f, ok := wrapped[backends.SGDFusion](s, "sgd step", "fused SGD"); ok {
		s.enqueueOptional("sgd step", []backends.View{outP, outBuf, p, g, buf}, func(vs []backends.View) {
			f.SGDStep(vs[0], vs[1], vs[2], vs[3], vs[4], h)
		})
	}
}

// CrossEntropyForward implements backends.CrossEntropyFusion by forwarding.
func (s *Backend) CrossEntropyForward(logp, nll, weight, x, target backends.View, ignore int64) {
	if f, ok := wrapped[backends.CrossEntropyFusion](s, "cross entropy", "fused cross-entropy"); ok {
		s.enqueue("cross entropy", []backends.View{logp, nll, weight, x, target}, func(vs []backends.View) {
			f.CrossEntropyForward(vs[0], vs[1], vs[2], vs[3], vs[4], ignore)
		})
	}
}

// CrossEntropyBackward implements backends.CrossEntropyFusion by forwarding.
func (s *Backend) CrossEntropyBackward(dx, logp, weight, target, coef backends.View, ignore int64) {
	if f, ok := wrapped[backends.CrossEntropyFusion](s, "cross entropy grad", "fused cross-entropy"); ok {
		s.enqueue("cross entropy grad", []backends.View{dx, logp, weight, target, coef}, func(vs []backends.View) {
			f.CrossEntropyBackward(vs[0], vs[1], vs[2], vs[3], vs[4], ignore)
		})
	}
}

package cpu

import (
	"fmt"
	"sync"

	"github.com/kiln-ml/kiln/backends"
)

// CrossEntropyForward implements backends.CrossEntropyFusion: each row's
// log-softmax with the very operations the composition runs (the row
// maximum, x − max, exp through unaryRow, the sum through reduceRun as
// Reduce sums a contiguous run, log, subtraction), then the picked entry.
// Rows hold at most backends.CrossEntropyMaxClasses (no more than
// segment), so that Reduce sums them in one run too.
func (b *Backend) CrossEntropyForward(logp, nll, weight, x, target backends.View, ignore int64) {
	const op = "cross entropy"
	if len(x.Shape) != 2 {
		b.refuse(op, "logits %v (want [N, C])", x.Shape)
		return
	}
	n := []int{x.Shape[0]}
	if !b.checkFused(op, x, []backends.View{logp, nll, weight, x, target},
		[]string{"log-probabilities", "losses", "weights", "logits", "targets"},
		[][]int{x.Shape, n, n, x.Shape, n}, "targets") {
		return
	}
	t := buf(target).i64()[target.Offset:]
	switch x.DType {
	case backends.Float32:
		ceForward(b, buf(logp).f32()[logp.Offset:], buf(nll).f32()[nll.Offset:], buf(weight).f32()[weight.Offset:],
			buf(x).f32()[x.Offset:], t, x.Shape[0], x.Shape[1], ignore)
	case backends.Float64:
		ceForward(b, buf(logp).f64()[logp.Offset:], buf(nll).f64()[nll.Offset:], buf(weight).f64()[weight.Offset:],
			buf(x).f64()[x.Offset:], t, x.Shape[0], x.Shape[1], ignore)
	default:
		b.fail(errDType("cross entropy", x.DType))
	}
}

// CrossEntropyBackward implements backends.CrossEntropyFusion.
func (b *Backend) CrossEntropyBackward(dx, logp, weight, target, coef backends.View, ignore int64) {
	const op = "cross entropy grad"
	if len(dx.Shape) != 2 {
		b.refuse(op, "logits grad %v (want [N, C])", dx.Shape)
		return
	}
	n := []int{dx.Shape[0]}
	coefShape := n
	if backends.NumElements(coef.Shape) == 1 {
		coefShape = []int{1}
	}
	if !b.checkFused(op, dx, []backends.View{dx, logp, weight, target, coef},
		[]string{"logits grad", "log-probabilities", "weights", "targets", "coefficients"},
		[][]int{dx.Shape, dx.Shape, n, n, coefShape}, "targets") {
		return
	}
	t := buf(target).i64()[target.Offset:]
	perRow := backends.NumElements(coef.Shape) > 1
	switch dx.DType {
	case backends.Float32:
		ceBackward(b, buf(dx).f32()[dx.Offset:], buf(logp).f32()[logp.Offset:], buf(weight).f32()[weight.Offset:],
			buf(coef).f32()[coef.Offset:], perRow, t, dx.Shape[0], dx.Shape[1], ignore)
	case backends.Float64:
		ceBackward(b, buf(dx).f64()[dx.Offset:], buf(logp).f64()[logp.Offset:], buf(weight).f64()[weight.Offset:],
			buf(coef).f64()[coef.Offset:], perRow, t, dx.Shape[0], dx.Shape[1], ignore)
	default:
		b.fail(errDType("cross entropy grad", dx.DType))
	}
}

// ceRowCost is about the element operations a row of the fused
// cross-entropy costs per class (maximum, subtraction, exp, sum, the
// second subtraction; the backward pass's exp and scaling), which sizes its
// parallel chunks.
const ceRowCost = 8

// ceForward computes the rows in parallel chunks: each row is computed as
// it would be alone, so the chunking changes nothing. A GPT's logits
// ([2048, 1024]) took about 1% of its step on one thread, which a serial
// pass made 2% of the step on two.
func ceForward[T float32 | float64](b *Backend, logp, nll, weight, x []T, t []int64, n, c int, ignore int64) {
	if c == 0 {
		return
	}
	if c > backends.CrossEntropyMaxClasses || c > segment {
		b.fail(fmt.Errorf("cpu: cross entropy: %d classes, more than the fused kernel's %d", c, backends.CrossEntropyMaxClasses))
		return
	}
	var mu sync.Mutex
	bad, badAt := int64(0), -1 // the first row whose target is out of range
	b.parallel(n, grainFor(n, ceRowCost*c), func(lo, hi int) {
		e := make([]T, c)
		for i := lo; i < hi; i++ {
			row, out := x[i*c:][:c], logp[i*c:][:c]
			m := T(reduceRun[T, float64](backends.Max, row, 0, 1, c))
			for j, v := range row {
				out[j] = v - m
			}
			unaryRow(backends.Exp, e, out) // exp(x − max)
			z := T(reduceRun[T, float64](backends.Sum, e, 0, 1, c))
			var lz [1]T
			unaryRow(backends.Log, lz[:], []T{z})
			for j := range out {
				out[j] -= lz[0]
			}
			switch ti := t[i]; {
			case ti == ignore:
				nll[i], weight[i] = 0, 0
			case ti < 0 || ti >= int64(c):
				mu.Lock()
				if badAt < 0 || i < badAt {
					bad, badAt = ti, i
				}
				mu.Unlock()
				nll[i], weight[i] = 0, 0
			default:
				nll[i], weight[i] = -out[ti], 1
			}
		}
	})
	if badAt >= 0 {
		b.fail(fmt.Errorf("cpu: cross entropy: target %d of row %d out of range for %d classes", bad, badAt, c))
	}
}

// ceBackward computes the rows in parallel chunks, as ceForward.
func ceBackward[T float32 | float64](b *Backend, dx, logp, weight, coef []T, perRow bool, t []int64, n, c int, ignore int64) {
	if c == 0 {
		return
	}
	b.parallel(n, grainFor(n, ceRowCost*c), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k := coef[0]
			if perRow {
				k = coef[i]
			}
			a := k * weight[i]
			row := dx[i*c:][:c]
			unaryRow(backends.Exp, row, logp[i*c:][:c])
			for j := range row {
				row[j] *= a
			}
			at := t[i]
			if at == ignore || at < 0 || at >= int64(c) {
				at = 0
			}
			row[at] += -a
		}
	})
}

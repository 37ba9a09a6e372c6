package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Printing follows PyTorch: tensors with more than printThreshold elements
// show printEdge items at each end of every dimension, with "..." between.
const (
	printThreshold = 1000
	printEdge      = 3
)

func formatTensor(t *Tensor) string {
	vals := t.Float64s()
	summarize := len(vals) > printThreshold
	fmtElem := elementFormatter(t.dtype, vals)
	var b strings.Builder
	b.WriteString("tensor(")
	indent := len("tensor(")
	strides := make([]int, len(t.shape))
	acc := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		strides[i] = acc
		acc *= t.shape[i]
	}
	var rec func(dim, base int)
	rec = func(dim, base int) {
		if dim == len(t.shape) {
			b.WriteString(fmtElem(vals[base]))
			return
		}
		b.WriteByte('[')
		n := t.shape[dim]
		for i := 0; i < n; i++ {
			if summarize && n > 2*printEdge && i == printEdge {
				if dim == len(t.shape)-1 {
					b.WriteString("..., ")
				} else {
					b.WriteString("...,\n" + strings.Repeat(" ", indent+dim+1))
				}
				i = n - printEdge
			}
			rec(dim+1, base+i*strides[dim])
			if i < n-1 {
				if dim == len(t.shape)-1 {
					b.WriteString(", ")
				} else {
					b.WriteString("," + strings.Repeat("\n", len(t.shape)-dim-1) + strings.Repeat(" ", indent+dim+1))
				}
			}
		}
		b.WriteByte(']')
	}
	rec(0, 0)
	fmt.Fprintf(&b, ", shape=%s, dtype=%s, device=%s", shapeString(t.shape), t.dtype, t.dev)
	if t.requiresGrad {
		if t.node != nil && !t.node.Leaf {
			fmt.Fprintf(&b, ", grad_fn=%s", t.node.Op)
		} else {
			b.WriteString(", requires_grad=true")
		}
	}
	b.WriteByte(')')
	return b.String()
}

// elementFormatter picks one format for all elements, as PyTorch does: fixed
// with 4 decimals for moderate floats, scientific otherwise, padded to a
// common width.
func elementFormatter(dtype DType, vals []float64) func(float64) string {
	switch {
	case dtype == Bool:
		return func(v float64) string {
			if v != 0 {
				return " true"
			}
			return "false"
		}
	case !dtype.IsFloat():
		w := 1
		for _, v := range vals {
			w = max(w, len(strconv.FormatInt(int64(v), 10)))
		}
		return func(v float64) string { return fmt.Sprintf("%*d", w, int64(v)) }
	}
	maxAbs, minAbs, allInt := 0.0, math.Inf(1), true
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		a := math.Abs(v)
		maxAbs = math.Max(maxAbs, a)
		if a > 0 {
			minAbs = math.Min(minAbs, a)
		}
		if v != math.Trunc(v) {
			allInt = false
		}
	}
	sci := maxAbs >= 1e8 || (minAbs < 1e-4 && minAbs > 0) || (minAbs != math.Inf(1) && maxAbs/minAbs > 1000 && !allInt)
	var f func(float64) string
	switch {
	case sci:
		f = func(v float64) string { return strconv.FormatFloat(v, 'e', 4, 64) }
	case allInt:
		f = func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + "." }
	default:
		f = func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	}
	w := 1
	for _, v := range vals {
		w = max(w, len(special(v, f)))
	}
	return func(v float64) string { return fmt.Sprintf("%*s", w, special(v, f)) }
}

func special(v float64, f func(float64) string) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return f(v)
}

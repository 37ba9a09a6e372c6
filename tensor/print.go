package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Printing follows PyTorch's repr (torch/_tensor_str.py): tensors with more
// than printThreshold elements show printEdge items at each end of every
// dimension, with "..." between; one element format, chosen from the
// elements shown, serves the whole tensor; rows wrap at printLineWidth
// characters. Booleans print as Go's true/false, and the values are
// followed by the shape, dtype and device.
const (
	printThreshold = 1000
	printEdge      = 3
	printLineWidth = 80
	printPrefix    = "tensor("
)

func formatTensor(t *Tensor) string {
	var b strings.Builder
	b.WriteString(printPrefix)
	if t.NumElements() == 0 {
		b.WriteString("[]")
	} else {
		p := newTensorPrinter(t)
		p.write(&b, 0, 0, len(printPrefix))
	}
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

// tensorPrinter holds one tensor's values on the host and the format its
// elements share.
type tensorPrinter struct {
	shape     []int
	strides   []int // row-major strides of shape
	summarize bool
	floats    []float64 // float dtypes
	ints      []int64   // integer dtypes, exact
	bools     []bool
	fmtFloat  floatFormat
	width     int
}

func newTensorPrinter(t *Tensor) *tensorPrinter {
	p := &tensorPrinter{shape: t.shape, summarize: t.NumElements() > printThreshold}
	p.strides = make([]int, len(t.shape))
	acc := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		p.strides[i] = acc
		acc *= t.shape[i]
	}
	shown := p.shownIndices()
	switch {
	case t.dtype == Bool:
		p.bools = t.Bools()
		for _, i := range shown {
			p.width = max(p.width, len(strconv.FormatBool(p.bools[i])))
		}
	case !t.dtype.IsFloat():
		p.ints = t.Int64s()
		for _, i := range shown {
			p.width = max(p.width, len(strconv.FormatInt(p.ints[i], 10)))
		}
	default:
		p.floats = t.Float64s()
		vals := make([]float64, len(shown))
		for k, i := range shown {
			vals[k] = p.floats[i]
		}
		p.fmtFloat = chooseFloatFormat(vals)
		p.width = p.fmtFloat.width
	}
	return p
}

// skips reports whether a dimension of size n is summarised with "...".
func (p *tensorPrinter) skips(n int) bool { return p.summarize && n > 2*printEdge }

// shownIndices lists the flat indices of the elements that are printed.
func (p *tensorPrinter) shownIndices() []int {
	var out []int
	var rec func(dim, base int)
	rec = func(dim, base int) {
		if dim == len(p.shape) {
			out = append(out, base)
			return
		}
		n := p.shape[dim]
		for i := 0; i < n; i++ {
			if p.skips(n) && i == printEdge {
				i = n - printEdge
			}
			rec(dim+1, base+i*p.strides[dim])
		}
	}
	rec(0, 0)
	return out
}

// element formats the element at flat index i, padded to the common width.
func (p *tensorPrinter) element(i int) string {
	var s string
	switch {
	case p.bools != nil:
		s = strconv.FormatBool(p.bools[i])
	case p.ints != nil:
		s = strconv.FormatInt(p.ints[i], 10)
	default:
		s = p.fmtFloat.format(p.floats[i])
	}
	return strings.Repeat(" ", max(0, p.width-len(s))) + s
}

// write prints dimension dim of the sub-tensor at flat index base, indented
// by indent columns when it wraps.
func (p *tensorPrinter) write(b *strings.Builder, dim, base, indent int) {
	if dim == len(p.shape) { // 0-d
		b.WriteString(p.element(base))
		return
	}
	n := p.shape[dim]
	if dim == len(p.shape)-1 {
		p.writeVector(b, base, indent)
		return
	}
	sep := "," + strings.Repeat("\n", len(p.shape)-dim-1) + strings.Repeat(" ", indent+1)
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		if p.skips(n) && i == printEdge {
			b.WriteString("..." + sep)
			i = n - printEdge
		}
		p.write(b, dim+1, base+i*p.strides[dim], indent+1)
	}
	b.WriteByte(']')
}

// writeVector prints the last dimension, wrapping lines as PyTorch does: as
// many elements per line as fit in printLineWidth, "..." counting as one.
func (p *tensorPrinter) writeVector(b *strings.Builder, base, indent int) {
	n := p.shape[len(p.shape)-1]
	step := p.strides[len(p.shape)-1]
	var items []string
	for i := 0; i < n; i++ {
		if p.skips(n) && i == printEdge {
			items = append(items, " ...")
			i = n - printEdge
		}
		items = append(items, p.element(base+i*step))
	}
	perLine := max(1, (printLineWidth-indent)/(p.width+2))
	b.WriteByte('[')
	for i, s := range items {
		switch {
		case i == 0:
		case i%perLine == 0:
			b.WriteString(",\n" + strings.Repeat(" ", indent+1))
		default:
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	b.WriteByte(']')
}

// floatFormat is PyTorch's choice of one format for a float tensor: whole
// numbers print as "3.", others with 4 decimals, and scientific notation
// is used when the magnitudes span more than 1000× or reach beyond 1e8 (or
// below 1e-4 for fractions). Only finite non-zero values decide, and they
// alone set the width.
type floatFormat struct {
	intMode, sciMode bool
	width            int
}

func chooseFloatFormat(vals []float64) floatFormat {
	f := floatFormat{intMode: true, width: 1}
	lo, hi := math.Inf(1), 0.0
	var nz []float64
	for _, v := range vals {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		nz = append(nz, v)
		a := math.Abs(v)
		lo, hi = math.Min(lo, a), math.Max(hi, a)
		if v != math.Ceil(v) {
			f.intMode = false
		}
	}
	if len(nz) == 0 {
		return f
	}
	if f.intMode {
		f.sciMode = hi/lo > 1000 || hi > 1e8
	} else {
		f.sciMode = hi/lo > 1000 || hi > 1e8 || lo < 1e-4
	}
	for _, v := range nz {
		s := f.format(v)
		f.width = max(f.width, len(s))
	}
	return f
}

// format returns v in the chosen format, without padding.
func (f floatFormat) format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case f.sciMode:
		return strconv.FormatFloat(v, 'e', 4, 64)
	case f.intMode:
		return strconv.FormatFloat(v, 'f', 0, 64) + "."
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

package nn

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// SummaryOptions adjusts Summary. The zero value shows the whole tree.
type SummaryOptions struct {
	// OutputShapes maps module paths ("" for the model itself,
	// "Encoder.Layers.0") to the shape of their output, as a traced forward
	// pass records them; when any is given the table gets an output-shape
	// column.
	OutputShapes map[string][]int
	// MaxDepth limits the rows of String to modules and parameters at most
	// this deep (the model is depth 0); 0 means no limit. Totals always
	// count everything.
	MaxDepth int
}

// SummaryTree describes a model: its modules as a tree, each parameter's
// shape and size, and element counts per module and in total. Print it
// (String) for a torchinfo-like table.
type SummaryTree struct {
	Root      *ModuleSummary
	Trainable int   // elements of trainable parameters
	Frozen    int   // elements of frozen parameters
	Buffers   int   // elements of buffers
	Bytes     int64 // memory held by parameters and buffers
	opts      SummaryOptions
}

// Total returns the elements of all parameters, trainable and frozen (what
// NumParams counts; buffers are not parameters).
func (s *SummaryTree) Total() int { return s.Trainable + s.Frozen }

// ModuleSummary is one module of a SummaryTree: a struct, or a slice, array
// or map of modules.
type ModuleSummary struct {
	Name        string // field name, index or key ("" for the model)
	Path        string // dotted path from the model ("" for the model)
	Type        string // Go type, e.g. "nn.Linear"; interpreted structs show their fields: "struct{l1, Hidden}"
	Depth       int
	OutputShape []int // from SummaryOptions.OutputShapes; nil when not known
	Params      []ParamSummary
	Modules     []*ModuleSummary
	Trainable   int // elements of trainable parameters in this module and below
	Frozen      int // elements of frozen parameters in this module and below
	Buffers     int // elements of buffers in this module and below
}

// Total returns the elements of the parameters in the module and below.
func (m *ModuleSummary) Total() int { return m.Trainable + m.Frozen }

// ParamSummary is one parameter or buffer of a ModuleSummary.
type ParamSummary struct {
	Name     string // last path segment
	Path     string // dotted path from the model
	Shape    []int
	DType    tensor.DType
	Elements int
	Frozen   bool
	Buffer   bool
	ID       uint64
}

// Summary describes m (see SummaryTree); opts, if given, adds output
// shapes or limits the depth shown (only the first is used). Modules are
// the structs and containers that hold parameters or buffers somewhere
// below them, plus parameterless modules that have a mode (ModeSetter, such
// as dropout) or a Forward method.
func Summary(m any, opts ...SummaryOptions) *SummaryTree {
	s := &SummaryTree{}
	if len(opts) > 0 {
		s.opts = opts[0]
	}
	root := tree(m)
	if root == nil {
		s.Root = &ModuleSummary{Type: "<empty>"}
		return s
	}
	if root.param != nil { // m is a single *Param
		mod := &ModuleSummary{Type: "nn.Param"}
		s.addParam(mod, root, 0)
		s.Root = mod
		return s
	}
	s.Root = s.module(root, 0)
	return s
}

// module summarises n, or returns nil for a node that is not shown.
func (s *SummaryTree) module(n *node, depth int) *ModuleSummary {
	mod := &ModuleSummary{Name: n.name, Path: n.path, Type: typeName(n.value.Type()), Depth: depth}
	if shape, ok := s.opts.OutputShapes[n.path]; ok {
		mod.OutputShape = append([]int{}, shape...)
	}
	for _, c := range n.children {
		if c.param != nil {
			s.addParam(mod, c, depth+1)
			continue
		}
		if sub := s.module(c, depth+1); sub != nil {
			mod.Modules = append(mod.Modules, sub)
			mod.Trainable += sub.Trainable
			mod.Frozen += sub.Frozen
			mod.Buffers += sub.Buffers
		}
	}
	if depth > 0 && len(mod.Params) == 0 && len(mod.Modules) == 0 && !isModule(n) {
		return nil
	}
	return mod
}

func (s *SummaryTree) addParam(mod *ModuleSummary, n *node, depth int) {
	p := n.param
	ps := ParamSummary{Name: n.name, Path: n.path, Frozen: p.Frozen(), Buffer: p.IsBuffer(), ID: p.ID()}
	if p.Tensor != nil {
		ps.Shape, ps.DType, ps.Elements = p.Shape(), p.DType(), p.NumElements()
		s.Bytes += int64(ps.Elements) * int64(ps.DType.Size())
	}
	mod.Params = append(mod.Params, ps)
	switch {
	case ps.Buffer:
		mod.Buffers += ps.Elements
		s.Buffers += ps.Elements
	case ps.Frozen:
		mod.Frozen += ps.Elements
		s.Frozen += ps.Elements
	default:
		mod.Trainable += ps.Elements
		s.Trainable += ps.Elements
	}
}

// isModule reports whether a parameterless node still deserves a row: it
// has a mode (its own or embedded) or a Forward method.
func isModule(n *node) bool {
	for _, v := range append([]reflect.Value{n.value}, n.embedded...) {
		if hasMethod(v, modeSetterType) {
			return true
		}
	}
	for _, v := range append([]reflect.Value{n.value}, n.embedded...) {
		// embedded holds yaegi's wrapper of an interpreted module, if any
		if _, ok := reflect.PointerTo(v.Type()).MethodByName("Forward"); ok {
			return true
		}
	}
	return false
}

// summaryRow is one line of the table.
type summaryRow struct {
	name, typ, out, shape, count, note string
}

// String renders the summary as a table in the manner of torchinfo: one
// row per module (with its parameter count, below it included) and per
// parameter (with its shape), then the totals.
func (s *SummaryTree) String() string {
	withOut := len(s.opts.OutputShapes) > 0
	var rows []summaryRow
	var walk func(m *ModuleSummary, prefix string, last bool)
	walk = func(m *ModuleSummary, prefix string, last bool) {
		// The model's row shows its type as its name; others hang from the tree.
		label, typ, childPrefix := m.Type, "", prefix
		if m.Depth > 0 {
			branch, more := "├─", "│ "
			if last {
				branch, more = "└─", "  "
			}
			label, typ, childPrefix = prefix+branch+m.Name, m.Type, prefix+more
		}
		row := summaryRow{name: label, typ: typ, count: groupDigits(m.Total())}
		if m.OutputShape != nil {
			row.out = shapeString(m.OutputShape)
		}
		if m.Total() == 0 && m.Buffers == 0 {
			row.count = "--"
		}
		rows = append(rows, row)
		if s.opts.MaxDepth > 0 && m.Depth >= s.opts.MaxDepth {
			return
		}
		n := len(m.Params) + len(m.Modules)
		i := 0
		for _, p := range m.Params {
			i++
			branch := "├─"
			if i == n {
				branch = "└─"
			}
			note := ""
			switch {
			case p.Buffer:
				note = "buffer"
			case p.Frozen:
				note = "frozen"
			}
			rows = append(rows, summaryRow{name: childPrefix + branch + p.Name, typ: p.DType.String(),
				shape: shapeString(p.Shape), count: groupDigits(p.Elements), note: note})
		}
		for _, c := range m.Modules {
			i++
			walk(c, childPrefix, i == n)
		}
	}
	walk(s.Root, "", true)

	header := summaryRow{name: "Module", typ: "Type", out: "Output shape", shape: "Param shape", count: "Param #"}
	widths := [5]int{}
	measure := func(r summaryRow) {
		for i, c := range []string{r.name, r.typ, r.out, r.shape, r.count} {
			widths[i] = max(widths[i], utf8Width(c))
		}
	}
	measure(header)
	for _, r := range rows {
		measure(r)
	}
	line := func(r summaryRow) string {
		var b strings.Builder
		b.WriteString(pad(r.name, widths[0]))
		b.WriteString("  " + pad(r.typ, widths[1]))
		if withOut {
			b.WriteString("  " + pad(r.out, widths[2]))
		}
		b.WriteString("  " + pad(r.shape, widths[3]))
		b.WriteString("  " + strings.Repeat(" ", widths[4]-utf8Width(r.count)) + r.count)
		if r.note != "" {
			b.WriteString("  " + r.note)
		}
		return strings.TrimRight(b.String(), " ")
	}
	width := widths[0] + widths[1] + widths[3] + widths[4] + 6 + len("  frozen")
	if withOut {
		width += widths[2] + 2
	}
	rule := strings.Repeat("=", width)
	var b strings.Builder
	b.WriteString(rule + "\n" + line(header) + "\n" + rule + "\n")
	for _, r := range rows {
		b.WriteString(line(r) + "\n")
	}
	b.WriteString(rule + "\n")
	fmt.Fprintf(&b, "Trainable params: %s\n", groupDigits(s.Trainable))
	fmt.Fprintf(&b, "Frozen params: %s\n", groupDigits(s.Frozen))
	fmt.Fprintf(&b, "Total params: %s\n", groupDigits(s.Total()))
	fmt.Fprintf(&b, "Buffer elements: %s\n", groupDigits(s.Buffers))
	fmt.Fprintf(&b, "Parameter and buffer memory: %s\n", tensor.FormatBytes(s.Bytes))
	b.WriteString(rule + "\n")
	return b.String()
}

func pad(s string, w int) string { return s + strings.Repeat(" ", max(0, w-utf8Width(s))) }

// utf8Width counts runes, which is the display width of the box-drawing
// characters and the ASCII the table uses.
func utf8Width(s string) int { return len([]rune(s)) }

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// groupDigits formats n with thousands separators: 1,234,567.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

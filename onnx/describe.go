package onnx

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// Describe reads the ONNX model at path and returns a readable summary:
// producer, IR version and opsets; the graph's inputs and outputs with
// their types (outputs as inferred, symbolic dimensions kept); the
// operators used, with counts, marking those Kiln cannot run; the
// initializers with their element types and shapes; and, last, whether
// Load accepts the model, with Load's own reason when it refuses one (an
// opset out of range, an operator or attribute Kiln does not run),
// checked without reading a weight. It fails like ReadFile, and like Load
// (wrapping ErrCorrupt, naming the node and the attribute) for a node
// whose attributes break its operator's definition. `kiln inspect` prints
// it.
func Describe(path string) (string, error) {
	m, err := ReadFile(path)
	if err != nil {
		return "", err
	}
	if m.Graph == nil {
		return "", fmt.Errorf("onnx: describe %s: %w: no graph", path, ErrCorrupt)
	}
	opset, _ := defaultOpset(m)
	if err := validateGraph(m.Graph, opset); err != nil {
		return "", fmt.Errorf("onnx: describe %s: %w", path, err)
	}
	d := DescribeModel(m)
	if _, err := newPlan(m, path, tensor.CPU()); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return "", fmt.Errorf("onnx: describe %s: %w", path, err)
		}
		return d + "Load refuses it: " + err.Error() + "\n", nil
	}
	return d + "Load accepts it.\n", nil
}

// DescribeModel is Describe for a model already decoded. It never fails
// and never panics: it does not check attributes (Describe does), and
// values whose shapes cannot be inferred are shown as unknown.
func DescribeModel(m *ModelProto) string {
	if m == nil || m.Graph == nil {
		return "not an ONNX model (no graph)\n"
	}
	var b strings.Builder
	g := m.Graph
	producer := strings.TrimSpace(m.ProducerName + " " + m.ProducerVersion)
	if producer == "" {
		producer = "unknown producer"
	}
	fmt.Fprintf(&b, "ONNX model (IR version %d, %s)\n", m.IRVersion, producer)
	var opsets []string
	for _, o := range m.OpsetImports {
		d := o.Domain
		if d == "" {
			d = "ai.onnx"
		}
		opsets = append(opsets, fmt.Sprintf("%s %d", d, o.Version))
	}
	fmt.Fprintf(&b, "opsets: %s\n", strings.Join(opsets, ", "))
	if g.Name != "" {
		fmt.Fprintf(&b, "graph: %s\n", g.Name)
	}
	opset, _ := defaultOpset(m)
	types := InferShapes(g, opset)
	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
	}
	b.WriteString("inputs:\n")
	for _, in := range g.Inputs {
		if inits[in.Name] {
			continue
		}
		fmt.Fprintf(&b, "  %s: %s\n", in.Name, typeString(in.Type))
	}
	b.WriteString("outputs:\n")
	for _, out := range g.Outputs {
		fmt.Fprintf(&b, "  %s: %s\n", out.Name, types[out.Name])
	}
	counts := map[string]int{}
	for _, n := range g.Nodes {
		key := n.OpType
		if n.Domain != "" && n.Domain != "ai.onnx" {
			key = n.Domain + "." + n.OpType
		}
		counts[key]++
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "operators (%d nodes):\n", len(g.Nodes))
	var unsupported []string
	for _, k := range names {
		mark := ""
		if ops[k] == nil {
			mark = "  (not supported by Kiln)"
			unsupported = append(unsupported, k)
		}
		fmt.Fprintf(&b, "  %-24s %d%s\n", k, counts[k], mark)
	}
	total := 0
	for _, t := range g.Initializers {
		if n, err := numElements(t.Dims); err == nil {
			total += n
		}
	}
	fmt.Fprintf(&b, "initializers: %d tensors, %d elements\n", len(g.Initializers)+len(g.SparseInitializers), total)
	const maxListed = 50
	for i, t := range g.Initializers {
		if i == maxListed {
			fmt.Fprintf(&b, "  … %d more\n", len(g.Initializers)-maxListed)
			break
		}
		where := ""
		if t.DataLocation == LocationExternal {
			where = " (external)"
		}
		fmt.Fprintf(&b, "  %s: %s%v%s\n", t.Name, DataTypeName(t.DataType), t.Dims, where)
	}
	for _, s := range g.SparseInitializers {
		fmt.Fprintf(&b, "  %s: sparse %v\n", s.Values.Name, s.Dims)
	}
	if len(unsupported) > 0 {
		fmt.Fprintf(&b, "unsupported operators: %s\n", strings.Join(unsupported, ", "))
	}
	if len(m.MetadataProps) > 0 {
		b.WriteString("metadata:\n")
		for _, e := range m.MetadataProps {
			fmt.Fprintf(&b, "  %s: %s\n", e.Key, e.Value)
		}
	}
	return b.String()
}

// typeString formats a declared type ("FLOAT[batch 1 28 28]").
func typeString(t *TypeProto) string {
	if t == nil {
		return "?"
	}
	if t.Kind != "tensor" {
		return t.Kind
	}
	et := "?"
	if t.ElemType != TypeUndefined {
		et = DataTypeName(t.ElemType)
	}
	if !t.HasShape {
		return et + "[…]"
	}
	return et + dimsString(t.Shape)
}

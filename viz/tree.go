package viz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Tree is the module tree of a model (nn.Summary's tree, embedded): each
// module's name, type, parameter count and, when traced with an input,
// output shape. It renders as a collapsible HTML tree (nested <details>
// elements, no script) and as nn.Summary's text table.
type Tree struct {
	*nn.SummaryTree
	// Open is how many levels of the HTML tree start expanded (the model
	// is level 1); 0 means 2.
	Open int
}

// ModuleTree returns the module tree of model, walked as nn.Params walks
// it (structs declared in notebook cells included), without output
// shapes.
func ModuleTree(model any) *Tree { return &Tree{SummaryTree: nn.Summary(model)} }

// ModuleTreeWith is ModuleTree with the output shape of every module that
// ran an op, from one forward pass on input traced as Trace traces it:
// the shape of the last tensor each module produced that was read outside
// it. It fails as Trace does.
func ModuleTreeWith(model nn.Module, input *tensor.Tensor) (*Tree, error) {
	g, err := Trace(model, input)
	if err != nil {
		return nil, fmt.Errorf("viz.ModuleTreeWith: %w", err)
	}
	return &Tree{SummaryTree: nn.Summary(model, nn.SummaryOptions{OutputShapes: g.OutputShapes()})}, nil
}

// OutputShapes returns, for each module path that ran ops in g, the shape
// of the last tensor its ops produced that was read outside the module
// (the model itself, "", gets the graph's output).
func (g *Graph) OutputShapes() map[string][]int {
	shapes := map[string][]int{}
	from := map[string]int{}
	for _, e := range g.Edges {
		u, v := g.Nodes[e.From], g.Nodes[e.To]
		if v.Kind == OutputNode {
			shapes[""] = slices.Clone(u.Shape)
		}
		if u.Kind != OpNode && u.Kind != ModuleNode {
			continue
		}
		start := u.Module
		if u.Kind == ModuleNode {
			start = u.Name
		}
		for a := start; a != ""; a = pathParent(a) {
			if v.Kind != OutputNode && pathWithin(v.Module, a) {
				break
			}
			if id, ok := from[a]; !ok || u.ID >= id {
				from[a], shapes[a] = u.ID, slices.Clone(u.Shape)
			}
		}
	}
	return shapes
}

// HTML renders the tree as nested <details> elements: one per module,
// its summary line giving the name, type, output shape and parameter
// count, its body the module's own parameters and its submodules; then
// the totals.
func (t *Tree) HTML() string {
	open := t.Open
	if open <= 0 {
		open = 2
	}
	var b strings.Builder
	b.WriteString(`<div class="kiln-tree" style="font-family:DejaVu Sans Mono,Menlo,Consolas,monospace;font-size:13px;line-height:1.55">`)
	var walk func(m *nn.ModuleSummary)
	walk = func(m *nn.ModuleSummary) {
		name := m.Name
		if m.Depth == 0 {
			name = "model"
		}
		line := fmt.Sprintf(`<b>%s</b> <span style="color:#6b7280">%s</span>`, graphEscape(name), graphEscape(m.Type))
		if m.OutputShape != nil {
			line += fmt.Sprintf(` <span style="color:#1d4ed8" title="output shape">→ %s</span>`, graphEscape(graphShape(m.OutputShape)))
		}
		count := "no parameters"
		if m.Total() > 0 || m.Buffers > 0 {
			count = graphDigits(m.Total()) + " params"
			if m.Frozen > 0 {
				count += fmt.Sprintf(" (%s frozen)", graphDigits(m.Frozen))
			}
			if m.Buffers > 0 {
				count += fmt.Sprintf(", %s in buffers", graphDigits(m.Buffers))
			}
		}
		line += fmt.Sprintf(` <span style="color:#047857">· %s</span>`, count)
		if len(m.Params) == 0 && len(m.Modules) == 0 {
			fmt.Fprintf(&b, `<div style="padding-left:1.1em" title="%s">%s</div>`, graphEscape(m.Path), line)
			return
		}
		attr := ""
		if m.Depth < open {
			attr = ` open=""`
		}
		fmt.Fprintf(&b, `<details%s><summary title="%s">%s</summary>`, attr, graphEscape(m.Path), line)
		b.WriteString(`<div style="margin-left:.45em;padding-left:.9em;border-left:1px solid #d1d5db">`)
		for _, p := range m.Params {
			note := ""
			switch {
			case p.Buffer:
				note = " buffer"
			case p.Frozen:
				note = " frozen"
			}
			fmt.Fprintf(&b, `<div style="padding-left:1.1em" title="%s">%s <span style="color:#92400e">%s %s</span> `+
				`<span style="color:#047857">· %s%s</span></div>`,
				graphEscape(p.Path), graphEscape(p.Name), graphEscape(graphShape(p.Shape)), graphEscape(p.DType.String()), graphDigits(p.Elements), note)
		}
		for _, c := range m.Modules {
			walk(c)
		}
		b.WriteString(`</div></details>`)
	}
	walk(t.Root)
	fmt.Fprintf(&b, `<div style="margin-top:.4em;color:#374151">Trainable: %s · Frozen: %s · Total: %s · Buffers: %s · Memory: %s</div>`,
		graphDigits(t.Trainable), graphDigits(t.Frozen), graphDigits(t.Total()), graphDigits(t.Buffers),
		graphEscape(tensor.FormatBytes(t.Bytes)))
	b.WriteString(`</div>`)
	return b.String()
}

// MIME renders the tree for a notebook: the HTML tree and the text table.
func (t *Tree) MIME() map[string]string {
	return map[string]string{"text/html": t.HTML(), "text/plain": t.String()}
}

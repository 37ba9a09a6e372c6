package viz

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"strings"
	"sync/atomic"
)

// Colours of the drawing, by node kind.
var graphNodeFill = map[NodeKind][2]string{ // fill, stroke
	OpNode:     {"#dbeafe", "#3b6fb6"},
	InputNode:  {"#dcfce7", "#2f8a4c"},
	OutputNode: {"#dcfce7", "#2f8a4c"},
	ParamNode:  {"#fef3c7", "#b7862b"},
	ConstNode:  {"#eeeeee", "#888888"},
	ModuleNode: {"#ede9fe", "#6d4fc2"},
}

var graphGroupFill = []string{"#f7f8fb", "#eef1f7", "#e6eaf3", "#f2f4f9"}

var (
	graphIDPrefix  string
	graphIDCounter atomic.Uint64
)

func init() {
	var b [4]byte
	_, _ = rand.Read(b[:])
	graphIDPrefix = "kiln-g" + hex.EncodeToString(b[:])
}

// graphUniqueID returns an id no other drawing in the page has: random per
// process, counted within it, so outputs of earlier kernel sessions kept
// in a notebook do not collide with new ones.
func graphUniqueID() string { return fmt.Sprintf("%s-%d", graphIDPrefix, graphIDCounter.Add(1)) }

// SVG draws the layout as a self-contained SVG document (no scripts, no
// external references; its one id is unique to this call). Hovering a
// node, box or edge shows its details.
func (l *Layout) SVG() string {
	id := graphUniqueID()
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" `+
		`font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12" id="%s">`,
		l.Width, l.Height, l.Width, l.Height, id)
	fmt.Fprintf(&b, `<defs><marker id="%s-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" `+
		`orient="auto"><path d="M0,0L10,5L0,10z" fill="#6b7280"/></marker></defs>`, id)
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="#ffffff"/>`, l.Width, l.Height)
	for _, g := range l.Groups {
		depth := 0
		for p := g.Parent; p >= 0; p = l.Groups[p].Parent {
			depth++
		}
		tip := g.Module
		if gm := l.Graph.module(g.Module); gm != nil {
			tip = fmt.Sprintf("%s: %s, %s parameters", g.Module, gm.Type, graphDigits(gm.Params))
		}
		fmt.Fprintf(&b, `<g><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6" fill="%s" `+
			`stroke="#9aa3b5" stroke-dasharray="4 3"/><text x="%.1f" y="%.1f" font-size="11" fill="#4b5567">%s</text></g>`,
			graphEscape(tip), g.X, g.Y, g.W, g.H, graphGroupFill[depth%len(graphGroupFill)], g.X+6, g.Y+14, graphEscape(g.Title))
	}
	for i, e := range l.Edges {
		ge := l.Graph.Edges[i]
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="#6b7280" stroke-width="1.2" marker-end="url(#%s-arrow)">`+
			`<title>%s</title></path>`, graphPathData(e.Points), id, graphEscape(graphTensorText(ge.Shape, ge.DType)))
	}
	for i, nb := range l.Nodes {
		n := l.Graph.Nodes[i]
		c := graphNodeFill[n.Kind]
		fmt.Fprintf(&b, `<g><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4" fill="%s" stroke="%s"/>`,
			graphEscape(nb.Tooltip), nb.X, nb.Y, nb.W, nb.H, c[0], c[1])
		cx := nb.X + nb.W/2
		for k, s := range nb.Lines {
			if k == 0 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-weight="bold" fill="#1f2937">%s</text>`,
					cx, nb.Y+15, graphEscape(s))
			} else {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10" fill="#4b5563">%s</text>`,
					cx, nb.Y+15+float64(k)*14, graphEscape(s))
			}
		}
		if nb.Caption != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10" fill="#6b7280">%s</text>`,
				cx, nb.Y+nb.H+11, graphEscape(nb.Caption))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// graphPathData draws an edge's points as vertical runs joined by S-curves.
func graphPathData(pts [][2]float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "M%.1f,%.1f", pts[0][0], pts[0][1])
	for i := 1; i < len(pts); i++ {
		p, q := pts[i-1], pts[i]
		if p[0] == q[0] {
			fmt.Fprintf(&b, "L%.1f,%.1f", q[0], q[1])
			continue
		}
		my := (p[1] + q[1]) / 2
		fmt.Fprintf(&b, "C%.1f,%.1f %.1f,%.1f %.1f,%.1f", p[0], my, q[0], my, q[0], q[1])
	}
	return b.String()
}

func graphEscape(s string) string { return html.EscapeString(s) }

// graphDigits formats n with thousands separators.
func graphDigits(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + graphDigits(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// SVG draws g with the default options (see Layout.SVG).
func (g *Graph) SVG() string { return g.Layout(GraphOptions{}).SVG() }

// HTML draws g as an HTML fragment: the automatic view (GraphOptions{})
// open, and the views with modules collapsed at each depth (and fully
// expanded) in <details> elements below it, so that a reader opens
// coarser or finer views without any script. Wide drawings scroll.
func (g *Graph) HTML() string { return g.HTMLWith(GraphOptions{}) }

// HTMLWith is HTML with options: opts picks the view shown open; its
// MaxWidth applies to every view.
func (g *Graph) HTMLWith(opts GraphOptions) string {
	main := g.Layout(opts)
	var b strings.Builder
	ops := 0
	for _, n := range g.Nodes {
		if n.Kind == OpNode {
			ops++
		}
	}
	fmt.Fprintf(&b, `<div class="kiln-graph" style="font-family:sans-serif;font-size:13px;max-width:100%%">`)
	fmt.Fprintf(&b, `<details open=""><summary>Computation graph: %d ops, %s</summary><div style="overflow:auto">%s</div></details>`,
		ops, graphViewName(main), main.SVG())
	depths := []int{}
	for d := 1; d <= min(g.Depth(), 4); d++ {
		depths = append(depths, d)
	}
	depths = append(depths, -1)
	for _, d := range depths {
		if d == main.Depth || (d == -1 && main.Depth == 0) {
			continue
		}
		l := g.Layout(GraphOptions{MaxWidth: opts.MaxWidth, Depth: d})
		fmt.Fprintf(&b, `<details><summary>%s</summary><div style="overflow:auto">%s</div></details>`, graphViewName(l), l.SVG())
	}
	b.WriteString(`</div>`)
	return b.String()
}

func graphViewName(l *Layout) string {
	if l.Depth == 0 {
		return "every op"
	}
	return fmt.Sprintf("modules at depth %d as single nodes", l.Depth)
}

// MIME renders g for a notebook: the HTML views, the default view as an
// SVG image for viewers that show no HTML, and the text form.
func (g *Graph) MIME() map[string]string {
	return map[string]string{
		"text/html":     g.HTML(),
		"image/svg+xml": g.SVG(),
		"text/plain":    g.String(),
	}
}

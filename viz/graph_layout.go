package viz

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// GraphOptions adjusts how a Graph is laid out and drawn. The zero value
// fits the drawing to 1200 pixels, collapsing modules only when needed.
type GraphOptions struct {
	// MaxWidth is the page width in pixels that the drawing must fit;
	// 0 means 1200.
	MaxWidth float64 `json:"max_width,omitempty"`
	// Depth draws every module at this depth (1: the model's own fields,
	// 2: their modules, …) as a single node. 0 picks the deepest view
	// that fits MaxWidth, everything expanded when it fits; −1 never
	// collapses.
	Depth int `json:"depth,omitempty"`
}

func (o GraphOptions) maxWidth() float64 {
	if o.MaxWidth <= 0 {
		return 1200
	}
	return o.MaxWidth
}

// Layout is a drawing of a Graph: where each node, edge and module box
// goes, in pixels, x to the right and y down. Layers run top to bottom;
// every edge points down (crossing layers through straight vertical runs).
type Layout struct {
	Graph     *Graph // the graph drawn, modules collapsed as Depth says
	Depth     int    // modules at this depth are single nodes; 0 when none is
	Width     float64
	Height    float64
	MaxWidth  float64    // the page width the layout was asked to fit
	Nodes     []NodeBox  // per node of Graph, in the same order
	Edges     []EdgePath // per edge of Graph, in the same order
	Groups    []GroupBox // module boxes, outer boxes before the boxes inside them
	Layers    [][]int    // node IDs of each layer, left to right
	Crossings int        // edge crossings between consecutive layers
	MaxLayer  float64    // width of the widest layer, module boxes included
}

// NodeBox is where a node is drawn: its box, and the caption under it
// naming the shape and dtype of its output tensor.
type NodeBox struct {
	X, Y, W, H float64 // the box's top-left corner and size
	Layer      int
	Lines      []string // the text in the box
	Caption    string   // under the box; "" for a node whose output nothing reads
	CaptionH   float64
	Group      int // index in Layout.Groups of the innermost box holding the node; −1 for none
	Tooltip    string
}

// EdgePath is the route of an edge: from under the source's caption to
// the top of the target's box.
type EdgePath struct {
	Points [][2]float64
}

// GroupBox is the box drawn around the nodes of a module.
type GroupBox struct {
	Module     string // the module's path
	Title      string
	X, Y, W, H float64
	Parent     int // index of the enclosing box; −1 for none
}

// Text metrics of the drawing's monospace fonts, in pixels per character.
const (
	graphCharW      = 7.3 // 12px
	graphSmallCharW = 6.1 // 10px
	graphTitleCharW = 6.7 // 11px
)

// Layout lays g out as a layered top-to-bottom drawing grouped by module
// (see GraphOptions for collapsing). It never fails; a graph too wide for
// the page even with every module collapsed gives a layout wider than
// MaxWidth.
func (g *Graph) Layout(opts GraphOptions) *Layout {
	maxW := opts.maxWidth()
	if opts.Depth > 0 {
		return layoutGraph(g.Collapse(opts.Depth), opts.Depth, maxW)
	}
	full := layoutGraph(g, 0, maxW)
	if opts.Depth < 0 || full.Width <= maxW {
		return full
	}
	best := full
	for d := g.Depth(); d >= 1; d-- {
		l := layoutGraph(g.Collapse(d), d, maxW)
		if l.Width <= maxW {
			return l
		}
		if l.Width < best.Width {
			best = l
		}
	}
	return best
}

// boxedModules decides which modules of g get a box: those holding at
// least two nodes, except parameterless leaf modules whose nodes are not
// connected to each other (one activation module used at several places
// would otherwise be a box spanning the whole graph).
func boxedModules(g *Graph) map[string]bool {
	count := map[string]int{}
	deeper := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Kind == InputNode || n.Kind == OutputNode {
			continue
		}
		// Count n in its module and every module above, which all hold
		// nodes of deeper modules (a collapsed module is one of n.Module).
		for m := n.Module; ; m = pathParent(m) {
			count[m]++
			if m != n.Module || n.Kind == ModuleNode {
				deeper[m] = true
			}
			if m == "" {
				break
			}
		}
	}
	boxed := map[string]bool{}
	for m, c := range count {
		if m == "" || c < 2 {
			continue
		}
		gm := g.module(m)
		if (gm != nil && gm.Params > 0) || deeper[m] || connectedWithin(g, m) {
			boxed[m] = true
		}
	}
	return boxed
}

// connectedWithin reports whether the nodes of module m (directly in it)
// are connected by edges among themselves.
func connectedWithin(g *Graph, m string) bool {
	parent := map[int]int{}
	var find func(int) int
	find = func(a int) int {
		if parent[a] != a {
			parent[a] = find(parent[a])
		}
		return parent[a]
	}
	for _, n := range g.Nodes {
		if n.Module == m && n.Kind != InputNode && n.Kind != OutputNode {
			parent[n.ID] = n.ID
		}
	}
	for _, e := range g.Edges {
		_, a := parent[e.From]
		_, b := parent[e.To]
		if a && b {
			parent[find(e.From)] = find(e.To)
		}
	}
	roots := map[int]bool{}
	for id := range parent {
		roots[find(id)] = true
	}
	return len(roots) == 1
}

func pathParent(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// boxOf returns the innermost boxed module holding module path m ("" for
// none).
func boxOf(m string, boxed map[string]bool) string {
	for m != "" && !boxed[m] {
		m = pathParent(m)
	}
	return m
}

// layoutGraph lays out g (already collapsed to depth) without further
// collapsing.
func layoutGraph(g *Graph, depth int, maxW float64) *Layout {
	boxed := boxedModules(g)
	// Groups in tree order so that parents come first.
	paths := make([]string, 0, len(boxed))
	for m := range boxed {
		paths = append(paths, m)
	}
	treeIndex := map[string]int{}
	for i, m := range g.Modules {
		treeIndex[m.Path] = i
	}
	sort.Slice(paths, func(i, j int) bool {
		a, okA := treeIndex[paths[i]]
		b, okB := treeIndex[paths[j]]
		if okA && okB && a != b {
			return a < b
		}
		if pathDepthOf(paths[i]) != pathDepthOf(paths[j]) {
			return pathDepthOf(paths[i]) < pathDepthOf(paths[j])
		}
		return paths[i] < paths[j]
	})
	groupID := map[string]int{"": 0}
	d := &dag{groups: []dagGroup{{}}}
	l := &Layout{Graph: g, Depth: depth, MaxWidth: maxW}
	for _, m := range paths {
		parent := boxOf(pathParent(m), boxed)
		groupID[m] = len(d.groups)
		title := graphGroupTitle(g, m, parent)
		d.groups = append(d.groups, dagGroup{parent: groupID[parent], titleW: float64(len([]rune(title))) * graphTitleCharW})
		l.Groups = append(l.Groups, GroupBox{Module: m, Title: title, Parent: groupID[parent] - 1})
	}
	hasOut := make([]bool, len(g.Nodes))
	for _, e := range g.Edges {
		hasOut[e.From] = true
	}
	for _, n := range g.Nodes {
		lines := graphNodeLines(n, g)
		w := 0.0
		for i, s := range lines {
			cw := graphCharW
			if i > 0 {
				cw = graphSmallCharW
			}
			w = max(w, float64(len([]rune(s)))*cw)
		}
		nb := NodeBox{W: math.Ceil(w + 16), H: 22, Lines: lines, Tooltip: graphNodeTooltip(n)}
		if len(lines) > 1 {
			nb.H = 36
		}
		if hasOut[n.ID] {
			nb.Caption = graphTensorText(n.Shape, n.DType)
			nb.CaptionH = 14
		}
		grp := 0
		if n.Kind != InputNode && n.Kind != OutputNode {
			grp = groupID[boxOf(n.Module, boxed)]
		}
		nb.Group = grp - 1
		d.nodes = append(d.nodes, dagNode{w: nb.W, h: nb.H, capW: float64(len([]rune(nb.Caption))) * graphSmallCharW, capH: nb.CaptionH,
			group: grp})
		l.Nodes = append(l.Nodes, nb)
	}
	for _, e := range g.Edges {
		d.edges = append(d.edges, [2]int{e.From, e.To})
	}
	r := layoutDAG(d, maxW)
	for i := range l.Nodes {
		nb := &l.Nodes[i]
		nb.X, nb.Y, nb.Layer = r.x[i]-nb.W/2, r.y[i], r.layer[i]
	}
	for i := range g.Edges {
		l.Edges = append(l.Edges, EdgePath{Points: r.paths[i]})
	}
	for i := range l.Groups {
		b := r.groupBox[i+1]
		l.Groups[i].X, l.Groups[i].Y, l.Groups[i].W, l.Groups[i].H = b[0], b[1], b[2]-b[0], b[3]-b[1]
	}
	l.Layers = r.order
	l.Width, l.Height, l.Crossings, l.MaxLayer = r.width, r.height, r.crossings, r.maxLayerW
	return l
}

// graphGroupTitle is the title of module m's box inside the box of module
// parent: its path below parent, and its type.
func graphGroupTitle(g *Graph, m, parent string) string {
	name := m
	if parent != "" {
		name = strings.TrimPrefix(m, parent+".")
	}
	if gm := g.module(m); gm != nil && gm.Type != "" {
		name += ": " + gm.Type
	}
	return graphTruncate(name, 48)
}

// graphNodeLines is the text in a node's box: what it is, then its attributes.
func graphNodeLines(n GraphNode, g *Graph) []string {
	switch n.Kind {
	case OpNode:
		lines := []string{n.Op}
		if a := graphShortAttrText(n.Op, n.Attrs); a != "" {
			lines = append(lines, graphTruncate(a, 30))
		}
		return lines
	case ParamNode:
		return []string{n.Name[strings.LastIndexByte(n.Name, '.')+1:]}
	case ModuleNode:
		lines := []string{graphTruncate(n.Name, 32)}
		if n.Op != "" && n.Op != "module" {
			lines = append(lines, graphTruncate(n.Op, 36))
		}
		return lines
	}
	return []string{n.Op}
}

// graphNodeTooltip is the full description shown when hovering a node.
func graphNodeTooltip(n GraphNode) string {
	var b strings.Builder
	switch n.Kind {
	case ParamNode:
		fmt.Fprintf(&b, "param %s", n.Name)
	case ModuleNode:
		fmt.Fprintf(&b, "module %s (%s)", n.Name, n.Op)
	default:
		b.WriteString(n.Op)
		if a := graphAttrText(n.Attrs); a != "" {
			b.WriteString(" " + a)
		}
	}
	fmt.Fprintf(&b, "\n→ %s %s", graphShape(n.Shape), n.DType)
	if n.Module != "" {
		fmt.Fprintf(&b, "\nin %s", n.Module)
	}
	return b.String()
}

// graphAttrText formats op attributes compactly, keys in order.
func graphAttrText(attrs map[string]any) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+graphValueText(attrs[k]))
	}
	return strings.Join(parts, " ")
}

// graphShortAttrText is attrText for a node's box: attributes at their
// default (false, zero, unit strides) and those the edges' shapes already
// tell are left out.
func graphShortAttrText(op string, attrs map[string]any) string {
	keep := map[string]any{}
	for k, v := range attrs {
		if op == "linear" && (k == "in_features" || k == "out_features" || k == "bias") {
			continue
		}
		t := graphValueText(v)
		switch {
		case t == "false" || t == "none" || t == "" || strings.Trim(t, "0,.") == "":
			continue
		case (k == "stride" || k == "dilation" || k == "groups" || k == "step") && strings.Trim(t, "1,") == "":
			continue
		}
		keep[k] = v
	}
	return graphAttrText(keep)
}

func graphValueText(v any) string {
	switch x := v.(type) {
	case []int:
		s := make([]string, len(x))
		for i, d := range x {
			s[i] = fmt.Sprint(d)
		}
		return strings.Join(s, ",")
	case float64:
		return fmt.Sprintf("%.4g", x)
	case float32:
		return fmt.Sprintf("%.4g", x)
	case nil:
		return "none"
	}
	return fmt.Sprint(v)
}

// graphTensorText is an edge's label: shape and short dtype.
func graphTensorText(shape []int, dtype string) string {
	short := map[string]string{"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
		"int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool"}
	if s, ok := short[dtype]; ok {
		dtype = s
	}
	return graphShape(shape) + " " + dtype
}

// graphTruncate shortens s to n characters, marking the cut.
func graphTruncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

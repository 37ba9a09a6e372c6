package viz

// A layered (Sugiyama-style) layout of directed acyclic graphs whose
// nodes are grouped in nested boxes, computed in Go so that drawings need
// no JavaScript:
//
//  1. layering: longest path from the sources, then every node pulled down
//     towards its consumers when that shortens its edges (sources, such as
//     parameters, end up just above the op that reads them);
//  2. width: a layer wider than the page is folded into several;
//  3. long edges are split by dummy nodes, one per layer they cross, each
//     belonging to the innermost group holding both ends;
//  4. ordering (layout_order.go): barycenter sweeps down and up with the
//     transpose heuristic, keeping each group contiguous in every layer and
//     the left-to-right order of groups the same in every layer they
//     share, the best order seen kept;
//  5. coordinates (layout_coord.go): separation constraints between
//     neighbours in each layer and the borders of group boxes, placed
//     leftmost first and then moved towards the mean of their neighbours
//     by repeated projection onto the constraints (VPSC's block merging),
//     never past the page width;
//  6. vertical placement: layers top to bottom, with room for the titles
//     and bottom margins of the boxes that open and close at each layer.
//
// Group boxes are rectangles spanning the layers of their members; since
// their borders are constraint variables shared by all those layers, no
// node outside a group can fall inside its box, and no two node boxes
// overlap.

import (
	"math"
	"slices"
)

// Spacing of drawings, in pixels.
const (
	nodeSep      = 22.0 // between neighbouring node boxes
	dummySep     = 10.0 // next to an edge passing through a layer
	dummyWidth   = 6.0
	groupSep     = 14.0 // between a box's border and what is outside it
	groupPadX    = 10.0 // between a box's border and its content
	groupHeader  = 20.0 // room for a box's title above its first layer
	groupPadB    = 8.0  // room below a box's last layer
	layerGap     = 26.0 // between layers
	layoutMargin = 12.0
)

// dagNode is a node to lay out: a box with a caption under it.
type dagNode struct {
	w, h  float64 // the box
	capW  float64 // caption width; 0 for none
	capH  float64
	group int // innermost group (0: the drawing itself)
}

// dagGroup is a box around nodes; group 0 is the whole drawing.
type dagGroup struct {
	parent int
	titleW float64
}

// dag is the input of the layout engine.
type dag struct {
	nodes  []dagNode
	edges  [][2]int
	groups []dagGroup
}

// dagLayout is where the engine put everything.
type dagLayout struct {
	x, y      []float64 // per input node: box centre x, box top y
	layer     []int
	order     [][]int        // per layer, input nodes left to right
	paths     [][][2]float64 // per input edge: points from the source's caption to the target's top
	groupBox  [][4]float64   // per group: x0, y0, x1, y1 (group 0: the drawing)
	groupOn   []bool         // whether a group has any node
	width     float64
	height    float64
	crossings int
	maxLayerW float64 // widest layer, boxes of groups included
}

// engine holds the working state of one layout.
type engine struct {
	in       *dag
	maxWidth float64
	n        int // nodes, dummies included
	nReal    int
	left     []float64 // extent of each node left of its centre
	right    []float64
	height   []float64
	group    []int
	layer    []int
	up, down [][]int // neighbours in the layers above and below
	chains   [][]int // per input edge: the nodes it passes, source first
	reversed []bool  // per input edge: drawn against its direction (it closed a cycle)

	gParent   []int
	gChildren [][]int
	gDepth    []int
	gMin      []int // first and last layer of each group; gMin > gMax when empty
	gMax      []int

	layers [][]int // per layer: items left to right (nodes ≥ 0, borders < 0)
	nl     int     // number of layers

	x  []float64 // node centres
	gL []float64 // group borders
	gR []float64
}

// Borders in layer item lists: group g's left border is -(2g+1), its
// right border -(2g+2).
func leftBorder(g int) int             { return -(2*g + 1) }
func rightBorder(g int) int            { return -(2*g + 2) }
func borderGroup(item int) (int, bool) { return (-item - 1) / 2, (-item-1)%2 == 0 }

// layoutDAG lays d out within maxWidth pixels where it can.
func layoutDAG(d *dag, maxWidth float64) *dagLayout {
	if len(d.nodes) == 0 {
		return &dagLayout{groupBox: make([][4]float64, len(d.groups)), groupOn: make([]bool, len(d.groups)),
			width: 2 * layoutMargin, height: 2 * layoutMargin}
	}
	var best *dagLayout
	budget := maxWidth
	for range 6 {
		e := newEngine(d, maxWidth)
		e.assignLayers(budget)
		e.addDummies()
		e.spans()
		e.orderLayers()
		e.placeX()
		l := e.result()
		if best == nil || l.width < best.width {
			best = l
		}
		if l.width <= maxWidth {
			return l
		}
		budget *= 0.75 // fold wide layers harder
	}
	return best
}

func newEngine(d *dag, maxWidth float64) *engine {
	e := &engine{in: d, maxWidth: maxWidth, nReal: len(d.nodes)}
	for _, nd := range d.nodes {
		half := max(nd.w, nd.capW) / 2
		e.left = append(e.left, half)
		e.right = append(e.right, half)
		e.height = append(e.height, nd.h+nd.capH)
		e.group = append(e.group, nd.group)
	}
	e.n = e.nReal
	ng := len(d.groups)
	e.gParent = make([]int, ng)
	e.gChildren = make([][]int, ng)
	e.gDepth = make([]int, ng)
	for g := 1; g < ng; g++ {
		e.gParent[g] = d.groups[g].parent
	}
	for g := 1; g < ng; g++ {
		e.gChildren[e.gParent[g]] = append(e.gChildren[e.gParent[g]], g)
		for p := g; p != 0; p = e.gParent[p] {
			e.gDepth[g]++
		}
	}
	return e
}

// breakCycles marks the edges that must be drawn reversed for every edge
// to point down (the edges that close cycles, found by depth-first
// search) and returns the nodes in an order where the others go forward.
func (e *engine) breakCycles() []int {
	n := e.nReal
	out := make([][]int, n) // edge indices
	for i, ed := range e.in.edges {
		out[ed[0]] = append(out[ed[0]], i)
	}
	e.reversed = make([]bool, len(e.in.edges))
	state := make([]int8, n) // 0 new, 1 on stack, 2 done
	var post []int
	type frame struct{ v, next int }
	for s := range n {
		if state[s] != 0 {
			continue
		}
		stack := []frame{{v: s}}
		state[s] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < len(out[top.v]) {
				ei := out[top.v][top.next]
				top.next++
				w := e.in.edges[ei][1]
				switch state[w] {
				case 0:
					state[w] = 1
					stack = append(stack, frame{v: w})
				case 1:
					e.reversed[ei] = true
				}
				continue
			}
			state[top.v] = 2
			post = append(post, top.v)
			stack = stack[:len(stack)-1]
		}
	}
	slices.Reverse(post)
	return post
}

// dagEdge returns input edge i as drawn: source above target.
func (e *engine) dagEdge(i int) (int, int) {
	ed := e.in.edges[i]
	if e.reversed[i] {
		return ed[1], ed[0]
	}
	return ed[0], ed[1]
}

// assignLayers layers the input nodes (longest path, then pulled down
// towards their consumers) and folds layers wider than budget.
func (e *engine) assignLayers(budget float64) {
	e.breakCycles()
	n := e.nReal
	ins, outs := make([][]int, n), make([][]int, n)
	for i := range e.in.edges {
		u, v := e.dagEdge(i)
		if u == v {
			continue
		}
		outs[u] = append(outs[u], v)
		ins[v] = append(ins[v], u)
	}
	layer := e.groupedLongestPath(ins, outs)
	// Drop empty layers.
	used := map[int]bool{}
	for _, l := range layer {
		used[l] = true
	}
	scopeLevels := make([]int, 0, len(used))
	for l := range used {
		scopeLevels = append(scopeLevels, l)
	}
	slices.Sort(scopeLevels)
	remap := map[int]int{}
	for i, l := range scopeLevels {
		remap[l] = i
	}
	for v := range layer {
		layer[v] = remap[layer[v]]
	}
	e.layer = layer
	e.nl = len(scopeLevels)
	e.fold(budget, ins, outs)
}

// groupedLongestPath layers the nodes by longest path, with two more
// rules for boxes: when an edge leads from one box into a sibling box,
// the whole first box lies above the whole second (so that boxes in
// series are stacked, not staggered side by side), and nodes are then
// pulled down towards their consumers where that shortens their edges in
// total (a source, such as a parameter, moves to just above the op that
// reads it) without leaving their box's span.
func (e *engine) groupedLongestPath(ins, outs [][]int) []int {
	n, ng := e.nReal, len(e.gParent)
	start := func(g int) int { return n + 2*g }
	end := func(g int) int { return n + 2*g + 1 }
	type wedge struct{ to, w int }
	build := func(siblings bool) ([][]wedge, []int, bool) {
		adj := make([][]wedge, n+2*ng)
		for u := range n {
			for _, v := range outs[u] {
				adj[u] = append(adj[u], wedge{v, 1})
			}
			if g := e.group[u]; g != 0 {
				adj[start(g)] = append(adj[start(g)], wedge{u, 0})
				adj[u] = append(adj[u], wedge{end(g), 0})
			}
		}
		for g := 1; g < ng; g++ {
			if p := e.gParent[g]; p != 0 {
				adj[start(p)] = append(adj[start(p)], wedge{start(g), 0})
				adj[end(g)] = append(adj[end(g)], wedge{end(p), 0})
			}
		}
		if siblings {
			for u := range n {
				for _, v := range outs[u] {
					if a, b, ok := e.siblingBoxes(e.group[u], e.group[v]); ok {
						adj[end(a)] = append(adj[end(a)], wedge{start(b), 1})
					}
				}
			}
		}
		indeg := make([]int, len(adj))
		for _, es := range adj {
			for _, ed := range es {
				indeg[ed.to]++
			}
		}
		var order, queue []int
		for v := range adj {
			if indeg[v] == 0 {
				queue = append(queue, v)
			}
		}
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			order = append(order, v)
			for _, ed := range adj[v] {
				if indeg[ed.to]--; indeg[ed.to] == 0 {
					queue = append(queue, ed.to)
				}
			}
		}
		return adj, order, len(order) == len(adj)
	}
	adj, order, ok := build(true)
	if !ok { // boxes feeding each other both ways: cannot be stacked
		adj, order, _ = build(false)
	}
	dist := make([]int, len(adj))
	for _, v := range order {
		for _, ed := range adj[v] {
			dist[ed.to] = max(dist[ed.to], dist[v]+ed.w)
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		if v >= n || len(outs[v]) == 0 || len(outs[v]) <= len(ins[v]) {
			continue
		}
		lim := math.MaxInt
		for _, ed := range adj[v] {
			lim = min(lim, dist[ed.to]-ed.w)
		}
		if lim > dist[v] {
			dist[v] = lim
		}
	}
	return dist[:n]
}

// siblingBoxes returns, for an edge from a node in group gu to one in
// group gv, the two different boxes directly inside their innermost
// common group that hold the ends, if both ends are in such boxes.
func (e *engine) siblingBoxes(gu, gv int) (int, int, bool) {
	c := e.commonGroup(gu, gv)
	if gu == c || gv == c {
		return 0, 0, false
	}
	for e.gParent[gu] != c {
		gu = e.gParent[gu]
	}
	for e.gParent[gv] != c {
		gv = e.gParent[gv]
	}
	return gu, gv, true
}

// fold splits layers whose nodes and passing edges need more than budget
// pixels into several, moving nodes to a new layer just below (their
// consumers all lie further down, so edges still point down).
func (e *engine) fold(budget float64, ins, outs [][]int) {
	pad := 0.0
	for g := 1; g < len(e.gParent); g++ {
		pad = max(pad, float64(e.gDepth[g])*(2*groupPadX+groupSep))
	}
	usable := max(budget-2*layoutMargin-pad, 200)
	for l := 0; l < e.nl; l++ {
		var at []int
		for v, lv := range e.layer {
			if lv == l {
				at = append(at, v)
			}
		}
		passing := 0
		for v := range e.nReal {
			for _, w := range outs[v] {
				if e.layer[v] < l && e.layer[w] > l {
					passing++
				}
			}
		}
		// Keep groups together: group order, then node order.
		slices.SortStableFunc(at, func(a, b int) int { return e.group[a] - e.group[b] })
		w := float64(passing) * (dummyWidth + dummySep)
		cut := -1
		for i, v := range at {
			w += e.left[v] + e.right[v] + nodeSep
			if w > usable && i > 0 {
				cut = i
				break
			}
		}
		if cut < 0 {
			continue
		}
		for v := range e.layer {
			if e.layer[v] > l {
				e.layer[v]++
			}
		}
		for _, v := range at[cut:] {
			e.layer[v] = l + 1
		}
		e.nl++
	}
}

// addDummies splits every edge spanning several layers into one segment
// per layer, through dummy nodes owned by the innermost group that holds
// both ends.
func (e *engine) addDummies() {
	e.up = make([][]int, e.nReal)
	e.down = make([][]int, e.nReal)
	e.chains = make([][]int, len(e.in.edges))
	link := func(u, v int) {
		e.down[u] = append(e.down[u], v)
		e.up[v] = append(e.up[v], u)
	}
	for i := range e.in.edges {
		u, v := e.dagEdge(i)
		chain := []int{u}
		if u != v {
			g := e.commonGroup(e.group[u], e.group[v])
			prev := u
			for l := e.layer[u] + 1; l < e.layer[v]; l++ {
				d := e.n
				e.n++
				e.left = append(e.left, dummyWidth/2)
				e.right = append(e.right, dummyWidth/2)
				e.height = append(e.height, 0)
				e.group = append(e.group, g)
				e.layer = append(e.layer, l)
				e.up = append(e.up, nil)
				e.down = append(e.down, nil)
				link(prev, d)
				chain = append(chain, d)
				prev = d
			}
			link(prev, v)
		}
		chain = append(chain, v)
		e.chains[i] = chain
	}
}

// commonGroup returns the innermost group holding groups a and b.
func (e *engine) commonGroup(a, b int) int {
	for e.gDepth[a] > e.gDepth[b] {
		a = e.gParent[a]
	}
	for e.gDepth[b] > e.gDepth[a] {
		b = e.gParent[b]
	}
	for a != b {
		a, b = e.gParent[a], e.gParent[b]
	}
	return a
}

// spans computes the layers each group covers: from its first node's to
// its last node's, its subgroups' nodes included.
func (e *engine) spans() {
	ng := len(e.gParent)
	e.gMin, e.gMax = make([]int, ng), make([]int, ng)
	for g := range ng {
		e.gMin[g], e.gMax[g] = math.MaxInt, -1
	}
	for v := range e.n {
		for g := e.group[v]; ; g = e.gParent[g] {
			e.gMin[g] = min(e.gMin[g], e.layer[v])
			e.gMax[g] = max(e.gMax[g], e.layer[v])
			if g == 0 {
				break
			}
		}
	}
}

// present reports whether group g's box crosses layer l.
func (e *engine) present(g, l int) bool { return e.gMin[g] <= l && l <= e.gMax[g] }

// result measures the finished layout: vertical positions, edge paths,
// group boxes and crossings.
func (e *engine) result() *dagLayout {
	r := &dagLayout{
		x: make([]float64, e.nReal), y: make([]float64, e.nReal), layer: make([]int, e.nReal),
		groupBox: make([][4]float64, len(e.gParent)), groupOn: make([]bool, len(e.gParent)),
	}
	// Vertical room at each layer for the boxes opening and closing there.
	headers, footers := make([]int, e.nl), make([]int, e.nl)
	rankTop, rankBottom := make([]int, len(e.gParent)), make([]int, len(e.gParent))
	for g := 1; g < len(e.gParent); g++ {
		if e.gMin[g] > e.gMax[g] {
			continue
		}
		for p := e.gParent[g]; p != 0; p = e.gParent[p] {
			if e.gMin[p] == e.gMin[g] {
				rankTop[g]++
			}
			if e.gMax[p] == e.gMax[g] {
				rankBottom[g]++
			}
		}
		headers[e.gMin[g]] = max(headers[e.gMin[g]], rankTop[g]+1)
		footers[e.gMax[g]] = max(footers[e.gMax[g]], rankBottom[g]+1)
	}
	top, layerH := make([]float64, e.nl), make([]float64, e.nl)
	for v := range e.n {
		layerH[e.layer[v]] = max(layerH[e.layer[v]], e.height[v])
	}
	yPos := layoutMargin
	for l := range e.nl {
		if l > 0 {
			yPos += layerH[l-1] + layerGap + float64(footers[l-1])*groupPadB
		}
		yPos += float64(headers[l]) * groupHeader
		top[l] = yPos
	}
	r.height = yPos + layerH[e.nl-1] + float64(footers[e.nl-1])*groupPadB + layoutMargin
	for v := range e.nReal {
		r.x[v], r.y[v], r.layer[v] = e.x[v], top[e.layer[v]], e.layer[v]
	}
	r.order = make([][]int, e.nl)
	for l, items := range e.layers {
		for _, it := range items {
			if it >= 0 && it < e.nReal {
				r.order[l] = append(r.order[l], it)
			}
		}
	}
	// Edges: out of the source's caption, straight down through each
	// dummy's layer, into the target's top.
	for i, chain := range e.chains {
		u := chain[0]
		src := e.in.nodes[u]
		pts := [][2]float64{{e.x[u], top[e.layer[u]] + src.h + src.capH}}
		for _, d := range chain[1 : len(chain)-1] {
			l := e.layer[d]
			pts = append(pts, [2]float64{e.x[d], top[l]}, [2]float64{e.x[d], top[l] + layerH[l]})
		}
		v := chain[len(chain)-1]
		pts = append(pts, [2]float64{e.x[v], top[e.layer[v]]})
		if e.reversed[i] {
			slices.Reverse(pts)
		}
		r.paths = append(r.paths, pts)
	}
	for g := 1; g < len(e.gParent); g++ {
		if e.gMin[g] > e.gMax[g] {
			continue
		}
		r.groupOn[g] = true
		y0 := top[e.gMin[g]] - float64(headers[e.gMin[g]]-rankTop[g])*groupHeader
		y1 := top[e.gMax[g]] + layerH[e.gMax[g]] + float64(footers[e.gMax[g]]-rankBottom[g])*groupPadB
		r.groupBox[g] = [4]float64{e.gL[g], y0, e.gR[g], y1}
	}
	// Widths: the drawing, and the widest layer (boxes included).
	minX, maxX := math.Inf(1), math.Inf(-1)
	for _, items := range e.layers {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, it := range items {
			a, b := e.itemExtent(it)
			lo, hi = min(lo, a), max(hi, b)
		}
		if lo <= hi {
			r.maxLayerW = max(r.maxLayerW, hi-lo)
			minX, maxX = min(minX, lo), max(maxX, hi)
		}
	}
	r.width = maxX - minX + 2*layoutMargin
	r.groupBox[0] = [4]float64{0, 0, r.width, r.height}
	r.groupOn[0] = true
	r.crossings = e.totalCrossings()
	return r
}

// itemExtent returns the horizontal span of a layer item.
func (e *engine) itemExtent(it int) (float64, float64) {
	if it >= 0 {
		return e.x[it] - e.left[it], e.x[it] + e.right[it]
	}
	g, isLeft := borderGroup(it)
	if isLeft {
		return e.gL[g], e.gL[g]
	}
	return e.gR[g], e.gR[g]
}

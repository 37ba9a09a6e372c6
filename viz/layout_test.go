package viz

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// handGraph builds a Graph from node specs "name" or "name@module" and
// edges "a>b". Modules named get a parameter count so that they are
// boxed when they hold two nodes or more.
func handGraph(nodes []string, edges []string) *Graph {
	g := &Graph{Modules: []GraphModule{{Type: "test"}}}
	id := map[string]int{}
	mods := map[string]bool{}
	for _, s := range nodes {
		name, mod, _ := strings.Cut(s, "@")
		id[name] = len(g.Nodes)
		g.Nodes = append(g.Nodes, GraphNode{ID: len(g.Nodes), Kind: OpNode, Op: name, Module: mod, Shape: []int{1}, DType: "float32"})
		for m := mod; m != ""; m = pathParent(m) {
			mods[m] = true
		}
	}
	paths := make([]string, 0, len(mods))
	for m := range mods {
		paths = append(paths, m)
	}
	slices.Sort(paths)
	for _, m := range paths {
		g.Modules = append(g.Modules, GraphModule{Path: m, Name: m[strings.LastIndexByte(m, '.')+1:], Type: "T", Params: 1})
	}
	for _, e := range edges {
		a, b, _ := strings.Cut(e, ">")
		ia, okA := id[a]
		ib, okB := id[b]
		if !okA || !okB {
			panic("bad edge " + e)
		}
		g.Edges = append(g.Edges, GraphEdge{From: ia, To: ib, Shape: []int{1}, DType: "float32"})
	}
	return g
}

func TestLayoutHandMadeDAGs(t *testing.T) {
	cases := []struct {
		name      string
		nodes     []string
		edges     []string
		crossings int // the optimum, which the layout must reach
	}{
		{"crossed pair untangles", []string{"a", "b", "c", "d"}, []string{"a>d", "b>c"}, 0},
		{"K2,2 has one unavoidable crossing", []string{"a", "b", "c", "d"}, []string{"a>c", "a>d", "b>c", "b>d"}, 1},
		{"K3,3 has nine whatever the order", []string{"a", "b", "c", "x", "y", "z"},
			[]string{"a>x", "a>y", "a>z", "b>x", "b>y", "b>z", "c>x", "c>y", "c>z"}, 9},
		{"two K2,2 side by side", []string{"a", "b", "c", "d", "e", "f", "g", "h"},
			[]string{"a>g", "a>h", "b>g", "b>h", "c>e", "c>f", "d>e", "d>f"}, 2},
		{"scrambled tree untangles", []string{"r", "a", "b", "c", "a1", "c1", "b1", "b2", "a2", "c2"},
			[]string{"r>a", "r>b", "r>c", "a>a1", "a>a2", "b>b1", "b>b2", "c>c1", "c>c2"}, 0},
		{"chain with a skip edge", []string{"a", "b", "c", "d", "e"}, []string{"a>b", "b>c", "c>d", "d>e", "a>e", "b>e"}, 0},
		{"ladder", []string{"a1", "b1", "a2", "b2", "a3", "b3"}, []string{"a1>a2", "a2>a3", "b1>b2", "b2>b3", "a1>b2", "b2>a3"}, 0},
		{"sources pulled down to their consumers", []string{"x", "h1", "h2", "h3", "w", "y"},
			[]string{"x>h1", "h1>h2", "h2>h3", "h3>y", "w>y"}, 0},
		{"groups swap as blocks", []string{"s1", "s2", "g1@G", "g2@G", "h1@H", "h2@H", "t"},
			[]string{"s1>h1", "s2>g1", "g1>g2", "h1>h2", "g2>t", "h2>t"}, 0},
		{"nested groups", []string{"in", "a@M", "b@M.A", "c@M.A", "d@M.B", "e@M.B", "f@M", "out"},
			[]string{"in>a", "a>b", "a>d", "b>c", "d>e", "c>f", "e>f", "f>out", "in>out"}, 0},
		{"boxes in one order in every layer force a crossing", []string{"s", "a1@A", "b1@B", "a2@A", "b2@B", "t"},
			[]string{"s>a1", "s>b1", "a1>b2", "b1>a2", "a2>t", "b2>t"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := handGraph(c.nodes, c.edges).Layout(GraphOptions{Depth: -1})
			if got := checkLayout(t, c.name, l); got != c.crossings {
				t.Errorf("%d crossings, the optimum is %d", got, c.crossings)
			}
		})
	}
}

func TestLayoutCycleIsDrawn(t *testing.T) {
	g := handGraph([]string{"a", "b", "c"}, []string{"a>b", "b>c", "c>a"})
	l := g.Layout(GraphOptions{})
	if len(l.Edges) != 3 || len(l.Layers) != 3 {
		t.Fatalf("%d edges in %d layers", len(l.Edges), len(l.Layers))
	}
	up := 0
	for _, e := range l.Edges {
		if e.Points[len(e.Points)-1][1] < e.Points[0][1] {
			up++
		}
	}
	if up != 1 {
		t.Errorf("%d edges drawn upwards, want the one closing the cycle", up)
	}
}

// bruteForceCrossings returns the fewest crossings of a graph whose nodes
// are already in layers (layers[i] lists node indices) and whose edges
// join consecutive layers, over every order of every layer.
func bruteForceCrossings(layers [][]int, edges [][2]int) int {
	pos, layerOf := map[int]int{}, map[int]int{}
	for k, l := range layers {
		for _, v := range l {
			layerOf[v] = k
		}
	}
	best := int(^uint(0) >> 1)
	var rec func(k int)
	rec = func(k int) {
		if k == len(layers) {
			c := 0
			for i, e := range edges {
				for _, f := range edges[i+1:] {
					if layerOf[e[0]] == layerOf[f[0]] && (pos[e[0]]-pos[f[0]])*(pos[e[1]]-pos[f[1]]) < 0 {
						c++
					}
				}
			}
			best = min(best, c)
			return
		}
		testPermute(slices.Clone(layers[k]), 0, func(p []int) {
			for i, v := range p {
				pos[v] = i
			}
			rec(k + 1)
		})
	}
	rec(0)
	return best
}

func testPermute(a []int, k int, f func([]int)) {
	if k == len(a) {
		f(a)
		return
	}
	for i := k; i < len(a); i++ {
		a[k], a[i] = a[i], a[k]
		testPermute(a, k+1, f)
		a[k], a[i] = a[i], a[k]
	}
}

// Random three-layer graphs, small enough to try every order: the layout
// reaches the optimum on at least 95% of them (148 of 150 when this was
// written) and is never more than one crossing off.
func TestLayoutNearOptimalOnRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	const trials = 150
	optimal, worst := 0, 0
	for trial := range trials {
		sizes := []int{2 + r.IntN(3), 2 + r.IntN(3), 2 + r.IntN(3)}
		var layers [][]int
		var names []string
		for k, n := range sizes {
			var layer []int
			for range n {
				layer = append(layer, len(names))
				names = append(names, fmt.Sprintf("n%d_%d", k, len(layer)))
			}
			layers = append(layers, layer)
		}
		// Every node below the top has a producer above; every node above
		// the bottom a consumer below; then some random extra edges.
		set := map[[2]int]bool{}
		for k := 1; k < 3; k++ {
			for _, v := range layers[k] {
				set[[2]int{layers[k-1][r.IntN(len(layers[k-1]))], v}] = true
			}
			for _, u := range layers[k-1] {
				set[[2]int{u, layers[k][r.IntN(len(layers[k]))]}] = true
			}
			for range r.IntN(4) {
				set[[2]int{layers[k-1][r.IntN(len(layers[k-1]))], layers[k][r.IntN(len(layers[k]))]}] = true
			}
		}
		var edges [][2]int
		var specs []string
		for e := range set {
			edges = append(edges, e)
		}
		slices.SortFunc(edges, func(a, b [2]int) int {
			if a[0] != b[0] {
				return a[0] - b[0]
			}
			return a[1] - b[1]
		})
		for _, e := range edges {
			specs = append(specs, names[e[0]]+">"+names[e[1]])
		}
		// Scramble the input order so the first order is not a hint.
		perm := r.Perm(len(names))
		shuffled := make([]string, len(names))
		for i, p := range perm {
			shuffled[i] = names[p]
		}
		l := handGraph(shuffled, specs).Layout(GraphOptions{Depth: -1})
		if len(l.Layers) != 3 {
			t.Fatalf("trial %d: %d layers, want 3", trial, len(l.Layers))
		}
		got := checkLayout(t, fmt.Sprint("trial ", trial), l)
		opt := bruteForceCrossings(layers, edges)
		if got < opt {
			t.Fatalf("trial %d: %d crossings, below the optimum %d: the counts disagree", trial, got, opt)
		}
		if got == opt {
			optimal++
		}
		worst = max(worst, got-opt)
	}
	t.Logf("optimal on %d of %d random graphs; worst excess %d", optimal, trials, worst)
	if optimal < trials*95/100 || worst > 1 {
		t.Errorf("optimal on only %d of %d graphs, worst excess %d crossings", optimal, trials, worst)
	}
}

// A layer far wider than the page is folded into rows that fit it.
func TestLayoutFoldsWideLayers(t *testing.T) {
	var nodes, edges []string
	for i := range 60 {
		nodes = append(nodes, fmt.Sprintf("source_%02d", i))
		edges = append(edges, fmt.Sprintf("source_%02d>sink", i))
	}
	nodes = append(nodes, "sink")
	l := handGraph(nodes, edges).Layout(GraphOptions{Depth: -1})
	checkLayout(t, "fan-in", l)
	if len(l.Layers) < 4 {
		t.Errorf("%d layers: the 60 sources were not folded", len(l.Layers))
	}
	if l.Width > 1200 {
		t.Errorf("%.0f px wide", l.Width)
	}
}

func TestLayoutEmptyGraph(t *testing.T) {
	l := (&Graph{}).Layout(GraphOptions{})
	if len(l.Nodes) != 0 || l.Width <= 0 || !strings.HasPrefix(l.SVG(), "<svg") {
		t.Errorf("empty graph: %+v", l)
	}
}

package viz

import (
	"math"
	"sort"
	"testing"
)

// checkLayout verifies what every drawing must satisfy, from the geometry
// of l alone, and returns the crossings it counted:
//   - no two node footprints (box plus the caption under it) intersect;
//   - every edge runs downwards from its source's caption to its target's
//     top (the input graphs have no cycles);
//   - the crossings counted from the edges' x order at the top and bottom
//     of each gap between layers equal Layout.Crossings;
//   - the drawing and each layer (module boxes crossing it included) fit
//     MaxWidth;
//   - grouping: a node lies inside a module box exactly when the node
//     belongs to that module or one below it; boxes are nested or
//     disjoint, as the modules are; and each box's nodes are contiguous
//     in every layer.
func checkLayout(t *testing.T, name string, l *Layout) int {
	t.Helper()
	type rect struct{ x0, y0, x1, y1 float64 }
	foot := make([]rect, len(l.Nodes))
	for i, nb := range l.Nodes {
		w := max(nb.W, float64(len([]rune(nb.Caption)))*graphSmallCharW)
		cx := nb.X + nb.W/2
		foot[i] = rect{cx - w/2, nb.Y, cx + w/2, nb.Y + nb.H + nb.CaptionH}
	}
	const eps = 1e-6
	overlap := func(a, b rect) bool {
		return a.x0 < b.x1-eps && b.x0 < a.x1-eps && a.y0 < b.y1-eps && b.y0 < a.y1-eps
	}
	inside := func(a, b rect) bool {
		return a.x0 >= b.x0-eps && a.x1 <= b.x1+eps && a.y0 >= b.y0-eps && a.y1 <= b.y1+eps
	}
	for i := range foot {
		for j := i + 1; j < len(foot); j++ {
			if overlap(foot[i], foot[j]) {
				t.Errorf("%s: nodes %d (%v) and %d (%v) overlap", name, i, l.Nodes[i].Lines, j, l.Nodes[j].Lines)
			}
		}
	}
	// Edges: endpoints and direction.
	type seg struct{ x0, x1 float64 }
	gaps := map[int64][]seg{}
	for i, e := range l.Edges {
		ge := l.Graph.Edges[i]
		p := e.Points
		src, dst := l.Nodes[ge.From], l.Nodes[ge.To]
		first, last := p[0], p[len(p)-1]
		if math.Abs(first[0]-(src.X+src.W/2)) > eps || math.Abs(first[1]-(src.Y+src.H+src.CaptionH)) > eps {
			t.Errorf("%s: edge %d starts at %v, not under node %d's caption", name, i, first, ge.From)
		}
		if math.Abs(last[0]-(dst.X+dst.W/2)) > eps || math.Abs(last[1]-dst.Y) > eps {
			t.Errorf("%s: edge %d ends at %v, not on node %d's top", name, i, last, ge.To)
		}
		for k := 1; k < len(p); k++ {
			if p[k][1] < p[k-1][1] {
				t.Errorf("%s: edge %d goes up", name, i)
			}
		}
		if len(p)%2 != 0 {
			t.Errorf("%s: edge %d has %d points", name, i, len(p))
			continue
		}
		for k := 0; k < len(p); k += 2 {
			key := int64(math.Round(p[k+1][1] * 100))
			gaps[key] = append(gaps[key], seg{p[k][0], p[k+1][0]})
		}
	}
	cross := 0
	for _, ss := range gaps {
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				if (ss[i].x0-ss[j].x0)*(ss[i].x1-ss[j].x1) < -eps {
					cross++
				}
			}
		}
	}
	if cross != l.Crossings {
		t.Errorf("%s: geometry shows %d crossings, the layout reports %d", name, cross, l.Crossings)
	}
	// Widths.
	if l.Width > l.MaxWidth+eps {
		t.Errorf("%s: drawing is %.0f px wide, page %.0f", name, l.Width, l.MaxWidth)
	}
	for k, layer := range l.Layers {
		lo, hi := math.Inf(1), math.Inf(-1)
		y0, y1 := math.Inf(1), math.Inf(-1)
		for _, v := range layer {
			lo, hi = min(lo, foot[v].x0), max(hi, foot[v].x1)
			y0, y1 = min(y0, foot[v].y0), max(y1, foot[v].y1)
		}
		for _, g := range l.Groups {
			if g.Y <= y0 && g.Y+g.H >= y1 {
				lo, hi = min(lo, g.X), max(hi, g.X+g.W)
			}
		}
		if hi-lo > l.MaxWidth+eps {
			t.Errorf("%s: layer %d is %.0f px wide", name, k, hi-lo)
		}
	}
	// Grouping.
	box := make([]rect, len(l.Groups))
	for i, g := range l.Groups {
		box[i] = rect{g.X, g.Y, g.X + g.W, g.Y + g.H}
	}
	isAncestor := func(a, g int) bool { // a == g or a encloses g
		for ; g >= 0; g = l.Groups[g].Parent {
			if g == a {
				return true
			}
		}
		return false
	}
	for i, nb := range l.Nodes {
		n := l.Graph.Nodes[i]
		for gi, g := range l.Groups {
			member := isAncestor(gi, nb.Group)
			mod := n.Module
			if n.Kind == ModuleNode {
				mod = n.Name
			}
			if n.Kind != InputNode && n.Kind != OutputNode && pathWithin(mod, g.Module) != member {
				t.Errorf("%s: node %d of module %q: box %q membership %v", name, i, mod, g.Module, member)
			}
			switch {
			case member && !inside(foot[i], box[gi]):
				t.Errorf("%s: node %d (%v) sticks out of its box %q", name, i, nb.Lines, g.Module)
			case !member && overlap(foot[i], box[gi]):
				t.Errorf("%s: node %d (%v) lies in box %q, which is not its module's", name, i, nb.Lines, g.Module)
			}
		}
	}
	for i := range box {
		for j := i + 1; j < len(box); j++ {
			switch {
			case isAncestor(i, j):
				if !inside(box[j], box[i]) {
					t.Errorf("%s: box %q is not inside %q", name, l.Groups[j].Module, l.Groups[i].Module)
				}
			case isAncestor(j, i):
				if !inside(box[i], box[j]) {
					t.Errorf("%s: box %q is not inside %q", name, l.Groups[i].Module, l.Groups[j].Module)
				}
			case overlap(box[i], box[j]):
				t.Errorf("%s: boxes %q and %q overlap", name, l.Groups[i].Module, l.Groups[j].Module)
			}
		}
	}
	for k, layer := range l.Layers {
		if !sort.SliceIsSorted(layer, func(a, b int) bool { return l.Nodes[layer[a]].X < l.Nodes[layer[b]].X }) {
			t.Errorf("%s: layer %d is not left to right", name, k)
		}
		for gi := range l.Groups {
			in, done := false, false
			for _, v := range layer {
				m := isAncestor(gi, l.Nodes[v].Group)
				switch {
				case m && done:
					t.Errorf("%s: box %q is split in layer %d", name, l.Groups[gi].Module, k)
				case m:
					in = true
				case in:
					done = true
				}
			}
		}
	}
	return cross
}

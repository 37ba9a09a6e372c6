package viz

// Crossing reduction for the layered layout (step 4 of layout.go).

import (
	"math/rand/v2"
	"slices"
	"sort"
)

// orderState is what the ordering phase keeps about the current order.
type orderState struct {
	pos     []int   // index of each node among the nodes of its layer
	atLayer [][]int // nodes of each layer, in no particular order
}

// orderLayers orders every layer, keeping groups contiguous, with
// barycenter sweeps and transpositions, and leaves the order with the
// fewest crossings in e.layers.
func (e *engine) orderLayers() {
	st := &orderState{pos: make([]int, e.n), atLayer: make([][]int, e.nl)}
	for v := range e.n {
		st.atLayer[e.layer[v]] = append(st.atLayer[e.layer[v]], v)
	}
	// Start from a depth-first order from the sources, in input order (it
	// keeps chains together and follows the program), then from a few
	// shuffles of it (seeded: layouts are reproducible); keep the best.
	rank := e.dfsRank()
	rng := rand.New(rand.NewPCG(uint64(e.n), uint64(len(e.chains))))
	var best [][]int
	bestC := -1
	for attempt := 0; attempt < 5 && bestC != 0; attempt++ {
		r := rank
		if attempt > 0 {
			r = make([]int, e.n)
			for i, p := range rng.Perm(e.n) {
				r[i] = p
			}
		}
		layers, c := e.orderFrom(st, r)
		if bestC < 0 || c < bestC {
			best, bestC = layers, c
		}
	}
	e.layers = best
	for l := range e.nl {
		e.updatePos(st, l)
	}
}

// orderFrom runs the sweeps from the initial order given by rank and
// returns the best order found and its crossings.
func (e *engine) orderFrom(st *orderState, rank []int) ([][]int, int) {
	e.layers = make([][]int, e.nl)
	for l := range e.nl {
		nodes := slices.Clone(st.atLayer[l])
		sort.SliceStable(nodes, func(i, j int) bool { return rank[nodes[i]] < rank[nodes[j]] })
		e.layers[l] = nodes
		key := map[int]float64{}
		for i, v := range nodes {
			key[v] = float64(i)
		}
		e.buildLayer(st, l, key, l-1)
	}
	best := cloneLayers(e.layers)
	bestC := e.totalCrossings()
	stale := 0
	for iter := 0; iter < 32 && bestC > 0 && stale < 6; iter++ {
		for l := 1; l < e.nl; l++ {
			e.sweep(st, l, l-1)
		}
		e.transposeAll(st)
		for l := e.nl - 2; l >= 0; l-- {
			e.sweep(st, l, l+1)
		}
		e.transposeAll(st)
		if c := e.totalCrossings(); c < bestC {
			best, bestC, stale = cloneLayers(e.layers), c, 0
		} else {
			stale++
		}
	}
	return best, bestC
}

func cloneLayers(ls [][]int) [][]int {
	out := make([][]int, len(ls))
	for i, l := range ls {
		out[i] = slices.Clone(l)
	}
	return out
}

// dfsRank numbers the nodes in depth-first order from the sources.
func (e *engine) dfsRank() []int {
	rank := make([]int, e.n)
	for i := range rank {
		rank[i] = -1
	}
	next := 0
	var visit func(v int)
	visit = func(v int) {
		if rank[v] >= 0 {
			return
		}
		rank[v] = next
		next++
		for _, w := range e.down[v] {
			visit(w)
		}
	}
	for v := range e.nReal {
		if len(e.up[v]) == 0 {
			visit(v)
		}
	}
	for v := range e.n {
		visit(v)
	}
	return rank
}

// updatePos recomputes the positions of layer l's nodes from e.layers.
func (e *engine) updatePos(st *orderState, l int) {
	i := 0
	for _, it := range e.layers[l] {
		if it >= 0 {
			st.pos[it] = i
			i++
		}
	}
}

// npos is a node's position in its layer scaled to [0, 1], so positions
// in layers of different widths compare.
func (e *engine) npos(st *orderState, v int) float64 {
	return (float64(st.pos[v]) + 0.5) / float64(len(st.atLayer[e.layer[v]]))
}

// sweep reorders layer l by the barycenters of its nodes' neighbours in
// layer ref (the layer above in a downward sweep, below in an upward one).
func (e *engine) sweep(st *orderState, l, ref int) {
	key := map[int]float64{}
	for _, v := range st.atLayer[l] {
		near, far := e.up[v], e.down[v]
		if ref > l {
			near, far = far, near
		}
		switch {
		case len(near) > 0:
			key[v] = e.barycenter(st, near)
		case len(far) > 0:
			key[v] = e.barycenter(st, far)
		default:
			key[v] = e.npos(st, v)
		}
	}
	e.buildLayer(st, l, key, ref)
}

func (e *engine) barycenter(st *orderState, vs []int) float64 {
	s := 0.0
	for _, w := range vs {
		s += e.npos(st, w)
	}
	return s / float64(len(vs))
}

// orderEntry is a node or a whole subgroup within a group's part of a layer.
type orderEntry struct {
	node  int // -1 for a group
	group int
	key   float64
}

// buildLayer rebuilds layer l from node keys: within each group, its own
// nodes and its subgroups (as blocks) sorted by key, except that groups
// also present in layer ref keep their left-to-right order from there, so
// that boxes never have to cross. Ties keep the current order.
func (e *engine) buildLayer(st *orderState, l int, key map[int]float64, ref int) {
	ng := len(e.gParent)
	entries := make([][]orderEntry, ng)
	added := make([]bool, ng)
	// Group keys: the mean key of their nodes in this layer.
	sum, cnt := make([]float64, ng), make([]int, ng)
	for _, v := range st.atLayer[l] {
		for g := e.group[v]; g != 0; g = e.gParent[g] {
			sum[g] += key[v]
			cnt[g]++
		}
	}
	items := e.layers[l]
	groupKey := func(g int) float64 {
		if cnt[g] > 0 {
			return sum[g] / float64(cnt[g])
		}
		if i := slices.Index(items, leftBorder(g)); i >= 0 {
			return (float64(i) + 0.5) / float64(len(items))
		}
		return 0.5
	}
	var addGroup func(g int)
	addGroup = func(g int) {
		if g == 0 || added[g] {
			return
		}
		added[g] = true
		p := e.gParent[g]
		addGroup(p)
		entries[p] = append(entries[p], orderEntry{node: -1, group: g, key: groupKey(g)})
	}
	seen := map[int]bool{}
	for _, it := range items {
		if it >= 0 {
			if e.layer[it] != l || seen[it] {
				continue
			}
			seen[it] = true
			addGroup(e.group[it])
			entries[e.group[it]] = append(entries[e.group[it]], orderEntry{node: it, group: e.group[it], key: key[it]})
		} else if g, _ := borderGroup(it); e.present(g, l) {
			addGroup(g)
		}
	}
	for _, v := range st.atLayer[l] {
		if !seen[v] {
			addGroup(e.group[v])
			entries[e.group[v]] = append(entries[e.group[v]], orderEntry{node: v, group: e.group[v], key: key[v]})
		}
	}
	for g := 1; g < ng; g++ {
		if e.present(g, l) {
			addGroup(g)
		}
	}
	var refItems []int
	if ref >= 0 && ref < e.nl {
		refItems = e.layers[ref]
	}
	var out []int
	var emit func(g int)
	emit = func(g int) {
		es := entries[g]
		sort.SliceStable(es, func(i, j int) bool { return es[i].key < es[j].key })
		// Subgroups also in the reference layer keep its order.
		var slots, fixed []int
		for i, en := range es {
			if en.node < 0 && refItems != nil && e.present(en.group, ref) {
				slots = append(slots, i)
				fixed = append(fixed, en.group)
			}
		}
		if len(fixed) > 1 {
			sort.SliceStable(fixed, func(i, j int) bool {
				return slices.Index(refItems, leftBorder(fixed[i])) < slices.Index(refItems, leftBorder(fixed[j]))
			})
			orig := slices.Clone(es)
			for k, s := range slots {
				for _, en := range orig {
					if en.node < 0 && en.group == fixed[k] {
						es[s] = en
					}
				}
			}
		}
		for _, en := range es {
			if en.node >= 0 {
				out = append(out, en.node)
				continue
			}
			out = append(out, leftBorder(en.group))
			emit(en.group)
			out = append(out, rightBorder(en.group))
		}
	}
	emit(0)
	e.layers[l] = out
	e.updatePos(st, l)
}

// crossings counts the crossings between the edges from layer l to
// layer l+1 (two edges cross when their ends are in opposite orders).
func (e *engine) crossings(st *orderState, l int) int {
	if l < 0 || l+1 >= e.nl {
		return 0
	}
	type seg struct{ a, b int }
	var segs []seg
	for _, it := range e.layers[l] {
		if it < 0 {
			continue
		}
		for _, w := range e.down[it] {
			segs = append(segs, seg{st.pos[it], st.pos[w]})
		}
	}
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].a != segs[j].a {
			return segs[i].a < segs[j].a
		}
		return segs[i].b < segs[j].b
	})
	// Count pairs i < j with b_i > b_j, with a Fenwick tree over b.
	n := len(st.atLayer[l+1]) + 1
	tree := make([]int, n+1)
	c := 0
	for i, s := range segs {
		// earlier segments with b > s.b
		le := 0
		for k := s.b + 1; k > 0; k -= k & -k {
			le += tree[k]
		}
		c += i - le
		for k := s.b + 1; k <= n; k += k & -k {
			tree[k]++
		}
	}
	return c
}

// totalCrossings counts the crossings of the whole current order.
func (e *engine) totalCrossings() int {
	st := &orderState{pos: make([]int, e.n), atLayer: make([][]int, e.nl)}
	for v := range e.n {
		st.atLayer[e.layer[v]] = append(st.atLayer[e.layer[v]], v)
	}
	for l := range e.nl {
		e.updatePos(st, l)
	}
	c := 0
	for l := 0; l+1 < e.nl; l++ {
		c += e.crossings(st, l)
	}
	return c
}

// transposeAll swaps neighbours in each layer (two nodes, or a node and a
// neighbouring subgroup's block) while that removes crossings.
func (e *engine) transposeAll(st *orderState) {
	for pass := 0; pass < 4; pass++ {
		improved := false
		for l := range e.nl {
			if e.transpose(st, l) {
				improved = true
			}
		}
		if !improved {
			return
		}
	}
}

func (e *engine) transpose(st *orderState, l int) bool {
	improved := false
	items := e.layers[l]
	for i := 0; i+1 < len(items); i++ {
		a, b := items[i], items[i+1]
		var moved []int
		switch {
		case a >= 0 && b >= 0:
			moved = swapRange(items, i, i, i+1, i+1)
		case a >= 0 && b < 0:
			g, isLeft := borderGroup(b)
			if !isLeft {
				continue
			}
			end := slices.Index(items, rightBorder(g))
			moved = swapRange(items, i, i, i+1, end)
		case a < 0 && b >= 0:
			g, isLeft := borderGroup(a)
			if isLeft {
				continue
			}
			start := slices.Index(items, leftBorder(g))
			moved = swapRange(items, start, i, i+1, i+1)
		default:
			continue
		}
		positionBefore := e.crossings(st, l-1) + e.crossings(st, l)
		old := e.layers[l]
		e.layers[l] = moved
		e.updatePos(st, l)
		if after := e.crossings(st, l-1) + e.crossings(st, l); after < positionBefore {
			items = moved
			improved = true
			continue
		}
		e.layers[l] = old
		e.updatePos(st, l)
	}
	return improved
}

// swapRange returns items with the blocks [a0, a1] and [b0, b1] (adjacent,
// a first) exchanged.
func swapRange(items []int, a0, a1, b0, b1 int) []int {
	out := make([]int, 0, len(items))
	out = append(out, items[:a0]...)
	out = append(out, items[b0:b1+1]...)
	out = append(out, items[a0:a1+1]...)
	out = append(out, items[b1+1:]...)
	return out
}

package viz

// Horizontal coordinates for the layered layout (step 5 of layout.go).
//
// Every node has a variable (its centre) and every group box two (its
// left and right borders, shared by all the layers the box crosses).
// Neighbours in a layer give separation constraints x_b ≥ x_a + gap, so
// the constraints form a DAG (the ordering phase keeps boxes in one order
// in every layer). The leftmost solution is the narrowest drawing; from
// there, each round asks every node to move to the mean of its neighbours
// in the adjacent layers and projects those wishes back onto the
// constraints with the block-merging step of VPSC (Dwyer, Marriott and
// Stuckey, "Fast node overlap removal", 2005), keeping a round only while
// the drawing stays within the page.

import (
	"math"
	"slices"
)

type vpscVar struct {
	desired, weight float64
	offset          float64
	vpscBlock       *vpscBlock
	in              []*vpscConstraint
}

type vpscConstraint struct {
	l, r *vpscVar
	gap  float64
}

type vpscBlock struct {
	vars          []*vpscVar
	posn          float64
	wposn, weight float64
}

func (v *vpscVar) pos() float64 { return v.vpscBlock.posn + v.offset }

// vpscSolver projects desired positions onto separation constraints.
type vpscSolver struct {
	vars  []*vpscVar
	cons  []*vpscConstraint
	order []int // variables in topological order of the constraints
}

func newVPSCSolver(n int, cons map[[2]int]float64) *vpscSolver {
	s := &vpscSolver{vars: make([]*vpscVar, n)}
	for i := range s.vars {
		s.vars[i] = &vpscVar{weight: 1}
	}
	keys := make([][2]int, 0, len(cons))
	for k := range cons {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	indeg := make([]int, n)
	outs := make([][]int, n)
	for _, k := range keys {
		c := &vpscConstraint{l: s.vars[k[0]], r: s.vars[k[1]], gap: cons[k]}
		s.cons = append(s.cons, c)
		c.r.in = append(c.r.in, c)
		indeg[k[1]]++
		outs[k[0]] = append(outs[k[0]], k[1])
	}
	var queue []int
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		s.order = append(s.order, v)
		for _, w := range outs[v] {
			if indeg[w]--; indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	if len(s.order) < n { // a cycle: cannot happen for orders built by buildLayer
		placed := make([]bool, n)
		for _, v := range s.order {
			placed[v] = true
		}
		for v := range n {
			if !placed[v] {
				s.order = append(s.order, v)
			}
		}
	}
	return s
}

// leftmost returns the narrowest solution: each variable as far left as
// its constraints allow, starting from 0.
func (s *vpscSolver) leftmost() []float64 {
	x := make([]float64, len(s.vars))
	idx := map[*vpscVar]int{}
	for i, v := range s.vars {
		idx[v] = i
	}
	for _, i := range s.order {
		for _, c := range s.vars[i].in {
			x[i] = max(x[i], x[idx[c.l]]+c.gap)
		}
	}
	return x
}

// project returns positions satisfying every constraint and close to the
// desired ones (weighted least squares, approximately).
func (s *vpscSolver) project() []float64 {
	for _, v := range s.vars {
		b := &vpscBlock{vars: []*vpscVar{v}, wposn: v.weight * v.desired, weight: v.weight}
		b.posn = b.wposn / b.weight
		v.vpscBlock, v.offset = b, 0
	}
	for _, i := range s.order {
		s.mergeLeft(s.vars[i].vpscBlock)
	}
	x := make([]float64, len(s.vars))
	idx := map[*vpscVar]int{}
	for i, v := range s.vars {
		idx[v] = i
		x[i] = v.pos()
	}
	// Block merging satisfies the constraints up to rounding; make sure.
	for _, i := range s.order {
		for _, c := range s.vars[i].in {
			x[i] = max(x[i], x[idx[c.l]]+c.gap)
		}
	}
	return x
}

// mergeLeft merges b with the blocks to its left whose constraints it
// violates, until it violates none.
func (s *vpscSolver) mergeLeft(b *vpscBlock) {
	for {
		var worst *vpscConstraint
		least := -1e-9
		for _, v := range b.vars {
			for _, c := range v.in {
				if c.l.vpscBlock == b {
					continue
				}
				if sl := c.r.pos() - c.l.pos() - c.gap; sl < least {
					worst, least = c, sl
				}
			}
		}
		if worst == nil {
			return
		}
		bl := worst.l.vpscBlock
		dist := worst.l.offset + worst.gap - worst.r.offset
		if len(bl.vars) >= len(b.vars) {
			vpscMerge(bl, b, dist)
			b = bl
		} else {
			vpscMerge(b, bl, -dist)
		}
	}
}

// vpscMerge moves src's variables into dst, placing them dist further right
// (relative to dst's frame) than their offsets in src.
func vpscMerge(dst, src *vpscBlock, dist float64) {
	for _, v := range src.vars {
		v.offset += dist
		v.vpscBlock = dst
	}
	dst.vars = append(dst.vars, src.vars...)
	dst.wposn += src.wposn - dist*src.weight
	dst.weight += src.weight
	dst.posn = dst.wposn / dst.weight
}

// separation returns the minimum distance between the reference points
// of consecutive layer items a and b.
func (e *engine) separation(a, b int) float64 {
	var right, left float64
	if a >= 0 {
		right = e.right[a]
	}
	if b >= 0 {
		left = e.left[b]
	}
	_, aLeft := borderGroup(a)
	_, bLeft := borderGroup(b)
	switch {
	case (a < 0 && aLeft) || (b < 0 && !bLeft):
		// inside a box: from its left border, or to its right border
		return right + left + groupPadX
	case a < 0 || b < 0:
		return right + left + groupSep
	case a >= e.nReal || b >= e.nReal:
		return right + left + dummySep
	}
	return right + left + nodeSep
}

// placeX assigns horizontal positions to nodes and group borders.
func (e *engine) placeX() {
	ng := len(e.gParent)
	varOf := func(it int) int {
		if it >= 0 {
			return it
		}
		g, isLeft := borderGroup(it)
		if isLeft {
			return e.n + 2*g
		}
		return e.n + 2*g + 1
	}
	nv := e.n + 2*ng
	cons := map[[2]int]float64{}
	add := func(a, b int, gap float64) {
		k := [2]int{a, b}
		if old, ok := cons[k]; !ok || gap > old {
			cons[k] = gap
		}
	}
	for _, items := range e.layers {
		for i := 0; i+1 < len(items); i++ {
			add(varOf(items[i]), varOf(items[i+1]), e.separation(items[i], items[i+1]))
		}
	}
	for g := 1; g < ng; g++ {
		if e.gMin[g] <= e.gMax[g] {
			add(varOf(leftBorder(g)), varOf(rightBorder(g)), e.in.groups[g].titleW+2*groupPadX)
		}
	}
	s := newVPSCSolver(nv, cons)
	x := s.leftmost()
	width := func(x []float64) float64 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, items := range e.layers {
			for _, it := range items {
				v := varOf(it)
				l, r := x[v], x[v]
				if it >= 0 {
					l, r = x[v]-e.left[it], x[v]+e.right[it]
				}
				lo, hi = min(lo, l), max(hi, r)
			}
		}
		return hi - lo + 2*layoutMargin
	}
	// Members of each group, for the borders' wishes.
	members := make([][]int, ng)
	for v := range e.n {
		for g := e.group[v]; g != 0; g = e.gParent[g] {
			members[g] = append(members[g], v)
		}
	}
	for round := 0; round < 40; round++ {
		for v := range e.n {
			cv := s.vars[v]
			sum, w := 0.0, 0.0
			for _, nb := range [][]int{e.up[v], e.down[v]} {
				for _, u := range nb {
					wt := 1.0
					if v >= e.nReal && u >= e.nReal {
						wt = 8 // keep long edges straight
					} else if v >= e.nReal || u >= e.nReal {
						wt = 2
					}
					sum += wt * x[u]
					w += wt
				}
			}
			cv.weight = 1
			if w > 0 {
				cv.desired = sum / w
			} else {
				cv.desired = x[v]
			}
		}
		for g := 1; g < ng; g++ {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range members[g] {
				lo, hi = min(lo, x[v]-e.left[v]), max(hi, x[v]+e.right[v])
			}
			l, r := s.vars[e.n+2*g], s.vars[e.n+2*g+1]
			l.weight, r.weight = 0.2, 0.2
			l.desired, r.desired = x[e.n+2*g], x[e.n+2*g+1]
			if lo <= hi {
				l.desired, r.desired = lo-groupPadX, hi+groupPadX
			}
		}
		nx := s.project()
		if width(nx) > e.maxWidth && width(nx) > width(x) {
			break
		}
		moved := 0.0
		for i := range nx {
			moved = max(moved, math.Abs(nx[i]-x[i]))
		}
		x = nx
		if moved < 0.5 {
			break
		}
	}
	// Shift so the drawing starts at the margin.
	lo := math.Inf(1)
	for _, items := range e.layers {
		for _, it := range items {
			v := varOf(it)
			if it >= 0 {
				lo = min(lo, x[v]-e.left[it])
			} else {
				lo = min(lo, x[v])
			}
		}
	}
	e.x = make([]float64, e.n)
	e.gL, e.gR = make([]float64, ng), make([]float64, ng)
	for v := range e.n {
		e.x[v] = x[v] - lo + layoutMargin
	}
	for g := 1; g < ng; g++ {
		e.gL[g], e.gR[g] = x[e.n+2*g]-lo+layoutMargin, x[e.n+2*g+1]-lo+layoutMargin
	}
}

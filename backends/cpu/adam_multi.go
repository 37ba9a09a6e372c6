package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

var (
	_ backends.MultiAdamFusion = (*Backend)(nil)
	_ backends.EmbeddingFusion = (*Backend)(nil)
)

// adamChunk is the elements per task of AdamSteps: every parameter's
// elements laid end to end are cut into chunks of this size (a task may
// span several small parameters), so that one parallel job covers the
// whole model however its sizes are spread.
const adamChunk = 1 << 15

// AdamSteps implements backends.MultiAdamFusion with AdamStep's element
// loop (adamRange), so the results are AdamStep's bit for bit.
func (b *Backend) AdamSteps(ps, gs, ms, vs []backends.View, hs []backends.AdamHyper) {
	const op = "adam steps"
	n := len(ps)
	if len(gs) != n || len(ms) != n || len(vs) != n || len(hs) != n {
		b.refuse(op, "%d parameters, %d gradients, %d and %d moments, %d hyper-parameters", n, len(gs), len(ms), len(vs), len(hs))
		return
	}
	ends := make([]int, n) // where each parameter's elements end, laid end to end
	total := 0
	for i, p := range ps {
		shape := p.Shape
		names := []string{"parameters", "gradients", "first moments", "second moments"}
		views := []backends.View{p, gs[i], ms[i], vs[i]}
		if !b.checkFused(op, p, views, names, [][]int{shape, shape, shape, shape}) {
			return
		}
		total += p.NumElements()
		ends[i] = total
	}
	b.parallel((total+adamChunk-1)/adamChunk, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			c0, c1 := c*adamChunk, min(total, (c+1)*adamChunk)
			// the parameters overlapping [c0, c1)
			i := 0
			for ends[i] <= c0 {
				i++
			}
			for ; i < n && ends[i]-ps[i].NumElements() < c1; i++ {
				begin := ends[i] - ps[i].NumElements()
				lo, hi := max(c0, begin)-begin, min(c1, ends[i])-begin
				adamInPlace(ps[i], gs[i], ms[i], vs[i], hs[i], lo, hi)
			}
		}
	})
}

// adamInPlace updates elements [lo, hi) of one parameter and its moments
// in place.
func adamInPlace(p, g, m, v backends.View, h backends.AdamHyper, lo, hi int) {
	n := p.NumElements()
	switch p.DType {
	case backends.Float32:
		get := func(v backends.View) []float32 { return buf(v).f32()[v.Offset:][:n] }
		var mi, vi []float32
		if !h.First {
			mi, vi = get(m), get(v)
		}
		adamRange(get(p), get(m), get(v), get(p), get(g), mi, vi, h, lo, hi)
	case backends.Float64:
		get := func(v backends.View) []float64 { return buf(v).f64()[v.Offset:][:n] }
		var mi, vi []float64
		if !h.First {
			mi, vi = get(m), get(v)
		}
		adamRange(get(p), get(m), get(v), get(p), get(g), mi, vi, h, lo, hi)
	}
}

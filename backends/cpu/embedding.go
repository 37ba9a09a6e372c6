package cpu

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// EmbeddingForward implements backends.EmbeddingFusion: a row copy per
// position.
func (b *Backend) EmbeddingForward(out, w, index backends.View) {
	const op = "embedding"
	if len(w.Shape) != 2 {
		b.refuse(op, "weight: shape %v (want [V, D])", w.Shape)
		return
	}
	v, d := w.Shape[0], w.Shape[1]
	m := backends.NumElements(index.Shape)
	if !b.checkFused(op, w, []backends.View{out, w, index}, []string{"out", "weight", "indices"},
		[][]int{{m, d}, {v, d}, {m}}, "indices") {
		return
	}
	idx := buf(index).i64()[index.Offset:][:m]
	for _, i := range idx {
		if i < -int64(v) || i >= int64(v) {
			b.fail(fmt.Errorf("cpu: %s: index %d out of range for %d rows", op, i, v))
			return
		}
	}
	switch w.DType {
	case backends.Float32:
		embeddingRows(b, buf(out).f32()[out.Offset:][:m*d], buf(w).f32()[w.Offset:][:v*d], idx, d)
	case backends.Float64:
		embeddingRows(b, buf(out).f64()[out.Offset:][:m*d], buf(w).f64()[w.Offset:][:v*d], idx, d)
	}
}

func embeddingRows[T float](b *Backend, out, w []T, idx []int64, d int) {
	v := int64(len(w) / max(d, 1))
	b.parallel(len(idx), grainFor(len(idx), d), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			r := idx[p]
			if r < 0 {
				r += v
			}
			copy(out[p*d:(p+1)*d], w[int(r)*d:(int(r)+1)*d])
		}
	})
}

// EmbeddingBackward implements backends.EmbeddingFusion: the positions are
// bucketed by the row they index (a counting sort, in position order), and
// each task writes a range of rows of dw: zeros for a row no position
// picked, else the sum of its positions' rows of dy in position order. So
// every row is written once, by one task, with no scatter over the whole
// table and no dependence on the number of workers.
func (b *Backend) EmbeddingBackward(dw, dy, index backends.View, skip int) {
	const op = "embedding grad"
	if len(dw.Shape) != 2 {
		b.refuse(op, "weight grad: shape %v (want [V, D])", dw.Shape)
		return
	}
	v, d := dw.Shape[0], dw.Shape[1]
	m := backends.NumElements(index.Shape)
	if !b.checkFused(op, dw, []backends.View{dw, dy, index}, []string{"weight grad", "output grad", "indices"},
		[][]int{{v, d}, {m, d}, {m}}, "indices") {
		return
	}
	idx := buf(index).i64()[index.Offset:][:m]
	// count the positions of each row, then list them row by row
	start := make([]int, v+1)
	for _, i := range idx {
		if i < -int64(v) || i >= int64(v) {
			b.fail(fmt.Errorf("cpu: %s: index %d out of range for %d rows", op, i, v))
			return
		}
		if i < 0 {
			i += int64(v)
		}
		start[i+1]++
	}
	for r := range v {
		start[r+1] += start[r]
	}
	order := make([]int, m)
	next := append([]int(nil), start[:v]...)
	for p, i := range idx {
		if i < 0 {
			i += int64(v)
		}
		order[next[i]] = p
		next[i]++
	}
	switch dw.DType {
	case backends.Float32:
		embeddingGrad(b, buf(dw).f32()[dw.Offset:][:v*d], buf(dy).f32()[dy.Offset:][:m*d], start, order, d, skip)
	case backends.Float64:
		embeddingGrad(b, buf(dw).f64()[dw.Offset:][:v*d], buf(dy).f64()[dy.Offset:][:m*d], start, order, d, skip)
	}
}

// embeddingGrad writes the rows of dw: row r is the sum of dy's rows
// order[start[r]:start[r+1]], in that order, or zeros (always for skip).
func embeddingGrad[T float](b *Backend, dw, dy []T, start, order []int, d, skip int) {
	v := len(start) - 1
	b.parallel(v, grainFor(v, d+d*(len(order)+v-1)/max(v, 1)), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := dw[r*d : (r+1)*d]
			ps := order[start[r]:start[r+1]]
			if len(ps) == 0 || r == skip {
				clear(row)
				continue
			}
			clear(row) // 0 + the first row, as the scatter into zeros adds it (−0 becomes +0)
			for _, p := range ps {
				src := dy[p*d : (p+1)*d]
				for j := range row {
					row[j] += src[j]
				}
			}
		}
	})
}

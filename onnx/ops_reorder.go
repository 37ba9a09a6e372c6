package onnx

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/kiln-ml/kiln/tensor"
)

// Data-dependent reorderings (Unique, ReverseSequence) run on the host:
// their output shapes or index patterns depend on the values.

func init() {
	ops["Unique"] = hostOp(unique)
	ops["ReverseSequence"] = hostOp(reverseSequence)
}

func unique(c *call) []*hostTensor {
	x := c.h(0)
	shape := x.shape
	axis := -1
	if c.hasAttr("axis") {
		axis = c.axis(c.attrInt("axis", 0), len(shape))
	}
	// View x as [outer, n, inner] slices along axis (or n scalars).
	outer, n, inner := 1, x.size(), 1
	if axis >= 0 {
		n = shape[axis]
		for _, d := range shape[:axis] {
			outer *= d
		}
		for _, d := range shape[axis+1:] {
			inner *= d
		}
	}
	cmp := func(a, b int) int {
		for o := range outer {
			for i := range inner {
				va, vb := x.at((o*n+a)*inner+i), x.at((o*n+b)*inner+i)
				if va < vb || math.IsNaN(vb) && !math.IsNaN(va) {
					return -1
				}
				if va > vb || math.IsNaN(va) && !math.IsNaN(vb) {
					return 1
				}
			}
		}
		return 0
	}
	var firsts []int // first occurrence of each distinct slice, in order of appearance
	inverse := make([]int64, n)
	counts := []int64{}
	seen := map[string]int{} // a slice's bits → its index in firsts
	key := make([]byte, 0, 8*outer*inner)
	for a := range n {
		key = key[:0]
		for o := range outer {
			for i := range inner {
				k := (o*n+a)*inner + i
				bits := uint64(0)
				if x.f != nil {
					v := x.f[k]
					if v == 0 {
						v = 0 // -0 and +0 are one value
					}
					bits = math.Float64bits(v)
				} else {
					bits = uint64(x.i[k])
				}
				key = binary.LittleEndian.AppendUint64(key, bits)
			}
		}
		found, ok := seen[string(key)]
		if !ok {
			found = -1
		}
		if found < 0 {
			seen[string(key)] = len(firsts)
			found = len(firsts)
			firsts = append(firsts, a)
			counts = append(counts, 0)
		}
		inverse[a] = int64(found)
		counts[found]++
	}
	order := make([]int, len(firsts))
	for u := range order {
		order[u] = u
	}
	if c.attrInt("sorted", 1) != 0 {
		sort.SliceStable(order, func(p, q int) bool { return cmp(firsts[order[p]], firsts[order[q]]) < 0 })
	}
	rank := make([]int64, len(order))
	for r, u := range order {
		rank[u] = int64(r)
	}
	m := len(order)
	yShape := []int{m}
	if axis >= 0 {
		yShape = append([]int{}, shape...)
		yShape[axis] = m
	}
	y := newHost(x.dtype, yShape)
	idx, cnt := make([]int64, m), make([]int64, m)
	for r, u := range order {
		idx[r], cnt[r] = int64(firsts[u]), counts[u]
		for o := range outer {
			for i := range inner {
				src := (o*n+firsts[u])*inner + i
				dst := (o*m+r)*inner + i
				if x.f != nil {
					y.f[dst] = x.f[src]
				} else {
					y.i[dst] = x.i[src]
				}
			}
		}
	}
	inv := make([]int64, n)
	for a := range n {
		inv[a] = rank[inverse[a]]
	}
	return hosts(y, hostInts(idx), hostInts(inv), hostInts(cnt))
}

func reverseSequence(c *call) []*hostTensor {
	x, lens := c.h(0), c.h(1).ints()
	r := len(x.shape)
	if r < 2 {
		c.fail(tensor.ErrShape, "input %v must have rank 2 or more", x.shape)
	}
	ta := c.axis(c.attrInt("time_axis", 0), r)
	ba := c.axis(c.attrInt("batch_axis", 1), r)
	if ta == ba || ta > 1 || ba > 1 || len(lens) != x.shape[ba] {
		c.fail(tensor.ErrArgument, "time_axis %d, batch_axis %d and sequence_lens of %d do not fit input %v", ta, ba, len(lens), x.shape)
	}
	out := &hostTensor{dtype: x.dtype, shape: append([]int{}, x.shape...)}
	if x.f != nil {
		out.f = append([]float64{}, x.f...)
	} else {
		out.i = append([]int64{}, x.i...)
	}
	st := stridesOf(x.shape)
	inner := st[1]
	for b := range x.shape[ba] {
		l := int(lens[b])
		if l < 0 || l > x.shape[ta] {
			c.fail(tensor.ErrArgument, "sequence length %d is out of range [0, %d]", l, x.shape[ta])
		}
		for t := range l {
			src := b*st[ba] + t*st[ta]
			dst := b*st[ba] + (l-1-t)*st[ta]
			for i := range inner {
				if x.f != nil {
					out.f[dst+i] = x.f[src+i]
				} else {
					out.i[dst+i] = x.i[src+i]
				}
			}
		}
	}
	return hosts(out)
}

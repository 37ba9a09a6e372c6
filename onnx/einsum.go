package onnx

import (
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// Einsum runs as a chain of pairwise contractions, each one batched Matmul
// between operands permuted to [batch, free, contracted] and [batch,
// contracted, free]; labels used by one operand only are summed first.
// That covers the common patterns (matrix and batched products, bilinear
// forms, attention's "bhid,bhjd->bhij", transposes, traces over whole axes,
// outer products, ellipses). Repeated labels within one operand (diagonals)
// are not supported.

// einsumOperand is a tensor with one label per dimension.
type einsumOperand struct {
	t      *tensor.Tensor
	labels []rune
}

func einsum(c *call) []*value {
	eq := strings.ReplaceAll(c.attrString("equation", ""), " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(c.in) {
		c.fail(tensor.ErrArgument, "equation %q has %d operands, the node %d inputs", eq, len(terms), len(c.in))
	}
	// Ellipsis dimensions get the labels '0', '1', … aligned from the right.
	ell := 0
	for k, term := range terms {
		explicitLabels := len([]rune(strings.ReplaceAll(term, "...", "")))
		if strings.Contains(term, "...") {
			ell = max(ell, c.t(k).Dims()-explicitLabels)
		}
	}
	ellLabels := func(n int) string {
		var b strings.Builder
		for i := ell - n; i < ell; i++ {
			b.WriteRune(rune('0' + i))
		}
		return b.String()
	}
	var opsList []einsumOperand
	count := map[rune]int{}
	for k, term := range terms {
		t := c.t(k)
		if strings.Contains(term, "...") {
			n := t.Dims() - len([]rune(strings.ReplaceAll(term, "...", "")))
			term = strings.Replace(term, "...", ellLabels(n), 1)
		}
		labels := []rune(term)
		if len(labels) != t.Dims() {
			c.fail(tensor.ErrShape, "operand %d %v does not fit %q", k, t.Shape(), terms[k])
		}
		seen := map[rune]bool{}
		for _, l := range labels {
			if seen[l] {
				c.fail(tensor.ErrArgument, "label %q repeats in operand %d (diagonals are not supported)", l, k)
			}
			seen[l] = true
			count[l]++
		}
		opsList = append(opsList, einsumOperand{t: t, labels: labels})
	}
	var out []rune
	if explicit {
		out = []rune(strings.Replace(rhs, "...", ellLabels(ell), 1))
	} else {
		var once []rune
		for l, n := range count {
			if n == 1 {
				once = append(once, l)
			}
		}
		sort.Slice(once, func(i, j int) bool { return once[i] < once[j] })
		out = once
	}
	// Size of each label, for broadcasting size-1 dimensions.
	size := map[rune]int{}
	for _, o := range opsList {
		for i, l := range o.labels {
			size[l] = max(size[l], o.t.Dim(i))
		}
	}
	needed := func(rest []einsumOperand) map[rune]bool {
		keep := map[rune]bool{}
		for _, l := range out {
			keep[l] = true
		}
		for _, o := range rest {
			for _, l := range o.labels {
				keep[l] = true
			}
		}
		return keep
	}
	acc := einsumSum(opsList[0], needed(opsList[1:]))
	for k := 1; k < len(opsList); k++ {
		keep := needed(opsList[k+1:])
		acc = einsumPair(c, acc, opsList[k], keep, size)
	}
	acc = einsumSum(acc, needed(nil))
	perm := make([]int, len(out))
	for i, l := range out {
		j := indexOf(acc.labels, l)
		if j < 0 {
			c.fail(tensor.ErrArgument, "output label %q appears in no operand", l)
		}
		perm[i] = j
	}
	if len(perm) == 0 {
		return outs(acc.t.Reshape())
	}
	return outs(acc.t.Permute(perm...).Contiguous())
}

func indexOf(ls []rune, l rune) int {
	for i, x := range ls {
		if x == l {
			return i
		}
	}
	return -1
}

// einsumSum sums o over the labels keep does not hold.
func einsumSum(o einsumOperand, keep map[rune]bool) einsumOperand {
	var axes []int
	var labels []rune
	for i, l := range o.labels {
		if keep[l] {
			labels = append(labels, l)
		} else {
			axes = append(axes, i)
		}
	}
	if len(axes) == 0 {
		return o
	}
	return einsumOperand{t: o.t.Sum(axes...), labels: labels}
}

// einsumPair contracts a with b, keeping the labels in keep.
func einsumPair(c *call, a, b einsumOperand, keep map[rune]bool, size map[rune]int) einsumOperand {
	inB := map[rune]bool{}
	for _, l := range b.labels {
		inB[l] = true
	}
	inA := map[rune]bool{}
	for _, l := range a.labels {
		inA[l] = true
	}
	// Labels of one operand only that nothing needs are summed away.
	ka, kb := map[rune]bool{}, map[rune]bool{}
	for l := range keep {
		ka[l], kb[l] = true, true
	}
	for l := range inB {
		ka[l] = true
	}
	for l := range inA {
		kb[l] = true
	}
	a, b = einsumSum(a, ka), einsumSum(b, kb)
	var batch, con, aFree, bFree []rune
	for _, l := range a.labels {
		switch {
		case inB[l] && keep[l]:
			batch = append(batch, l)
		case inB[l]:
			con = append(con, l)
		default:
			aFree = append(aFree, l)
		}
	}
	for _, l := range b.labels {
		if !inA[l] {
			bFree = append(bFree, l)
		}
	}
	arrange := func(o einsumOperand, groups ...[]rune) *tensor.Tensor {
		var perm, shape []int
		for _, g := range groups {
			for _, l := range g {
				perm = append(perm, indexOf(o.labels, l))
				shape = append(shape, size[l])
			}
		}
		t := o.t.Permute(perm...)
		if !slicesEqual(t.Shape(), shape) {
			t = t.Expand(shape...)
		}
		dims := make([]int, 0, 3)
		for _, g := range groups {
			n := 1
			for _, l := range g {
				n *= size[l]
			}
			dims = append(dims, n)
		}
		return t.Reshape(dims...)
	}
	at := arrange(a, batch, aFree, con)
	bt := arrange(b, batch, con, bFree)
	y := at.Matmul(bt)
	var shape []int
	labels := append(append(append([]rune{}, batch...), aFree...), bFree...)
	for _, l := range labels {
		shape = append(shape, size[l])
	}
	if backends.NumElements(shape) != y.NumElements() {
		c.fail(tensor.ErrShape, "einsum contraction produced %v, expected %v", y.Shape(), shape)
	}
	return einsumOperand{t: y.Reshape(shape...), labels: labels}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

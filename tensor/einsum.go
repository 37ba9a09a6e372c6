package tensor

import (
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Einsum is a chain of pairwise contractions, each one batched Matmul of
// operands permuted to [batch, free, contracted] and [batch, contracted,
// free]; labels that one operand alone uses and nothing later needs are
// summed first, and a label repeated within one operand takes its Diagonal.
// Every step is a recorded op, so gradients need no rule of their own.

type einsumTerm struct {
	t      *Tensor
	labels []rune
	shape  []int
}

// Einsum evaluates the Einstein summation equation over operands, as
// torch.einsum: "ij,jk->ik" is a matrix product, "bij->bji" a transpose,
// "ii->i" a diagonal, "ii" a trace, "i,j->ij" an outer product; "..."
// stands for broadcast dimensions, and without "->" the output holds the
// labels used once, in alphabetical order. Size-1 dimensions broadcast
// against the same label elsewhere. Operands are promoted to a common
// dtype by Matmul and Mul. It is composed of Diagonal, Sum, Permute,
// Expand, Reshape and Matmul, so gradients flow through them. It fails
// with ErrArgument for a malformed equation (wrong number of terms, labels
// that are not letters, an output label used by no operand or repeated)
// and ErrShape when a term does not fit its operand's rank or one label
// has two sizes other than 1.
func Einsum(equation string, operands ...*Tensor) *Tensor {
	const op = "Einsum"
	for _, o := range operands {
		o.live(op)
	}
	if len(operands) == 0 {
		fail(op, ErrArgument, "equation %q has no operands", equation)
	}
	eq := strings.ReplaceAll(equation, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(operands) {
		fail(op, ErrArgument, "equation %q has %d terms for %d operands", equation, len(terms), len(operands))
	}
	// Ellipsis dimensions get private labels, aligned from the right.
	ell := 0
	for k, term := range terms {
		if strings.Contains(term, "...") {
			ell = max(ell, len(operands[k].shape)-len([]rune(strings.Replace(term, "...", "", 1))))
		}
	}
	ellLabels := func(n int) string {
		var b strings.Builder
		for i := ell - n; i < ell; i++ {
			b.WriteRune(rune(0x10000 + i))
		}
		return b.String()
	}
	checkLabels := func(s string, where string) {
		for _, l := range strings.Replace(s, "...", "", 1) {
			if !unicode.IsLetter(l) || l > unicode.MaxASCII {
				fail(op, ErrArgument, "equation %q: %s has %q, which is not a letter", equation, where, l)
			}
		}
	}
	count := map[rune]int{}
	size := map[rune]int{}
	var ts []einsumTerm
	for k, term := range terms {
		checkLabels(term, "term "+term)
		x := operands[k]
		r := len(x.shape)
		if strings.Contains(term, "...") {
			n := r - len([]rune(strings.Replace(term, "...", "", 1)))
			if n < 0 {
				fail(op, ErrShape, "term %q does not fit operand %d of shape %s", term, k, shapeString(x.shape))
			}
			term = strings.Replace(term, "...", ellLabels(n), 1)
		}
		labels := []rune(term)
		for _, l := range labels {
			count[l]++
		}
		if len(labels) != r {
			fail(op, ErrShape, "term %q has %d labels for operand %d of shape %s", terms[k], len(labels), k, shapeString(x.shape))
		}
		shape := append([]int{}, x.shape...)
		// A label repeated within a term takes the diagonal.
		for i := 0; i < len(labels); i++ {
			for j := i + 1; j < len(labels); j++ {
				if labels[j] != labels[i] {
					continue
				}
				if shape[i] != shape[j] {
					fail(op, ErrShape, "label %q of operand %d has sizes %d and %d", labels[i], k, shape[i], shape[j])
				}
				x = x.Diagonal(0, i, j)
				// Diagonal moves the pair to the end: relabel
				l := labels[i]
				var nl []rune
				var ns []int
				for d := range labels {
					if d != i && d != j {
						nl = append(nl, labels[d])
						ns = append(ns, shape[d])
					}
				}
				labels, shape = append(nl, l), append(ns, shape[i])
				i = -1 // rescan the relabelled term
				break
			}
		}
		for i, l := range labels {
			if s, ok := size[l]; ok && s != shape[i] && s != 1 && shape[i] != 1 {
				fail(op, ErrShape, "label %q has sizes %d and %d", l, s, shape[i])
			}
			if shape[i] != 1 || size[l] == 0 {
				size[l] = shape[i]
			}
		}
		ts = append(ts, einsumTerm{t: x, labels: labels, shape: shape})
	}
	var out []rune
	if explicit {
		checkLabels(rhs, "the output")
		out = []rune(strings.Replace(rhs, "...", ellLabels(ell), 1))
		seen := map[rune]bool{}
		for _, l := range out {
			if seen[l] {
				fail(op, ErrArgument, "equation %q: output label %q repeats", equation, l)
			}
			if count[l] == 0 {
				fail(op, ErrArgument, "equation %q: output label %q is used by no operand", equation, l)
			}
			seen[l] = true
		}
	} else {
		for l, n := range count {
			if n == 1 && l < 0x10000 {
				out = append(out, l)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		out = append([]rune(ellLabels(ell)), out...)
	}
	needed := func(rest []einsumTerm) map[rune]bool {
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
	acc := einsumSumAway(ts[0], needed(ts[1:]))
	for k := 1; k < len(ts); k++ {
		acc = einsumContract(acc, ts[k], needed(ts[k+1:]), size)
	}
	acc = einsumSumAway(acc, needed(nil))
	perm := make([]int, len(out))
	shape := make([]int, len(out))
	for i, l := range out {
		perm[i] = slices.Index(acc.labels, l)
		shape[i] = size[l]
	}
	res := acc.t
	if len(perm) > 0 && !slices.Equal(perm, einsumIdentity(len(perm))) {
		res = res.Permute(perm...)
	}
	if !sameShape(res.shape, shape) {
		res = res.Expand(shape...)
	}
	if res == operands[0] {
		res = res.Reshape(res.shape...)
	}
	return res
}

// einsumSumAway sums o over the labels keep does not hold.
func einsumSumAway(o einsumTerm, keep map[rune]bool) einsumTerm {
	var axes, shape []int
	var labels []rune
	for i, l := range o.labels {
		if keep[l] {
			labels = append(labels, l)
			shape = append(shape, o.shape[i])
		} else {
			axes = append(axes, i)
		}
	}
	if len(axes) == 0 {
		return o
	}
	return einsumTerm{t: o.t.Sum(axes...), labels: labels, shape: shape}
}

// einsumContract contracts a with b, keeping the labels in keep.
func einsumContract(a, b einsumTerm, keep map[rune]bool, size map[rune]int) einsumTerm {
	inA, inB := map[rune]bool{}, map[rune]bool{}
	for _, l := range a.labels {
		inA[l] = true
	}
	for _, l := range b.labels {
		inB[l] = true
	}
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
	a, b = einsumSumAway(a, ka), einsumSumAway(b, kb)
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
	arrange := func(o einsumTerm, groups ...[]rune) *Tensor {
		var perm, shape, have []int
		for _, g := range groups {
			for _, l := range g {
				i := slices.Index(o.labels, l)
				perm = append(perm, i)
				shape = append(shape, size[l])
				have = append(have, o.shape[i])
			}
		}
		t := o.t
		if !slices.Equal(perm, einsumIdentity(len(perm))) {
			t = t.Permute(perm...)
		}
		if !slices.Equal(have, shape) {
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
	y := arrange(a, batch, aFree, con).Matmul(arrange(b, batch, con, bFree))
	labels := append(append(append([]rune{}, batch...), aFree...), bFree...)
	shape := make([]int, len(labels))
	for i, l := range labels {
		shape[i] = size[l]
	}
	return einsumTerm{t: y.Reshape(shape...), labels: labels, shape: shape}
}

func einsumIdentity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

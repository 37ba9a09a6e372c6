package onnx

import (
	"slices"
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
//
// The plan is written once over einsumOps: the runtime applies it to
// tensors, and Generate to Go expressions, so both follow the same steps.

// einsumOps are the operations an einsum plan applies to values of type T.
type einsumOps[T any] struct {
	sum     func(x T, axes []int) T
	permute func(x T, perm []int) T
	expand  func(x T, shape []int) T
	reshape func(x T, shape []int) T
	matmul  func(a, b T) T
	// diag takes the diagonal of x over dimensions i < j (equal sizes),
	// dropping j; nil where diagonals are not supported.
	diag func(x T, shape []int, i, j int) T
}

// einsumOperand is a value with one label per dimension.
type einsumOperand[T any] struct {
	t      T
	labels []rune
	shape  []int
}

func einsum(c *call) []*value {
	xs := make([]*tensor.Tensor, len(c.in))
	shapes := make([][]int, len(c.in))
	for k := range c.in {
		xs[k] = c.t(k)
		shapes[k] = xs[k].Shape()
	}
	y := einsumPlan(c, xs, shapes, einsumOps[*tensor.Tensor]{
		sum:     func(x *tensor.Tensor, axes []int) *tensor.Tensor { return x.Sum(axes...) },
		permute: func(x *tensor.Tensor, perm []int) *tensor.Tensor { return x.Permute(perm...).Contiguous() },
		expand:  func(x *tensor.Tensor, shape []int) *tensor.Tensor { return x.Expand(shape...) },
		reshape: func(x *tensor.Tensor, shape []int) *tensor.Tensor { return x.Reshape(shape...) },
		matmul:  func(a, b *tensor.Tensor) *tensor.Tensor { return a.Matmul(b) },
		diag: func(x *tensor.Tensor, shape []int, i, j int) *tensor.Tensor {
			// Mask with the identity over (i, j), then sum j away.
			n := shape[i]
			mask := make([]int, len(shape))
			for d := range mask {
				mask[d] = 1
			}
			mask[i], mask[j] = n, n
			eye := newHost(x.DType(), mask)
			for q := range n {
				eye.set(q*n+q, 1)
			}
			return x.Mul(eye.device(c.dev.Inner())).Sum(j)
		},
	})
	return outs(y)
}

// einsumPlan computes the node's equation over operands xs of the given
// shapes with f.
func einsumPlan[T any](c *call, xs []T, shapes [][]int, f einsumOps[T]) T {
	eq := strings.ReplaceAll(c.attrString("equation", ""), " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(xs) {
		c.fail(tensor.ErrArgument, "equation %q has %d operands, the node %d inputs", eq, len(terms), len(xs))
	}
	// Ellipsis dimensions get the labels '0', '1', … aligned from the right.
	ell := 0
	for k, term := range terms {
		explicitLabels := len([]rune(strings.ReplaceAll(term, "...", "")))
		if strings.Contains(term, "...") {
			ell = max(ell, len(shapes[k])-explicitLabels)
		}
	}
	ellLabels := func(n int) string {
		var b strings.Builder
		for i := ell - n; i < ell; i++ {
			b.WriteRune(rune('0' + i))
		}
		return b.String()
	}
	var opsList []einsumOperand[T]
	count := map[rune]int{}
	for k, term := range terms {
		r := len(shapes[k])
		if strings.Contains(term, "...") {
			n := r - len([]rune(strings.ReplaceAll(term, "...", "")))
			term = strings.Replace(term, "...", ellLabels(n), 1)
		}
		labels := []rune(term)
		if len(labels) != r {
			c.fail(tensor.ErrShape, "operand %d %v does not fit %q", k, shapes[k], terms[k])
		}
		shape := append([]int{}, shapes[k]...)
		if f.diag != nil {
			// A label repeated within an operand takes its diagonal.
			for i := 0; i < len(labels); i++ {
				for j := i + 1; j < len(labels); j++ {
					if labels[j] != labels[i] {
						continue
					}
					if shape[i] != shape[j] {
						c.fail(tensor.ErrShape, "label %q of operand %d has sizes %d and %d", labels[i], k, shape[i], shape[j])
					}
					xs[k] = f.diag(xs[k], shape, i, j)
					labels = append(labels[:j:j], labels[j+1:]...)
					shape = append(shape[:j:j], shape[j+1:]...)
					j--
				}
			}
			shapes[k] = shape
		}
		seen := map[rune]bool{}
		for _, l := range labels {
			if seen[l] {
				c.fail(tensor.ErrArgument, "label %q repeats in operand %d (diagonals are not supported)", l, k)
			}
			seen[l] = true
			count[l]++
		}
		opsList = append(opsList, einsumOperand[T]{t: xs[k], labels: labels, shape: shapes[k]})
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
			size[l] = max(size[l], o.shape[i])
		}
	}
	needed := func(rest []einsumOperand[T]) map[rune]bool {
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
	acc := einsumSum(f, opsList[0], needed(opsList[1:]))
	for k := 1; k < len(opsList); k++ {
		keep := needed(opsList[k+1:])
		acc = einsumPair(c, f, acc, opsList[k], keep, size)
	}
	acc = einsumSum(f, acc, needed(nil))
	perm := make([]int, len(out))
	for i, l := range out {
		j := indexOf(acc.labels, l)
		if j < 0 {
			c.fail(tensor.ErrArgument, "output label %q appears in no operand", l)
		}
		perm[i] = j
	}
	if len(perm) == 0 {
		return f.reshape(acc.t, []int{})
	}
	return f.permute(acc.t, perm)
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
func einsumSum[T any](f einsumOps[T], o einsumOperand[T], keep map[rune]bool) einsumOperand[T] {
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
	return einsumOperand[T]{t: f.sum(o.t, axes), labels: labels, shape: shape}
}

// einsumPair contracts a with b, keeping the labels in keep.
func einsumPair[T any](c *call, f einsumOps[T], a, b einsumOperand[T], keep map[rune]bool, size map[rune]int) einsumOperand[T] {
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
	a, b = einsumSum(f, a, ka), einsumSum(f, b, kb)
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
	arrange := func(o einsumOperand[T], groups ...[]rune) T {
		var perm, shape, have []int
		for _, g := range groups {
			for _, l := range g {
				i := indexOf(o.labels, l)
				perm = append(perm, i)
				shape = append(shape, size[l])
				have = append(have, o.shape[i])
			}
		}
		t := o.t
		if !slices.Equal(perm, identityPerm(len(perm))) {
			t = f.permute(t, perm)
		}
		if !slices.Equal(have, shape) {
			t = f.expand(t, shape)
		}
		dims := make([]int, 0, 3)
		for _, g := range groups {
			n := 1
			for _, l := range g {
				n *= size[l]
			}
			dims = append(dims, n)
		}
		return f.reshape(t, dims)
	}
	at := arrange(a, batch, aFree, con)
	bt := arrange(b, batch, con, bFree)
	y := f.matmul(at, bt)
	var shape []int
	labels := append(append(append([]rune{}, batch...), aFree...), bFree...)
	for _, l := range labels {
		shape = append(shape, size[l])
	}
	n := 1
	for _, g := range [][]rune{batch, aFree, bFree} {
		for _, l := range g {
			n *= size[l]
		}
	}
	if backends.NumElements(shape) != n {
		c.fail(tensor.ErrShape, "einsum contraction produced %d elements, expected %v", n, shape)
	}
	return einsumOperand[T]{t: f.reshape(y, shape), labels: labels, shape: shape}
}

func identityPerm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

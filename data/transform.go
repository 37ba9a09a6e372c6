package data

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kiln-ml/kiln/tensor"
)

// MapFunc transforms one item; i is the item's index in the mapped data set.
type MapFunc func(i int, it Item) (Item, error)

type mapped struct {
	ds Dataset
	fn MapFunc
}

// Map returns a Dataset whose item i is fn(i, ds.Get(i)), computed lazily
// on every Get (so random augmentations may differ between epochs; derive
// their randomness from i for reproducibility). An error from ds or fn is
// returned by Get, wrapped with the index. fn must be safe for concurrent
// use. From yaegi cells, pass a function declared at top level rather than
// a closure created in a loop (yaegi shares loop variables between such
// closures).
func Map(ds Dataset, fn MapFunc) Dataset { return &mapped{ds, fn} }

func (m *mapped) Len() int { return m.ds.Len() }

func (m *mapped) Get(i int) (Item, error) {
	it, err := m.ds.Get(i)
	if err != nil {
		return Item{}, err
	}
	out, err := m.fn(i, it)
	if err != nil {
		return Item{}, fmt.Errorf("data: Map: item %d: %w", i, err)
	}
	return out, nil
}

// Indexed is a Dataset that serves items of another data set through a
// list of indices: item i is Base.Get(Indices[i]). Subset, Shuffle, Split,
// Partial and Sample return one, so callers can read the indices.
type Indexed struct {
	Base    Dataset
	Indices []int
}

// Len returns the number of indices.
func (s *Indexed) Len() int { return len(s.Indices) }

// Get returns Base's item Indices[i], or an error wrapping ErrIndex when i
// is out of range.
func (s *Indexed) Get(i int) (Item, error) {
	if i < 0 || i >= len(s.Indices) {
		return Item{}, indexErr("Subset.Get", i, len(s.Indices))
	}
	return s.Base.Get(s.Indices[i])
}

// Subset returns the items of ds at indices, in that order (repetitions
// allowed). It returns an error wrapping ErrIndex naming the first index
// out of range.
func Subset(ds Dataset, indices []int) (*Indexed, error) {
	n := ds.Len()
	for k, i := range indices {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("data: Subset: indices[%d] = %d out of range [0, %d): %w", k, i, n, ErrIndex)
		}
	}
	return &Indexed{ds, append([]int(nil), indices...)}, nil
}

// rng returns the generator every seeded function of the package uses:
// PCG keyed by (seed, stream), so results depend on nothing else.
func rng(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// Permutation returns the permutation of [0, n) that Shuffle(ds, seed)
// applies to a data set of n items.
func Permutation(n int, seed uint64) []int { return rng(seed, 0x5eed).Perm(n) }

// Shuffle returns ds in a fixed random order given by seed (item i is
// ds's item Permutation(ds.Len(), seed)[i]).
func Shuffle(ds Dataset, seed uint64) *Indexed {
	return &Indexed{ds, Permutation(ds.Len(), seed)}
}

// Partial returns items [start, end) of ds. It returns an error wrapping
// ErrIndex unless 0 ≤ start ≤ end ≤ ds.Len().
func Partial(ds Dataset, start, end int) (*Indexed, error) {
	if start < 0 || end < start || end > ds.Len() {
		return nil, fmt.Errorf("data: Partial: range [%d, %d) is not within [0, %d]: %w", start, end, ds.Len(), ErrIndex)
	}
	idx := make([]int, end-start)
	for k := range idx {
		idx[k] = start + k
	}
	return &Indexed{ds, idx}, nil
}

// Split shuffles ds with seed and cuts it into len(fractions) disjoint
// parts of sizes proportional to fractions (which must be non-negative
// and sum to 1 within 1e-6); rounding leftovers go to the last part, so
// every item lands in exactly one part. A seed of 0 still shuffles (use
// Partial for contiguous parts). It returns an error for bad fractions.
func Split(ds Dataset, fractions []float64, seed uint64) ([]Dataset, error) {
	if len(fractions) == 0 {
		return nil, errors.New("data: Split: no fractions")
	}
	sum := 0.0
	for i, f := range fractions {
		if f < 0 || math.IsNaN(f) {
			return nil, fmt.Errorf("data: Split: fractions[%d] = %g is negative", i, f)
		}
		sum += f
	}
	if math.Abs(sum-1) > 1e-6 {
		return nil, fmt.Errorf("data: Split: fractions %v sum to %g, not 1", fractions, sum)
	}
	perm := Permutation(ds.Len(), seed)
	parts := make([]Dataset, len(fractions))
	start, acc := 0, 0.0
	for i, f := range fractions {
		acc += f
		end := int(math.Round(acc * float64(len(perm))))
		if i == len(fractions)-1 || end > len(perm) {
			end = len(perm)
		}
		parts[i] = &Indexed{ds, perm[start:end:end]}
		start = end
	}
	return parts, nil
}

// Sample draws n items of ds at random with seed, with replacement (items
// may repeat) or without (n must not exceed ds.Len()). It returns an error
// for a negative n, an empty ds, or n > ds.Len() without replacement.
func Sample(ds Dataset, n int, replace bool, seed uint64) (*Indexed, error) {
	size := ds.Len()
	switch {
	case n < 0:
		return nil, fmt.Errorf("data: Sample: n = %d is negative", n)
	case !replace && n > size:
		return nil, fmt.Errorf("data: Sample: %d items without replacement from a data set of %d", n, size)
	case replace && n > 0 && size == 0:
		return nil, errors.New("data: Sample: sampling from an empty data set")
	}
	r := rng(seed, 0x5a3e)
	idx := make([]int, n)
	if replace {
		for k := range idx {
			idx[k] = r.IntN(size)
		}
	} else {
		copy(idx, r.Perm(size)[:n])
	}
	return &Indexed{ds, idx}, nil
}

type concat struct {
	parts  []Dataset
	starts []int // starts[k] is the index of parts[k]'s first item; last entry is the total
}

// Concat returns the items of all parts, one data set after another.
func Concat(parts ...Dataset) Dataset {
	c := &concat{parts: parts, starts: make([]int, len(parts)+1)}
	for k, p := range parts {
		c.starts[k+1] = c.starts[k] + p.Len()
	}
	return c
}

func (c *concat) Len() int { return c.starts[len(c.parts)] }

func (c *concat) Get(i int) (Item, error) {
	if i < 0 || i >= c.Len() {
		return Item{}, indexErr("Concat.Get", i, c.Len())
	}
	k := 0
	for c.starts[k+1] <= i {
		k++
	}
	return c.parts[k].Get(i - c.starts[k])
}

type window struct {
	ds         Dataset
	size, step int
}

// Window returns the sliding windows of size consecutive items of ds,
// starting every step items (windows that would run past the end are
// dropped). Window j covers ds's items j·step … j·step+size−1: its X
// stacks theirs, shaped [size, item shape...], and its Label and Target
// are those of the window's last item (for sequence-to-one models; Map the
// window to change that). Get returns an error when the items' shapes
// differ. It panics with ErrArgument (a *tensor.Error) when size or step
// is below 1.
func Window(ds Dataset, size, step int) Dataset {
	if size < 1 || step < 1 {
		panic(&tensor.Error{Op: "data.Window", Msg: fmt.Sprintf("size %d and step %d must be at least 1", size, step),
			Err: tensor.ErrArgument})
	}
	return &window{ds, size, step}
}

func (w *window) Len() int {
	n := w.ds.Len()
	if n < w.size {
		return 0
	}
	return (n-w.size)/w.step + 1
}

func (w *window) Get(j int) (Item, error) {
	if j < 0 || j >= w.Len() {
		return Item{}, indexErr("Window.Get", j, w.Len())
	}
	var out Item
	var shape []int
	for k := range w.size {
		i := j*w.step + k
		it, err := w.ds.Get(i)
		if err != nil {
			return Item{}, err
		}
		if k == 0 {
			shape = it.XShape()
			out.X = make([]float32, 0, w.size*len(it.X))
		} else if !sameShape(shape, it.XShape()) {
			return Item{}, fmt.Errorf("data: Window %d: item %d has shape %v, item %d has %v", j, j*w.step, shape, i,
				it.XShape())
		}
		out.X = append(out.X, it.X...)
		out.Label, out.Target = it.Label, it.Target
	}
	out.Shape = append([]int{w.size}, shape...)
	return out, nil
}

func sameShape(a, b []int) bool {
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

package data_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/tensor"
)

// numbers returns a data set of n items; item i has X = [i, 10i] and Label i.
func numbers(n int) *data.InMemory {
	items := make([]data.Item, n)
	for i := range items {
		items[i] = data.Item{X: []float32{float32(i), float32(10 * i)}, Label: int64(i)}
	}
	return data.NewInMemory(items)
}

// labels reads every item of ds and returns their labels.
func labels(t *testing.T, ds data.Dataset) []int {
	t.Helper()
	out := make([]int, ds.Len())
	for i := range out {
		it, err := ds.Get(i)
		if err != nil {
			t.Fatalf("Get(%d): %v", i, err)
		}
		out[i] = int(it.Label)
	}
	return out
}

func isPermutation(p []int, n int) bool {
	s := slices.Clone(p)
	slices.Sort(s)
	for i := range s {
		if s[i] != i {
			return false
		}
	}
	return len(s) == n
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestTransformIndices(t *testing.T) {
	ds := numbers(10)
	shuffled := data.Shuffle(ds, 7)
	for _, tc := range []struct {
		name string
		ds   data.Dataset
		want []int
	}{
		{"Subset keeps order and repeats", must(data.Subset(ds, []int{3, 1, 3})), []int{3, 1, 3}},
		{"Partial is a contiguous range", must(data.Partial(ds, 2, 5)), []int{2, 3, 4}},
		{"Partial may be empty", must(data.Partial(ds, 4, 4)), []int{}},
		{"Shuffle applies Permutation", shuffled, data.Permutation(10, 7)},
		{"Concat appends", data.Concat(must(data.Partial(ds, 8, 10)), numbers(0), must(data.Partial(ds, 0, 2))), []int{8, 9, 0, 1}},
		{"Map sees the index", data.Map(ds, func(i int, it data.Item) (data.Item, error) {
			it.Label = it.Label*100 + int64(i)
			return it, nil
		}), []int{0, 101, 202, 303, 404, 505, 606, 707, 808, 909}},
		{"Window labels are the last item's", data.Window(ds, 3, 2), []int{2, 4, 6, 8}},
		{"Window longer than the data set is empty", data.Window(numbers(2), 3, 1), []int{}},
		{"Subset of a Shuffle composes", must(data.Subset(shuffled, []int{0, 9})), []int{shuffled.Indices[0], shuffled.Indices[9]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := labels(t, tc.ds); !slices.Equal(got, tc.want) {
				t.Errorf("labels %v, want %v", got, tc.want)
			}
		})
	}
	if !isPermutation(shuffled.Indices, 10) || slices.Equal(shuffled.Indices, labels(t, ds)) {
		t.Errorf("Shuffle gave %v, want a non-identity permutation", shuffled.Indices)
	}
	if !slices.Equal(data.Shuffle(ds, 7).Indices, shuffled.Indices) {
		t.Error("Shuffle with one seed differs between calls")
	}
	if slices.Equal(data.Shuffle(ds, 8).Indices, shuffled.Indices) {
		t.Error("Shuffle with seeds 7 and 8 gives one order")
	}
}

func TestWindowStacks(t *testing.T) {
	w := data.Window(numbers(5), 2, 1)
	it, err := w.Get(3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(it.Shape, []int{2, 2}) || !slices.Equal(it.X, []float32{3, 30, 4, 40}) {
		t.Errorf("window 3 = %v shape %v, want [3 30 4 40] shape [2 2]", it.X, it.Shape)
	}
	ragged := data.NewInMemory([]data.Item{{X: []float32{1}}, {X: []float32{1, 2}}})
	if _, err := data.Window(ragged, 2, 1).Get(0); err == nil || !strings.Contains(err.Error(), "item 1") {
		t.Errorf("ragged window: error %v, want one naming item 1", err)
	}
}

func TestSplit(t *testing.T) {
	ds := numbers(101)
	parts, err := data.Split(ds, []float64{0.8, 0.1, 0.1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var all []int
	for _, p := range parts {
		all = append(all, labels(t, p)...)
	}
	if got := []int{parts[0].Len(), parts[1].Len(), parts[2].Len()}; !slices.Equal(got, []int{81, 10, 10}) {
		t.Errorf("sizes %v, want [81 10 10]", got)
	}
	if !isPermutation(all, 101) {
		t.Errorf("parts are not disjoint and complete: %v", all)
	}
	again, _ := data.Split(ds, []float64{0.8, 0.1, 0.1}, 3)
	if !slices.Equal(labels(t, again[1]), labels(t, parts[1])) {
		t.Error("Split is not deterministic for one seed")
	}
	for _, bad := range [][]float64{nil, {0.5, 0.4}, {1.5, -0.5}} {
		if _, err := data.Split(ds, bad, 1); err == nil {
			t.Errorf("Split(%v) did not fail", bad)
		}
	}
}

func TestSample(t *testing.T) {
	ds := numbers(20)
	without := must(data.Sample(ds, 20, false, 5))
	if !isPermutation(without.Indices, 20) {
		t.Errorf("Sample without replacement %v is not a permutation", without.Indices)
	}
	with := must(data.Sample(ds, 200, true, 5))
	seen := map[int]int{}
	for _, i := range with.Indices {
		if i < 0 || i >= 20 {
			t.Fatalf("index %d out of range", i)
		}
		seen[i]++
	}
	if len(seen) == 200 || len(seen) < 15 {
		t.Errorf("200 draws with replacement hit %d distinct items", len(seen))
	}
	if !slices.Equal(must(data.Sample(ds, 200, true, 5)).Indices, with.Indices) {
		t.Error("Sample is not deterministic for one seed")
	}
	for _, tc := range []struct {
		n       int
		replace bool
	}{{21, false}, {-1, true}} {
		if _, err := data.Sample(ds, tc.n, tc.replace, 1); err == nil {
			t.Errorf("Sample(n=%d, replace=%v) did not fail", tc.n, tc.replace)
		}
	}
}

func TestTransformErrors(t *testing.T) {
	ds := numbers(4)
	boom := errors.New("boom")
	failing := data.Map(ds, func(i int, it data.Item) (data.Item, error) {
		if i == 2 {
			return it, boom
		}
		return it, nil
	})
	for _, tc := range []struct {
		name string
		err  error
		want error
		text string
	}{
		{"InMemory index", func() error { _, err := ds.Get(4); return err }(), data.ErrIndex, "index 4"},
		{"Concat index", func() error { _, err := data.Concat(ds, ds).Get(-1); return err }(), data.ErrIndex, "index -1"},
		{"Subset construction", func() error { _, err := data.Subset(ds, []int{0, 9}); return err }(), data.ErrIndex, "indices[1] = 9"},
		{"Partial construction", func() error { _, err := data.Partial(ds, 3, 5); return err }(), data.ErrIndex, "[3, 5)"},
		{"Map wraps with the index", func() error { _, err := failing.Get(2); return err }(), boom, "item 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) || !strings.Contains(fmt.Sprint(tc.err), tc.text) {
				t.Errorf("error %v, want one wrapping %v and containing %q", tc.err, tc.want, tc.text)
			}
		})
	}
}

func TestWindowBadArguments(t *testing.T) {
	for _, sz := range [][2]int{{0, 1}, {2, 0}} {
		err := tensor.Try(func() { data.Window(numbers(3), sz[0], sz[1]) })
		if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(fmt.Sprint(err), "data.Window") {
			t.Errorf("Window(size %d, step %d): %v, want ErrArgument naming data.Window", sz[0], sz[1], err)
		}
	}
}

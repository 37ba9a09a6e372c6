package data

import (
	"errors"
	"fmt"
)

// Item is one example of a Dataset, held on the host as plain Go values.
//
// Items are host data, not tensors, on purpose: a Dataset can then be read
// from any goroutine (the DataLoader's workers) without touching a device,
// an item costs no device memory until a Batcher stacks many of them into
// one tensor (one allocation and one copy per batch, not per item), and
// interpreted notebook cells can build and inspect items with ordinary
// slices. A Batcher turns a list of items into tensors on a device.
//
// X holds the features, flat and row-major, with shape Shape (nil means
// [len(X)]). Label is the class index of classification data sets; Target,
// when not nil, holds regression targets instead (a Batcher then uses it
// rather than Label). Extra carries anything else a custom Batcher or Map
// function wants (a file name, a raw string); StackBatcher ignores it.
type Item struct {
	X      []float32
	Shape  []int
	Label  int64
	Target []float32
	Extra  map[string]any
}

// XShape returns the shape of X: Shape, or [len(X)] when Shape is nil.
func (it Item) XShape() []int {
	if it.Shape == nil {
		return []int{len(it.X)}
	}
	return it.Shape
}

// Dataset is a sized, indexable collection of items. Get must be safe to
// call from several goroutines at once (the DataLoader's workers) and
// returns an error, never panics, for an index out of range or an item
// that cannot be read (a corrupt file, say).
type Dataset interface {
	Len() int
	Get(i int) (Item, error)
}

// ErrIndex is wrapped by the errors of Get given an index out of range.
var ErrIndex = errors.New("index out of range")

func indexErr(what string, i, n int) error {
	return fmt.Errorf("data: %s: index %d out of range [0, %d): %w", what, i, n, ErrIndex)
}

// InMemory is a Dataset over a slice of items.
type InMemory struct {
	Items []Item
}

// NewInMemory returns a Dataset serving items (not copied).
func NewInMemory(items []Item) *InMemory { return &InMemory{Items: items} }

// Len returns the number of items.
func (m *InMemory) Len() int { return len(m.Items) }

// Get returns item i, or an error wrapping ErrIndex when i is out of range.
func (m *InMemory) Get(i int) (Item, error) {
	if i < 0 || i >= len(m.Items) {
		return Item{}, indexErr("InMemory.Get", i, len(m.Items))
	}
	return m.Items[i], nil
}

// Get returns image i as an Item: X holds 784 float32 values scaled as
// Batch scales them, shaped [784] or, with NCHW set, [1, 28, 28]; Label is
// the digit. It returns an error wrapping ErrIndex when i is out of range.
// With Len it makes *MNIST a Dataset.
func (m *MNIST) Get(i int) (Item, error) {
	if i < 0 || i >= m.Len() {
		return Item{}, indexErr("MNIST.Get", i, m.Len())
	}
	shape := []int{MNISTPixels}
	if m.NCHW {
		shape = []int{1, MNISTRows, MNISTCols}
	}
	return Item{X: m.Image(i), Shape: shape, Label: m.Labels[i]}, nil
}

package data_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/data"
)

var _ data.Dataset = (*data.MNIST)(nil)
var _ data.Dataset = (*data.ImageFolder)(nil)
var _ data.Dataset = (*data.CSVDataset)(nil)

func TestMNISTDataset(t *testing.T) {
	m := &data.MNIST{Pixels: make([]uint8, 2*data.MNISTPixels), Labels: []int64{7, 3}}
	m.Pixels[data.MNISTPixels] = 255
	it, err := m.Get(1)
	if err != nil {
		t.Fatal(err)
	}
	if it.Label != 3 || !slices.Equal(it.XShape(), []int{784}) || it.X[0] != 1 || !slices.Equal(it.X, m.Image(1)) {
		t.Errorf("item 1: label %d shape %v x[0] %g", it.Label, it.XShape(), it.X[0])
	}
	m.NCHW = true
	if it, _ := m.Get(0); !slices.Equal(it.Shape, []int{1, 28, 28}) {
		t.Errorf("NCHW shape %v", it.Shape)
	}
	if _, err := m.Get(2); !errors.Is(err, data.ErrIndex) {
		t.Errorf("Get(2): %v, want ErrIndex", err)
	}
}

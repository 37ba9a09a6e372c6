package tensor_test

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestReshapeStridedViews checks that Reshape of a strided tensor is a view
// when its strides allow one (splitting or merging dimensions laid out one
// inside the other) and a copy otherwise, with the same values either way.
func TestReshapeStridedViews(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.ArangeOf(dev, tensor.Float32, 0, 2*5*12, 1).Reshape(2, 5, 12)
		for _, c := range []struct {
			name        string
			in          *tensor.Tensor
			shape       []int
			wantStrides []int // nil: a copy (contiguous strides)
		}{
			{"split the last dimension of a slice", x.Narrow(2, 4, 8), []int{2, 5, 2, 4}, []int{60, 12, 4, 1}},
			{"merge leading dimensions of a slice", x.Narrow(2, 0, 6), []int{10, 6}, []int{12, 1}},
			{"split a transposed dimension", x.Transpose(1, 2), []int{2, 3, 4, 5}, []int{60, 4, 1, 12}},
			{"add and drop unit dimensions", x.Narrow(1, 1, 3), []int{2, 1, 3, 12, 1}, []int{60, 36, 12, 1, 1}},
			{"merge across a slice: copy", x.Narrow(2, 0, 6), []int{2, 30}, nil},
			{"merge transposed dimensions: copy", x.Transpose(1, 2), []int{2, 60}, nil},
		} {
			got := c.in.Reshape(c.shape...)
			want := c.in.Contiguous().Reshape(c.shape...)
			if fmt.Sprint(got.Float64s()) != fmt.Sprint(want.Float64s()) {
				t.Errorf("%s: values %v, want %v", c.name, got.Float64s(), want.Float64s())
			}
			ws := c.wantStrides
			if ws == nil {
				ws = want.Strides()
			}
			if fmt.Sprint(got.Strides()) != fmt.Sprint(ws) {
				t.Errorf("%s: strides %v, want %v", c.name, got.Strides(), ws)
			}
		}
	})
	nnRunGradChecks(t, []nnGradCase{{"reshape of a slice", func(in []*tensor.Tensor) *tensor.Tensor {
		return in[0].Narrow(1, 1, 4).Reshape(3, 2, 2).Permute(1, 0, 2).Mul(in[0].Narrow(1, 0, 4).Reshape(3, 2, 2).Permute(1, 0, 2))
	}, nnInputs(nnRand(1, 3, 6))}})
}

// TestMatmulBroadcastMatrixMergesRows checks a batch times one matrix
// (multiplied as one tall product where a's rows merge) against each batch
// entry's own product, bit for bit, for contiguous and sliced inputs.
func TestMatmulBroadcastMatrixMergesRows(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Randn(dev, 3, 37, 20)
		w := tensor.Randn(dev, 20, 45)
		for _, a := range []*tensor.Tensor{x, x.Narrow(2, 2, 13).Narrow(1, 1, 30), x.Transpose(0, 1)} {
			k := a.Dim(2)
			got := a.Matmul(w.Narrow(0, 0, k))
			for i := range a.Dim(0) {
				want := a.Select(0, i).Matmul(w.Narrow(0, 0, k))
				if fmt.Sprint(got.Select(0, i).Float64s()) != fmt.Sprint(want.Float64s()) {
					t.Fatalf("a %v strides %v: batch entry %d differs from its own product", a.Shape(), a.Strides(), i)
				}
			}
		}
	})
}

package tensor_test

import (
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestBackwardNotify checks that each watched leaf is announced once, with
// the gradient Backward returns for it, already final when announced (w1
// is used twice, so its gradient is a sum), last layer first.
func TestBackwardNotify(t *testing.T) {
	dev := tensor.CPU().Autodiff()
	x := tensor.FromFloat64s(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	w1 := tensor.FromFloat64s(dev, []float64{0.1, -0.2, 0.3, 0.4, 0.5, -0.6}, 3, 2).RequireGrad()
	w2 := tensor.FromFloat64s(dev, []float64{0.7, -0.8}, 2, 1).RequireGrad()
	unused := tensor.FromFloat64s(dev, []float64{1}, 1).RequireGrad()
	h := x.Matmul(w1).Relu()
	h = h.Add(x.Matmul(w1).Tanh())
	loss := h.Matmul(w2).Square().Sum()

	var order []int
	seen := map[int][]float64{}
	grads := loss.BackwardNotify([]*tensor.Tensor{w1, w2, unused}, func(i int, g *tensor.Tensor) {
		order = append(order, i)
		seen[i] = g.Float64s()
	})
	defer grads.Release()
	if !slices.Equal(order, []int{1, 0}) {
		t.Fatalf("announced %v, want [1 0] (w2 before w1; unused never)", order)
	}
	want := loss.Backward()
	defer want.Release()
	for i, w := range []*tensor.Tensor{w1, w2} {
		if got, exp := seen[i], want.Get(w).Float64s(); !slices.Equal(got, exp) {
			t.Errorf("leaf %d announced with %v, final gradient %v", i, got, exp)
		}
		if got := grads.Get(w).Float64s(); !slices.Equal(got, seen[i]) {
			t.Errorf("leaf %d: returned gradient %v differs from the announced %v", i, got, seen[i])
		}
	}
}

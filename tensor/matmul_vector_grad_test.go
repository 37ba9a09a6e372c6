package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// TestMatmulVectorGradients checks the gradients of Matmul's 1-D forms
// against their closed forms: for the dot product a·b, ∂/∂a = b and
// ∂/∂b = a; for v·M (M [3, 2]), ∂/∂v = M·1 and ∂/∂M = v 1ᵀ; for M·w,
// ∂/∂M = 1 wᵀ and ∂/∂w = Mᵀ·1 (each summed over the result).
func TestMatmulVectorGradients(t *testing.T) {
	dev := tensor.CPU().Autodiff()
	a := tensor.FromFloat64s(dev, []float64{1, 2, 3}, 3).RequireGrad()
	b := tensor.FromFloat64s(dev, []float64{4, -5, 6}, 3).RequireGrad()
	g := a.Matmul(b).Backward()
	testutil.AssertValues(t, "d(a·b)/da", g.Get(a), []int{3}, []float64{4, -5, 6}, 0, 0)
	testutil.AssertValues(t, "d(a·b)/db", g.Get(b), []int{3}, []float64{1, 2, 3}, 0, 0)

	m := tensor.FromFloat64s(dev, []float64{1, 2, 3, 4, 5, 6}, 3, 2).RequireGrad()
	g = a.Matmul(m).Sum().Backward()
	testutil.AssertValues(t, "d(v·M)/dv", g.Get(a), []int{3}, []float64{3, 7, 11}, 0, 0)
	testutil.AssertValues(t, "d(v·M)/dM", g.Get(m), []int{3, 2}, []float64{1, 1, 2, 2, 3, 3}, 0, 0)

	w := tensor.FromFloat64s(dev, []float64{-1, 2}, 2).RequireGrad()
	g = m.Matmul(w).Sum().Backward()
	testutil.AssertValues(t, "d(M·w)/dM", g.Get(m), []int{3, 2}, []float64{-1, 2, -1, 2, -1, 2}, 0, 0)
	testutil.AssertValues(t, "d(M·w)/dw", g.Get(w), []int{2}, []float64{9, 12}, 0, 0)
}

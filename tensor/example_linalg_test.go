package tensor_test

import (
	"errors"
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Solve a linear system, check it against the inverse, and differentiate
// the log-determinant: its gradient is A⁻ᵀ.
func Example_linearAlgebra() {
	dev := tensor.CPU().Autodiff()
	a := tensor.FromFloat64s(dev, []float64{4, 1, 2, 3}, 2, 2).RequireGrad()
	b := tensor.FromFloat64s(dev, []float64{1, 2}, 2)
	x := a.Solve(b)
	fmt.Printf("x = %.4f\n", x.Float64s())
	fmt.Printf("A⁻¹b = %.4f\n", a.Inv().Matmul(b).Float64s())
	fmt.Printf("det = %.1f\n", a.Det().Item())
	_, logAbsDet := a.Slogdet()
	grads := logAbsDet.Backward()
	fmt.Printf("d log|det| / dA = %.2f\n", a.Grad(grads).Float64s())
	// Output:
	// x = [0.1000 0.6000]
	// A⁻¹b = [0.1000 0.6000]
	// det = 10.0
	// d log|det| / dA = [0.30 -0.20 -0.10 0.40]
}

// The decompositions return their factors; values that are unique (the
// singular values, eigenvalues, R's diagonal up to sign) can be printed,
// the factors checked by reconstruction.
func Example_decompositions() {
	dev := tensor.CPU()
	a := tensor.FromFloat64s(dev, []float64{3, 1, 1, 3}, 2, 2)
	fmt.Printf("singular values %.4f\n", a.Svdvals().Float64s())
	w, v := a.Eigh("L")
	fmt.Printf("eigenvalues %.4f\n", w.Float64s())
	back := v.Mul(w.Unsqueeze(0)).Matmul(v.T())
	fmt.Printf("V diag(w) Vᵀ %.4f\n", back.Float64s())
	l := a.Cholesky(false)
	fmt.Printf("cholesky %.4f\n", l.Float64s())
	q, r := a.QR("reduced")
	fmt.Printf("QR %.4f\n", q.Matmul(r).Float64s())
	fmt.Printf("nuclear norm %.1f, frobenius %.4f\n", a.MatrixNorm("nuc", false).Item(), a.MatrixNorm("fro", false).Item())
	fmt.Printf("einsum trace %.1f\n", tensor.Einsum("ii", a).Item())
	err := tensor.Try(func() { tensor.FromFloat64s(dev, []float64{1, 2, 2, 4}, 2, 2).Inv() })
	fmt.Println(errors.Is(err, tensor.ErrArgument), err)
	// Output:
	// singular values [4.0000 2.0000]
	// eigenvalues [2.0000 4.0000]
	// V diag(w) Vᵀ [3.0000 1.0000 1.0000 3.0000]
	// cholesky [1.7321 0.0000 0.5774 1.6330]
	// QR [3.0000 1.0000 1.0000 3.0000]
	// nuclear norm 6.0, frobenius 4.4721
	// einsum trace 6.0
	// true tensor.Inv: batch element 0: the diagonal element 2 of the LU factorisation is zero: the matrix is singular
}

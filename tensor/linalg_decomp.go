package tensor

import (
	"math"
)

// Matrix functions and decompositions of torch.linalg, batched over leading
// dimensions, on Float32 and Float64 (computed in float64 on the host; see
// linalg_host.go). Each records one graph node whose backward rule is the
// standard matrix-calculus one PyTorch uses (FunctionsManual.cpp).

// linalgBatch returns the number of matrices in a batch shape.
func linalgBatch(batch []int) int {
	n := 1
	for _, d := range batch {
		n *= d
	}
	return n
}

func withMat(batch []int, r, c int) []int { return append(append([]int{}, batch...), r, c) }
func withVec(batch []int, n int) []int    { return append(append([]int{}, batch...), n) }

// Det returns the determinant of each square matrix of t (shape [..., n, n]
// → [...]), computed from an LU factorisation with partial pivoting. Its
// gradient is g·det·A⁻ᵀ, and the adjugate (from the SVD) for singular
// matrices. It fails with ErrShape unless t is a batch of square matrices
// and with ErrDType unless t is Float32 or Float64.
func (t *Tensor) Det() *Tensor {
	const op = "Det"
	dt := linalgType(op, t)
	batch, n, _ := linalgMatrix(op, t, true)
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	det := make([]float64, nb)
	parallelBatch(nb, n*n*n, func(b int) {
		det[b] = matDet(a[b*n*n:(b+1)*n*n], n)
	})
	return linalgRecord(op, "linalg_det", nil, dt, []*Tensor{t}, []linalgOutput{{batch, det}}, nil, func(g [][]float64) [][]float64 {
		ga := make([]float64, len(a))
		parallelBatch(nb, n*n*n, func(b int) {
			copy(ga[b*n*n:], detGrad(a[b*n*n:(b+1)*n*n], n, det[b], g[0][b]))
		})
		return [][]float64{ga}
	})[0]
}

// matDet returns the determinant of a (n×n) by LU.
func matDet(a []float64, n int) float64 {
	lu := append([]float64(nil), a...)
	piv := make([]int, n)
	luFactor(lu, n, n, piv)
	d := 1.0
	for j := range n {
		d *= lu[j*n+j]
		if piv[j] != j {
			d = -d
		}
	}
	return d
}

// detGrad returns g times the gradient of det at a: the cofactor matrix.
func detGrad(a []float64, n int, det, g float64) []float64 {
	if inv, z := matInverse(a, n); z < 0 {
		out := matT(inv, n, n)
		for i := range out {
			out[i] *= g * det
		}
		return out
	}
	// singular: cof(A) = det(U)·det(Vᵀ) · U diag(∏_{j≠i} s_j) Vᵀ
	u, s, vt := jacobiSVD(a, n, n, false)
	sign := matDet(u, n) * matDet(vt, n)
	us := append([]float64(nil), u...)
	for i := range n {
		p := 1.0
		for j := range n {
			if j != i {
				p *= s[j]
			}
		}
		for r := range n {
			us[r*n+i] *= p * sign * g
		}
	}
	return matMul(us, vt, n, n, n)
}

// Slogdet returns the sign and the natural logarithm of the absolute value
// of the determinant of each square matrix of t (torch.linalg.slogdet):
// for a singular matrix the sign is 0 and the logarithm −∞. The gradient
// flows through logAbsDet only (g·A⁻ᵀ). It fails as Det.
func (t *Tensor) Slogdet() (sign, logAbsDet *Tensor) {
	const op = "Slogdet"
	dt := linalgType(op, t)
	batch, n, _ := linalgMatrix(op, t, true)
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	sg, la := make([]float64, nb), make([]float64, nb)
	parallelBatch(nb, n*n*n, func(b int) {
		lu := append([]float64(nil), a[b*n*n:(b+1)*n*n]...)
		piv := make([]int, n)
		luFactor(lu, n, n, piv)
		s, l := 1.0, 0.0
		for j := range n {
			d := lu[j*n+j]
			if d < 0 {
				s = -s
			}
			if piv[j] != j {
				s = -s
			}
			l += math.Log(math.Abs(d))
		}
		if math.IsInf(l, -1) {
			s = 0
		}
		sg[b], la[b] = s, l
	})
	sign = hostTensor(op, t.dev.NoGrad().Inner(), dt, batch, sg)
	sign.dev = t.dev
	logAbsDet = linalgRecord(op, "linalg_slogdet", nil, dt, []*Tensor{t}, []linalgOutput{{batch, la}}, nil, func(g [][]float64) [][]float64 {
		ga := make([]float64, len(a))
		parallelBatch(nb, n*n*n, func(b int) {
			inv, z := matInverse(a[b*n*n:(b+1)*n*n], n)
			if z >= 0 {
				for i := range n * n {
					ga[b*n*n+i] = math.NaN()
				}
				return
			}
			for i := range n {
				for j := range n {
					ga[b*n*n+i*n+j] = g[0][b] * inv[j*n+i]
				}
			}
		})
		return [][]float64{ga}
	})[0]
	return sign, logAbsDet
}

// linalgSingular fails op for the first batch element whose matrix has a
// zero pivot (zero[b] ≥ 0), as torch.linalg's errors do.
func linalgSingular(op string, zero []int) {
	for b, z := range zero {
		if z >= 0 {
			fail(op, ErrArgument, "batch element %d: the diagonal element %d of the LU factorisation is zero: the matrix is singular", b, z+1)
		}
	}
}

// Inv returns the inverse of each square matrix of t (torch.linalg.inv),
// by LU with partial pivoting. Its gradient is −A⁻ᵀ·g·A⁻ᵀ. It fails with
// ErrArgument naming the first batch element whose matrix is singular (a
// pivot exactly zero, as LAPACK reports), with ErrShape unless t is a batch
// of square matrices and with ErrDType unless it is Float32 or Float64.
func (t *Tensor) Inv() *Tensor {
	const op = "Inv"
	dt := linalgType(op, t)
	batch, n, _ := linalgMatrix(op, t, true)
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	x := make([]float64, len(a))
	zero := make([]int, nb)
	parallelBatch(nb, n*n*n, func(b int) {
		inv, z := matInverse(a[b*n*n:(b+1)*n*n], n)
		zero[b] = z
		copy(x[b*n*n:], inv)
	})
	linalgSingular(op, zero)
	return linalgRecord(op, "linalg_inv", nil, dt, []*Tensor{t}, []linalgOutput{{t.Shape(), x}}, nil, func(g [][]float64) [][]float64 {
		ga := make([]float64, len(a))
		parallelBatch(nb, n*n*n, func(b int) {
			xt := matT(x[b*n*n:(b+1)*n*n], n, n)
			r := matMul(matMul(xt, g[0][b*n*n:(b+1)*n*n], n, n, n), xt, n, n, n)
			for i, v := range r {
				ga[b*n*n+i] = -v
			}
		})
		return [][]float64{ga}
	})[0]
}

// Solve returns X with A·X = B for each square matrix A of t
// (torch.linalg.solve): B is a batch of vectors when it is 1-D or has
// exactly the shape of t without its last dimension, and a batch of
// matrices [..., n, k] otherwise; batch dimensions broadcast. Gradients:
// B gets A⁻ᵀ·g and A gets −(A⁻ᵀ·g)·Xᵀ. It fails with ErrArgument naming
// the first singular batch element, ErrShape when the sizes disagree, and
// ErrDType unless both are Float32 or Float64.
func (t *Tensor) Solve(b *Tensor) *Tensor {
	const op = "Solve"
	dt := linalgType(op, t, b)
	ab, n, _ := linalgMatrix(op, t, true)
	vector := len(b.shape) == 1 || (len(b.shape) == len(t.shape)-1 && sameShape(b.shape, t.shape[:len(t.shape)-1]))
	var bb []int
	k := 1
	if vector {
		if b.shape[len(b.shape)-1] != n {
			fail(op, ErrShape, "A %s and vector B %s: B has %d rows, A %d", shapeString(t.shape), shapeString(b.shape), b.shape[len(b.shape)-1], n)
		}
		bb = b.shape[:len(b.shape)-1]
	} else {
		if len(b.shape) < 2 || b.shape[len(b.shape)-2] != n {
			fail(op, ErrShape, "A %s and B %s: B must be [..., %d, k] or [..., %d]", shapeString(t.shape), shapeString(b.shape), n, n)
		}
		bb, k = b.shape[:len(b.shape)-2], b.shape[len(b.shape)-1]
	}
	batch := broadcastShapes(op, ab, bb)
	aShape := withMat(batch, n, n)
	bShape := withMat(batch, n, k)
	if vector {
		bShape = withVec(batch, n)
	}
	av := t.viewOf(t.broadcastView(aShape))
	a := hostFloat64s(op, av)
	av.Release()
	bv := b.viewOf(b.broadcastView(bShape))
	bh := hostFloat64s(op, bv)
	bv.Release()
	nb := linalgBatch(batch)
	x := make([]float64, len(bh))
	zero := make([]int, nb)
	lus := make([][]float64, nb)
	pivs := make([][]int, nb)
	parallelBatch(nb, n*n*n, func(i int) {
		lu := append([]float64(nil), a[i*n*n:(i+1)*n*n]...)
		piv := make([]int, n)
		zero[i] = luFactor(lu, n, n, piv)
		if zero[i] >= 0 {
			return
		}
		xi := x[i*n*k : (i+1)*n*k]
		copy(xi, bh[i*n*k:])
		luSolve(lu, n, piv, xi, k)
		lus[i], pivs[i] = lu, piv
	})
	linalgSingular(op, zero)
	shapes := [][]int{aShape, bShape}
	return linalgRecord(op, "linalg_solve", nil, dt, []*Tensor{t, b}, []linalgOutput{{bShape, x}},
		func(i int) []int { return shapes[i] }, func(g [][]float64) [][]float64 {
			ga, gb := make([]float64, len(a)), make([]float64, len(bh))
			parallelBatch(nb, n*n*n, func(i int) {
				// gB = A⁻ᵀ g: solve Aᵀ y = g with Aᵀ's own factorisation
				at := matT(a[i*n*n:(i+1)*n*n], n, n)
				piv := make([]int, n)
				luFactor(at, n, n, piv)
				y := gb[i*n*k : (i+1)*n*k]
				copy(y, g[0][i*n*k:])
				luSolve(at, n, piv, y, k)
				r := matMul(y, matT(x[i*n*k:(i+1)*n*k], n, k), n, k, n)
				for j, v := range r {
					ga[i*n*n+j] = -v
				}
			})
			return [][]float64{ga, gb}
		})[0]
}

// Cholesky returns the Cholesky factor of each symmetric positive-definite
// matrix of t (torch.linalg.cholesky): lower triangular L with A = L·Lᵀ,
// or with upper the upper triangular Lᵀ. Only the lower triangle of A is
// read. Its gradient is PyTorch's: L⁻ᵀ·Φ(Lᵀ·gL)·L⁻¹, Φ taking the
// symmetric part built from the lower triangle. It fails with ErrArgument
// naming the first batch element that is not positive definite and the
// order of its leading minor, ErrShape unless t is a batch of square
// matrices, ErrDType unless it is Float32 or Float64.
func (t *Tensor) Cholesky(upper bool) *Tensor {
	const op = "Cholesky"
	dt := linalgType(op, t)
	batch, n, _ := linalgMatrix(op, t, true)
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	l := make([]float64, len(a))
	bad := make([]int, nb)
	parallelBatch(nb, n*n*n, func(b int) {
		lb, minor := choleskyLower(a[b*n*n:(b+1)*n*n], n)
		bad[b] = minor
		copy(l[b*n*n:], lb)
	})
	for b, minor := range bad {
		if minor > 0 {
			fail(op, ErrArgument, "batch element %d: the factorisation could not be completed because the input is not positive-definite (the leading minor of order %d is not positive-definite)", b, minor)
		}
	}
	out := l
	if upper {
		out = make([]float64, len(l))
		for b := range nb {
			copy(out[b*n*n:], matT(l[b*n*n:(b+1)*n*n], n, n))
		}
	}
	return linalgRecord(op, "linalg_cholesky", map[string]any{"upper": upper}, dt, []*Tensor{t}, []linalgOutput{{t.Shape(), out}}, nil, func(g [][]float64) [][]float64 {
		ga := make([]float64, len(a))
		parallelBatch(nb, n*n*n, func(b int) {
			lb := l[b*n*n : (b+1)*n*n]
			gl := g[0][b*n*n : (b+1)*n*n]
			if upper {
				gl = matT(gl, n, n)
			}
			m := matMul(matT(lb, n, n), gl, n, n, n)
			phi := make([]float64, n*n)
			for i := range n {
				for j := 0; j <= i; j++ {
					if i == j {
						phi[i*n+i] = 0.5 * m[i*n+i]
					} else {
						phi[i*n+j] = 0.5 * m[i*n+j]
						phi[j*n+i] = 0.5 * m[i*n+j]
					}
				}
			}
			triSolve(lb, n, true, true, phi, n) // Lᵀ Y = Φ
			// Z L = Y  ⇔  Lᵀ Zᵀ = Yᵀ
			yt := matT(phi, n, n)
			triSolve(lb, n, true, true, yt, n)
			copy(ga[b*n*n:], matT(yt, n, n))
		})
		return [][]float64{ga}
	})[0]
}

// QR returns the QR decomposition of each matrix of t (torch.linalg.qr):
// mode "reduced" (or "") gives Q [..., m, k] with orthonormal columns and
// upper triangular R [..., k, n], k = min(m, n); "complete" gives Q
// [..., m, m] and R [..., m, n]. Householder reflections as LAPACK's, so R's
// diagonal has LAPACK's signs. Gradients follow PyTorch; like PyTorch, the
// decomposition is not differentiable for mode "complete" with m > n
// (Backward fails with ErrArgument). It fails with ErrArgument for an
// unknown mode, ErrShape for rank < 2, ErrDType unless Float32 or Float64.
func (t *Tensor) QR(mode string) (q, r *Tensor) {
	const op = "QR"
	dt := linalgType(op, t)
	batch, m, n := linalgMatrix(op, t, false)
	complete := false
	switch mode {
	case "", "reduced":
	case "complete":
		complete = true
	default:
		fail(op, ErrArgument, "mode %q: want \"reduced\" or \"complete\"", mode)
	}
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	k := min(m, n)
	qc, rr := k, k
	if complete {
		qc, rr = m, m
	}
	qh, rh := make([]float64, nb*m*qc), make([]float64, nb*rr*n)
	parallelBatch(nb, m*n*k, func(b int) {
		qb, rb, _, _ := householderQR(a[b*m*n:(b+1)*m*n], m, n, complete)
		copy(qh[b*m*qc:], qb)
		copy(rh[b*rr*n:], rb)
	})
	outs := []linalgOutput{{withMat(batch, m, qc), qh}, {withMat(batch, rr, n), rh}}
	res := linalgRecord(op, "linalg_qr", map[string]any{"mode": mode}, dt, []*Tensor{t}, outs, nil, func(g [][]float64) [][]float64 {
		if complete && m > n {
			fail(op, ErrArgument, "the QR decomposition is not differentiable when mode is \"complete\" and rows (%d) > columns (%d)", m, n)
		}
		ga := make([]float64, len(a))
		parallelBatch(nb, m*n*k, func(b int) {
			copy(ga[b*m*n:], qrGrad(qh[b*m*qc:(b+1)*m*qc], rh[b*rr*n:(b+1)*rr*n], g[0][b*m*qc:(b+1)*m*qc], g[1][b*rr*n:(b+1)*rr*n], a[b*m*n:(b+1)*m*n], m, n))
		})
		return [][]float64{ga}
	})
	return res[0], res[1]
}

// qrGrad is the backward of A = QR (Q m×k, R k×n, k = min(m, n)): for
// m ≥ n, gA = (gQ + Q·copyltu(M))·R⁻ᵀ with M = R·gRᵀ − gQᵀ·Q; for m < n
// the square part X = A[:, :m] takes gQ + Y·gR₂ᵀ and Y = A[:, m:] takes
// Q·gR₂ (Liao et al., 2019).
func qrGrad(q, r, gq, gr, a []float64, m, n int) []float64 {
	if m >= n {
		return qrGradTall(q, r, gq, gr, m, n)
	}
	// R = [R1 | R2], A = [X | Y]
	r1, gr1 := make([]float64, m*m), make([]float64, m*m)
	gr2 := make([]float64, m*(n-m))
	y := make([]float64, m*(n-m))
	for i := range m {
		copy(r1[i*m:i*m+m], r[i*n:i*n+m])
		copy(gr1[i*m:i*m+m], gr[i*n:i*n+m])
		copy(gr2[i*(n-m):(i+1)*(n-m)], gr[i*n+m:i*n+n])
		copy(y[i*(n-m):(i+1)*(n-m)], a[i*n+m:i*n+n])
	}
	gq2 := matMul(y, matT(gr2, m, n-m), m, n-m, m)
	for i := range gq2 {
		gq2[i] += gq[i]
	}
	gx := qrGradTall(q, r1, gq2, gr1, m, m)
	gy := matMul(q, gr2, m, m, n-m)
	out := make([]float64, m*n)
	for i := range m {
		copy(out[i*n:i*n+m], gx[i*m:i*m+m])
		copy(out[i*n+m:i*n+n], gy[i*(n-m):(i+1)*(n-m)])
	}
	return out
}

func qrGradTall(q, r, gq, gr []float64, m, n int) []float64 {
	mm := matMul(r, matT(gr, n, n), n, n, n)
	qq := matMul(matT(gq, m, n), q, n, m, n)
	for i := range mm {
		mm[i] -= qq[i]
	}
	for i := range n { // copyltu
		for j := i + 1; j < n; j++ {
			mm[i*n+j] = mm[j*n+i]
		}
	}
	b := matMul(q, mm, m, n, n)
	for i := range b {
		b[i] += gq[i]
	}
	// gA = B R⁻ᵀ ⇔ R gAᵀ = Bᵀ
	bt := matT(b, m, n)
	triSolve(r, n, false, false, bt, m)
	return matT(bt, n, m)
}

// Eigh returns the eigenvalues (ascending, [..., n]) and orthonormal
// eigenvectors (the columns of [..., n, n]) of each symmetric matrix of t
// (torch.linalg.eigh), reading only its lower triangle (uplo "L" or "") or
// its upper triangle ("U"). Householder tridiagonalisation and implicit
// QL in float64 (EISPACK's tred2/tql2); the signs
// of the eigenvectors may differ from LAPACK's. Gradients follow PyTorch:
// V·(diag(gΛ) + sym(VᵀgV)/(λⱼ−λᵢ))·Vᵀ, which is infinite for repeated
// eigenvalues when the eigenvectors are used. It fails with ErrArgument for
// another uplo, ErrShape unless t is a batch of square matrices, ErrDType
// unless Float32 or Float64.
func (t *Tensor) Eigh(uplo string) (eigenvalues, eigenvectors *Tensor) {
	res := t.eigh("Eigh", uplo, true)
	return res[0], res[1]
}

// Eigvalsh returns the eigenvalues of each symmetric matrix of t in
// ascending order (torch.linalg.eigvalsh); see Eigh. Its gradient is
// V·diag(gΛ)·Vᵀ.
func (t *Tensor) Eigvalsh(uplo string) *Tensor { return t.eigh("Eigvalsh", uplo, false)[0] }

func (t *Tensor) eigh(op, uplo string, vectors bool) []*Tensor {
	dt := linalgType(op, t)
	batch, n, _ := linalgMatrix(op, t, true)
	lower := true
	switch uplo {
	case "", "L", "l":
	case "U", "u":
		lower = false
	default:
		fail(op, ErrArgument, "uplo %q: want \"L\" or \"U\"", uplo)
	}
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	vals, vecs := make([]float64, nb*n), make([]float64, nb*n*n)
	parallelBatch(nb, n*n*n, func(b int) {
		s := make([]float64, n*n)
		ab := a[b*n*n : (b+1)*n*n]
		for i := range n {
			for j := range n {
				if i == j || (i > j) == lower {
					s[i*n+j], s[j*n+i] = ab[i*n+j], ab[i*n+j]
				}
			}
		}
		w, v := symEigh(s, n)
		copy(vals[b*n:], w)
		copy(vecs[b*n*n:], v)
	})
	outs := []linalgOutput{{withVec(batch, n), vals}}
	if vectors {
		outs = append(outs, linalgOutput{t.Shape(), vecs})
	}
	node := "linalg_eigh"
	if !vectors {
		node = "linalg_eigvalsh"
	}
	return linalgRecord(op, node, map[string]any{"uplo": uplo}, dt, []*Tensor{t}, outs, nil, func(g [][]float64) [][]float64 {
		ga := make([]float64, len(a))
		parallelBatch(nb, n*n*n, func(b int) {
			v := vecs[b*n*n : (b+1)*n*n]
			w := vals[b*n : (b+1)*n]
			inner := make([]float64, n*n)
			if vectors {
				vg := matMul(matT(v, n, n), g[1][b*n*n:(b+1)*n*n], n, n, n)
				for i := range n {
					for j := range n {
						if i != j {
							inner[i*n+j] = 0.5 * (vg[i*n+j] - vg[j*n+i]) / (w[j] - w[i])
						}
					}
				}
			}
			for i := range n {
				inner[i*n+i] += g[0][b*n+i]
			}
			copy(ga[b*n*n:], matMul(matMul(v, inner, n, n, n), matT(v, n, n), n, n, n))
		})
		return [][]float64{ga}
	})
}

// SVD returns the singular value decomposition A = U·diag(S)·Vh of each
// matrix of t (torch.linalg.svd): S [..., k] descending, k = min(m, n);
// with fullMatrices U is [..., m, m] and Vh [..., n, n], otherwise U
// [..., m, k] and Vh [..., k, n]. One-sided Jacobi in float64; the signs of
// singular vectors may differ from LAPACK's. Gradients follow PyTorch's
// svd_backward (infinite for repeated singular values when U or Vh are
// used); with fullMatrices, the gradients of the extra columns, which are
// not unique, are ignored. It fails with ErrShape for rank < 2 and ErrDType
// unless Float32 or Float64.
func (t *Tensor) SVD(fullMatrices bool) (u, s, vh *Tensor) {
	res := t.svd("SVD", fullMatrices, true)
	return res[0], res[1], res[2]
}

// Svdvals returns the singular values of each matrix of t in descending
// order (torch.linalg.svdvals); see SVD. Its gradient is U·diag(gS)·Vh.
func (t *Tensor) Svdvals() *Tensor { return t.svd("Svdvals", false, false)[0] }

func (t *Tensor) svd(op string, full, vectors bool) []*Tensor {
	dt := linalgType(op, t)
	batch, m, n := linalgMatrix(op, t, false)
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	k := min(m, n)
	uc, vr := k, k
	if full {
		uc, vr = m, n
	}
	// thin factors for the backward rule; full ones for the output
	uh, sh, vth := make([]float64, nb*m*k), make([]float64, nb*k), make([]float64, nb*k*n)
	var uf, vf []float64
	if full {
		uf, vf = make([]float64, nb*m*m), make([]float64, nb*n*n)
	}
	parallelBatch(nb, m*n*k, func(b int) {
		ub, sb, vb := jacobiSVD(a[b*m*n:(b+1)*m*n], m, n, full)
		copy(sh[b*k:], sb)
		cu, rv := uc, vr
		for i := range m {
			copy(uh[b*m*k+i*k:b*m*k+i*k+k], ub[i*cu:i*cu+k])
		}
		copy(vth[b*k*n:], vb[:k*n])
		if full {
			copy(uf[b*m*m:], ub)
			copy(vf[b*n*n:], vb[:rv*n])
		}
	})
	var outs []linalgOutput
	if vectors {
		uo, vo := uh, vth
		if full {
			uo, vo = uf, vf
		}
		outs = []linalgOutput{{withMat(batch, m, uc), uo}, {withVec(batch, k), sh}, {withMat(batch, vr, n), vo}}
	} else {
		outs = []linalgOutput{{withVec(batch, k), sh}}
	}
	node := "linalg_svd"
	if !vectors {
		node = "linalg_svdvals"
	}
	return linalgRecord(op, node, map[string]any{"full_matrices": full}, dt, []*Tensor{t}, outs, nil, func(g [][]float64) [][]float64 {
		ga := make([]float64, len(a))
		parallelBatch(nb, m*n*k, func(b int) {
			ub, sb, vb := uh[b*m*k:(b+1)*m*k], sh[b*k:(b+1)*k], vth[b*k*n:(b+1)*k*n]
			var gu, gs, gv []float64
			if vectors {
				gu, gs = make([]float64, m*k), g[1][b*k:(b+1)*k]
				gvf := g[2][b*vr*n : (b+1)*vr*n]
				for i := range m {
					copy(gu[i*k:i*k+k], g[0][b*m*uc+i*uc:b*m*uc+i*uc+k])
				}
				gv = gvf[:k*n]
			} else {
				gs = g[0][b*k : (b+1)*k]
			}
			copy(ga[b*m*n:], svdGrad(ub, sb, vb, gu, gs, gv, m, n))
		})
		return [][]float64{ga}
	})
}

// svdGrad is PyTorch's svd_backward for the thin SVD (U m×k, S k, Vh k×n)
// with upstream gU, gS, gVh (gU and gVh nil when only S was used).
func svdGrad(u, s, vh, gu, gs, gvh []float64, m, n int) []float64 {
	k := min(m, n)
	if gu == nil && gvh == nil {
		us := append([]float64(nil), u...)
		for i := range m {
			for j := range k {
				us[i*k+j] *= gs[j]
			}
		}
		return matMul(us, vh, m, k, n)
	}
	v, gv := matT(vh, k, n), matT(gvh, k, n) // n×k
	uhgu := matMul(matT(u, m, k), gu, k, m, k)
	vhgv := matMul(matT(v, n, k), gv, k, n, k)
	inner := make([]float64, k*k)
	for i := range k {
		for j := range k {
			if i == j {
				inner[i*k+i] = gs[i]
				continue
			}
			e := s[j]*s[j] - s[i]*s[i]
			su := (uhgu[i*k+j] - uhgu[j*k+i]) * s[j]
			sv := s[i] * (vhgv[i*k+j] - vhgv[j*k+i])
			inner[i*k+j] = (su + sv) / e
		}
	}
	switch {
	case m > n:
		// [U·inner + (I − UUᵀ)·gU·S⁻¹]·Vh
		ga := matMul(u, inner, m, k, k)
		gus := append([]float64(nil), gu...)
		for i := range m {
			for j := range k {
				gus[i*k+j] /= s[j]
			}
		}
		proj := matMul(u, matMul(matT(u, m, k), gus, k, m, k), m, k, k)
		for i := range ga {
			ga[i] += gus[i] - proj[i]
		}
		return matMul(ga, vh, m, k, n)
	case m < n:
		// U·[inner·Vh + S⁻¹·gVh·(I − VVᵀ)]
		ga := matMul(inner, vh, k, k, n)
		sg := append([]float64(nil), gvh...)
		for i := range k {
			for j := range n {
				sg[i*n+j] /= s[i]
			}
		}
		proj := matMul(matMul(sg, v, k, n, k), vh, k, k, n)
		for i := range ga {
			ga[i] += sg[i] - proj[i]
		}
		return matMul(u, ga, m, k, n)
	}
	return matMul(matMul(u, inner, m, k, k), vh, m, k, n)
}

// LUFactor returns the LU factorisation of each matrix of t with partial
// pivoting (torch.linalg.lu_factor): lu [..., m, n] holds L (unit diagonal,
// strictly below) and U (on and above the diagonal), and pivots [..., k]
// (Int32, 1-based as LAPACK's) the row swapped with row i at step i. A
// singular matrix is factored without error, as PyTorch does. The gradient
// of lu follows PyTorch's lu_factor_ex_backward. It fails with ErrShape for
// rank < 2 and ErrDType unless Float32 or Float64.
func (t *Tensor) LUFactor() (lu, pivots *Tensor) {
	const op = "LUFactor"
	f := t.luFactors(op)
	k := min(f.m, f.n)
	pv := make([]float64, len(f.piv))
	for i, p := range f.piv {
		pv[i] = float64(p + 1)
	}
	pivots = hostTensor(op, t.dev.Inner(), Int32, withVec(f.batch, k), pv)
	pivots.dev = t.dev
	lu = linalgRecord(op, "linalg_lu_factor", nil, f.dt, []*Tensor{t}, []linalgOutput{{t.Shape(), f.lu}}, nil, func(g [][]float64) [][]float64 {
		return [][]float64{f.grad(g[0], nil, true)}
	})[0]
	return lu, pivots
}

// LU returns the LU decomposition A = P·L·U of each matrix of t with
// partial pivoting (torch.linalg.lu): P [..., m, m] a permutation matrix,
// L [..., m, k] lower triangular with unit diagonal and U [..., k, n] upper
// triangular, k = min(m, n). Gradients of L and U follow PyTorch's
// linalg_lu_backward. It fails with ErrShape for rank < 2 and ErrDType
// unless Float32 or Float64.
func (t *Tensor) LU() (p, l, u *Tensor) {
	const op = "LU"
	f := t.luFactors(op)
	m, n, k := f.m, f.n, min(f.m, f.n)
	nb := linalgBatch(f.batch)
	ph, lh, uh := make([]float64, nb*m*m), make([]float64, nb*m*k), make([]float64, nb*k*n)
	for b := range nb {
		perm := luPerm(f.piv[b*k:(b+1)*k], m)
		for i, r := range perm {
			ph[b*m*m+r*m+i] = 1
		}
		lub := f.lu[b*m*n : (b+1)*m*n]
		for i := range m {
			for j := range k {
				switch {
				case i == j:
					lh[b*m*k+i*k+j] = 1
				case i > j:
					lh[b*m*k+i*k+j] = lub[i*n+j]
				}
			}
		}
		for i := range k {
			for j := i; j < n; j++ {
				uh[b*k*n+i*n+j] = lub[i*n+j]
			}
		}
	}
	pt := hostTensor(op, t.dev.Inner(), f.dt, withMat(f.batch, m, m), ph)
	pt.dev = t.dev
	res := linalgRecord(op, "linalg_lu", nil, f.dt, []*Tensor{t}, []linalgOutput{{withMat(f.batch, m, k), lh}, {withMat(f.batch, k, n), uh}}, nil, func(g [][]float64) [][]float64 {
		return [][]float64{f.grad(g[0], g[1], false)}
	})
	return pt, res[0], res[1]
}

// luFactors is the host LU factorisation of a batch, kept for backward.
type luFactors struct {
	dt    DType
	batch []int
	m, n  int
	lu    []float64
	piv   []int // 0-based, k per matrix
}

func (t *Tensor) luFactors(op string) *luFactors {
	dt := linalgType(op, t)
	batch, m, n := linalgMatrix(op, t, false)
	a := hostFloat64s(op, t)
	nb := linalgBatch(batch)
	k := min(m, n)
	piv := make([]int, nb*k)
	parallelBatch(nb, m*n*k, func(b int) {
		luFactor(a[b*m*n:(b+1)*m*n], m, n, piv[b*k:(b+1)*k])
	})
	return &luFactors{dt: dt, batch: batch, m: m, n: n, lu: a, piv: piv}
}

// grad is PyTorch's linalg_lu_backward for A = P L U. With packed, gl is
// the gradient of the packed factor (L strictly below, U on and above).
func (f *luFactors) grad(gl, gu []float64, packed bool) []float64 {
	m, n, k := f.m, f.n, min(f.m, f.n)
	nb := linalgBatch(f.batch)
	ga := make([]float64, nb*m*n)
	parallelBatch(nb, m*n*k, func(b int) {
		lub := f.lu[b*m*n : (b+1)*m*n]
		l, u := make([]float64, m*k), make([]float64, k*n)
		gL, gU := make([]float64, m*k), make([]float64, k*n)
		for i := range m {
			for j := range k {
				if i == j {
					l[i*k+j] = 1
				} else if i > j {
					l[i*k+j] = lub[i*n+j]
					if packed {
						gL[i*k+j] = gl[b*m*n+i*n+j]
					}
				}
				if !packed {
					gL[i*k+j] = gl[b*m*k+i*k+j]
				}
			}
		}
		for i := range k {
			for j := range n {
				if j >= i {
					u[i*n+j] = lub[i*n+j]
					if packed {
						gU[i*n+j] = gl[b*m*n+i*n+j]
					}
				}
				if !packed {
					gU[i*n+j] = gu[b*k*n+i*n+j]
				}
			}
		}
		var g []float64 // m×n before the permutation
		if m <= n {
			// wide: X = tril(LᵀgL − triu(gU)·Uᵀ, −1)·U1⁻ᵀ; [X + triu(gU1) | gU2]; L⁻ᵀ·that
			x := matMul(matT(l, m, k), gL, k, m, k)
			tu := make([]float64, k*n)
			for i := range k {
				for j := i; j < n; j++ {
					tu[i*n+j] = gU[i*n+j]
				}
			}
			y := matMul(tu, matT(u, k, n), k, n, k)
			for i := range k {
				for j := range k {
					if j < i {
						x[i*k+j] -= y[i*k+j]
					} else {
						x[i*k+j] = 0
					}
				}
			}
			u1 := make([]float64, k*k)
			for i := range k {
				copy(u1[i*k:i*k+k], u[i*n:i*n+k])
			}
			// X U1ᵀ = x ⇔ U1 Xᵀ = xᵀ
			xt := matT(x, k, k)
			triSolve(u1, k, false, false, xt, k)
			x = matT(xt, k, k)
			g = make([]float64, m*n)
			for i := range m {
				for j := range n {
					if j < k {
						g[i*n+j] = x[i*k+j]
						if j >= i {
							g[i*n+j] += gU[i*n+j]
						}
					} else {
						g[i*n+j] = gU[i*n+j]
					}
				}
			}
			triSolve(l, m, true, true, g, n) // unit diagonal: l's diagonal is 1
		} else {
			// tall: X = L1⁻ᵀ·triu(gU·Uᵀ − Lᵀ·tril(gL, −1)); [X + tril(gL1, −1); gL2]·U⁻ᵀ
			tl := make([]float64, m*k)
			for i := range m {
				for j := range min(i, k) {
					tl[i*k+j] = gL[i*k+j]
				}
			}
			x := matMul(gU, matT(u, k, n), k, n, k)
			y := matMul(matT(l, m, k), tl, k, m, k)
			for i := range k {
				for j := range k {
					if j >= i {
						x[i*k+j] -= y[i*k+j]
					} else {
						x[i*k+j] = 0
					}
				}
			}
			l1 := make([]float64, k*k)
			for i := range k {
				copy(l1[i*k:i*k+k], l[i*k:i*k+k])
			}
			triSolve(l1, k, true, true, x, k)
			g = make([]float64, m*k)
			for i := range m {
				for j := range k {
					if i < k {
						g[i*k+j] = x[i*k+j] + tl[i*k+j]
					} else {
						g[i*k+j] = gL[i*k+j]
					}
				}
			}
			// G Uᵀ = g ⇔ U Gᵀ = gᵀ (U is k×k here: n = k)
			gt := matT(g, m, k)
			triSolve(u, k, false, false, gt, m)
			g = matT(gt, k, m)
		}
		perm := luPerm(f.piv[b*k:(b+1)*k], m)
		for i, r := range perm { // P·g: row i of g goes to row perm[i]
			copy(ga[b*m*n+r*n:b*m*n+r*n+n], g[i*n:i*n+n])
		}
	})
	return ga
}

// MatrixPower returns each square matrix of t raised to the integer power
// n (torch.linalg.matrix_power): the identity for n = 0 (with a zero
// gradient), repeated squaring
// with Matmul for n > 0, and the power −n of the inverse for n < 0. It is
// composed of recorded ops, so gradients flow through them. It fails as
// Inv for a negative power of a singular matrix.
func (t *Tensor) MatrixPower(n int) *Tensor {
	const op = "MatrixPower"
	linalgType(op, t)
	batch, size, _ := linalgMatrix(op, t, true)
	if n == 0 {
		eye := rawFull(op, t.dev.Inner(), t.dtype, withMat(batch, size, size), 0)
		d := rawDiagonalView(eye, 0, -2, -1)
		d.backend().Fill(d.view(), 1)
		d.Release()
		eye.dev = t.dev
		return record("linalg_matrix_power", map[string]any{"n": 0}, eye, []*Tensor{t}, func(g *Tensor) []*Tensor {
			return []*Tensor{rawFull(op, g.dev, t.dtype, t.shape, 0)}
		})
	}
	base := t
	if n < 0 {
		base = t.Inv()
		n = -n
	}
	var result *Tensor
	sq := base
	for {
		if n&1 == 1 {
			if result == nil {
				result = sq.Reshape(sq.shape...)
			} else {
				result = result.Matmul(sq)
			}
		}
		n >>= 1
		if n == 0 {
			break
		}
		sq = sq.Matmul(sq)
	}
	return result
}

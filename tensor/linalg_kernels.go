package tensor

import (
	"math"
	"sort"
)

// Host kernels of the linear-algebra ops: dense float64 matrices stored
// row-major in flat slices. They follow LAPACK's conventions where the
// result is not unique (LU pivots, the signs of Householder QR) so that
// results match PyTorch's, and use Jacobi methods (one-sided for the SVD,
// two-sided for eigh), which are slower than LAPACK's divide and conquer
// but simple and accurate to high relative precision.

// matMul returns a (m×k) · b (k×n).
func matMul(a, b []float64, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		row := out[i*n : i*n+n]
		for p := range k {
			v := a[i*k+p]
			if v == 0 {
				continue
			}
			br := b[p*n : p*n+n]
			for j := range row {
				row[j] += v * br[j]
			}
		}
	}
	return out
}

// matT returns the transpose of a (m×n).
func matT(a []float64, m, n int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			out[j*m+i] = a[i*n+j]
		}
	}
	return out
}

// matEye returns the n×n identity.
func matEye(n int) []float64 {
	out := make([]float64, n*n)
	for i := range n {
		out[i*n+i] = 1
	}
	return out
}

// luFactor factors a (m×n, overwritten) in place as P·L·U with partial
// pivoting, as LAPACK's getrf: the strictly lower part holds L (unit
// diagonal), the upper part U, and piv[j] is the row (0-based) swapped with
// row j at step j. It returns the first column whose pivot is exactly zero,
// or -1.
func luFactor(a []float64, m, n int, piv []int) int {
	zero := -1
	for j := range min(m, n) {
		p, best := j, math.Abs(a[j*n+j])
		for i := j + 1; i < m; i++ {
			if v := math.Abs(a[i*n+j]); v > best {
				p, best = i, v
			}
		}
		piv[j] = p
		if p != j {
			for c := range n {
				a[j*n+c], a[p*n+c] = a[p*n+c], a[j*n+c]
			}
		}
		d := a[j*n+j]
		if d == 0 {
			if zero < 0 {
				zero = j
			}
			continue
		}
		for i := j + 1; i < m; i++ {
			l := a[i*n+j] / d
			a[i*n+j] = l
			if l == 0 {
				continue
			}
			ri, rj := a[i*n+j+1:i*n+n], a[j*n+j+1:j*n+n]
			for c := range ri {
				ri[c] -= l * rj[c]
			}
		}
	}
	return zero
}

// luPerm returns the row permutation the pivots apply: row i of P⁻¹A is
// row perm[i] of A.
func luPerm(piv []int, m int) []int {
	perm := make([]int, m)
	for i := range perm {
		perm[i] = i
	}
	for j, p := range piv {
		perm[j], perm[p] = perm[p], perm[j]
	}
	return perm
}

// luSolve solves A X = B in place in b (n×k) given A's LU factors (n×n).
func luSolve(lu []float64, n int, piv []int, b []float64, k int) {
	for j, p := range piv {
		if p != j {
			for c := range k {
				b[j*k+c], b[p*k+c] = b[p*k+c], b[j*k+c]
			}
		}
	}
	for i := range n { // L y = Pb, unit diagonal
		bi := b[i*k : i*k+k]
		for p := range i {
			l := lu[i*n+p]
			if l == 0 {
				continue
			}
			bp := b[p*k : p*k+k]
			for c := range bi {
				bi[c] -= l * bp[c]
			}
		}
	}
	for i := n - 1; i >= 0; i-- { // U x = y
		bi := b[i*k : i*k+k]
		for p := i + 1; p < n; p++ {
			u := lu[i*n+p]
			if u == 0 {
				continue
			}
			bp := b[p*k : p*k+k]
			for c := range bi {
				bi[c] -= u * bp[c]
			}
		}
		d := lu[i*n+i]
		for c := range bi {
			bi[c] /= d
		}
	}
}

// matInverse returns the inverse of a (n×n) and the first zero pivot
// (-1 when a is invertible).
func matInverse(a []float64, n int) ([]float64, int) {
	lu := append([]float64(nil), a...)
	piv := make([]int, n)
	if z := luFactor(lu, n, n, piv); z >= 0 {
		return nil, z
	}
	x := matEye(n)
	luSolve(lu, n, piv, x, n)
	return x, -1
}

// choleskyLower returns the lower Cholesky factor of the symmetric matrix
// whose lower triangle a (n×n) holds, and the order of the first leading
// minor that is not positive definite (0 when there is none).
func choleskyLower(a []float64, n int) ([]float64, int) {
	l := make([]float64, n*n)
	for j := range n {
		s := a[j*n+j]
		for k := range j {
			s -= l[j*n+k] * l[j*n+k]
		}
		if !(s > 0) {
			return nil, j + 1
		}
		d := math.Sqrt(s)
		l[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := a[i*n+j]
			for k := range j {
				s -= l[i*n+k] * l[j*n+k]
			}
			l[i*n+j] = s / d
		}
	}
	return l, 0
}

// triSolve solves T X = B for a triangular t (n×n) in place in b (n×k):
// lower or upper, optionally with t transposed (Tᵀ X = B).
func triSolve(t []float64, n int, lower, trans bool, b []float64, k int) {
	at := func(i, j int) float64 {
		if trans {
			return t[j*n+i]
		}
		return t[i*n+j]
	}
	if lower != trans { // effective lower: forward substitution
		for i := range n {
			bi := b[i*k : i*k+k]
			for p := range i {
				if v := at(i, p); v != 0 {
					for c := range bi {
						bi[c] -= v * b[p*k+c]
					}
				}
			}
			d := at(i, i)
			for c := range bi {
				bi[c] /= d
			}
		}
		return
	}
	for i := n - 1; i >= 0; i-- {
		bi := b[i*k : i*k+k]
		for p := i + 1; p < n; p++ {
			if v := at(i, p); v != 0 {
				for c := range bi {
					bi[c] -= v * b[p*k+c]
				}
			}
		}
		d := at(i, i)
		for c := range bi {
			bi[c] /= d
		}
	}
}

// householderQR factors a (m×n) as Q·R with LAPACK's Householder
// reflections (geqrf then orgqr), so R's diagonal has LAPACK's signs. With
// complete, Q is m×m and R m×n; otherwise Q is m×k and R k×n, k = min(m, n).
func householderQR(a []float64, m, n int, complete bool) (q, r []float64, qc, rr int) {
	// w holds Aᵀ, so that each column (and its reflector) is contiguous
	w := matT(a, m, n)
	k := min(m, n)
	tau := make([]float64, k)
	for j := range k {
		col := w[j*m : j*m+m]
		alpha := col[j]
		xnorm := norm2(col[j+1:])
		if xnorm == 0 {
			continue
		}
		beta := -math.Copysign(math.Hypot(alpha, xnorm), alpha)
		tau[j] = (beta - alpha) / beta
		scale := 1 / (alpha - beta)
		v := col[j+1:]
		for i := range v {
			v[i] *= scale
		}
		col[j] = beta
		for c := j + 1; c < n; c++ {
			cc := w[c*m : c*m+m]
			s := (cc[j] + dot(v, cc[j+1:])) * tau[j]
			cc[j] -= s
			rest := cc[j+1:]
			for i := range rest {
				rest[i] -= s * v[i]
			}
		}
	}
	qc, rr = k, k
	if complete {
		qc, rr = m, m
	}
	r = make([]float64, rr*n)
	for i := range min(rr, m) {
		for j := i; j < n; j++ {
			r[i*n+j] = w[j*m+i]
		}
	}
	// qt holds Qᵀ (row c is column c of Q): Q = H₀·H₁·…·I, applied from
	// the last reflector
	qt := make([]float64, qc*m)
	for i := range min(m, qc) {
		qt[i*m+i] = 1
	}
	for j := k - 1; j >= 0; j-- {
		if tau[j] == 0 {
			continue
		}
		v := w[j*m+j+1 : j*m+m]
		for c := j; c < qc; c++ {
			qq := qt[c*m : c*m+m]
			s := (qq[j] + dot(v, qq[j+1:])) * tau[j]
			qq[j] -= s
			rest := qq[j+1:]
			for i := range rest {
				rest[i] -= s * v[i]
			}
		}
	}
	return matT(qt, qc, m), r, qc, rr
}

// norm2 returns the Euclidean norm of x without overflow or underflow in
// the squares.
func norm2(x []float64) float64 {
	var big float64
	for _, v := range x {
		big = math.Max(big, math.Abs(v))
	}
	if big == 0 || math.IsInf(big, 0) || math.IsNaN(big) {
		return big
	}
	var s float64
	for _, v := range x {
		y := v / big
		s += y * y
	}
	return big * math.Sqrt(s)
}

// symEigh returns the eigenvalues (ascending) and eigenvectors (columns
// of v, n×n) of the symmetric matrix a (n×n, overwritten): Householder
// reduction to tridiagonal form, then the implicit QL algorithm (the
// EISPACK tred2/tql2 pair, as in JAMA).
func symEigh(a []float64, n int) (vals, v []float64) {
	if n == 0 {
		return nil, nil
	}
	d, e := make([]float64, n), make([]float64, n)
	w := tred2(a, n, d, e) // rows: the columns the QL rotations combine
	tql2(w, n, d, e)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return d[order[i]] < d[order[j]] })
	vals = make([]float64, n)
	v = make([]float64, n*n)
	for c, o := range order {
		vals[c] = d[o]
		for k := range n {
			v[k*n+c] = w[o*n+k]
		}
	}
	return vals, v
}

// tred2 reduces the symmetric v (n×n, overwritten) to tridiagonal form by
// Householder similarity transformations, leaving the diagonal in d and
// the subdiagonal in e[1:], and returns the transpose of the accumulated
// transformation. It is EISPACK's tred2 with the working matrix kept in
// the upper triangle and the accumulation done on the transpose, so that
// every inner loop runs along a row.
func tred2(v []float64, n int, d, e []float64) []float64 {
	for j := range n {
		d[j] = v[j*n+n-1]
	}
	for i := n - 1; i > 0; i-- {
		var scale, h float64
		for k := range i {
			scale += math.Abs(d[k])
		}
		if scale == 0 {
			e[i] = d[i-1]
			for j := range i {
				d[j] = v[j*n+i-1]
				v[i*n+j] = 0
				v[j*n+i] = 0
			}
		} else {
			for k := range i {
				d[k] /= scale
				h += d[k] * d[k]
			}
			f := d[i-1]
			g := math.Sqrt(h)
			if f > 0 {
				g = -g
			}
			e[i] = scale * g
			h -= f * g
			d[i-1] = f - g
			for j := range i {
				e[j] = 0
			}
			for j := range i {
				f = d[j]
				v[j*n+i] = f
				row := v[j*n : j*n+i]
				g = e[j] + row[j]*f
				for k := j + 1; k < i; k++ {
					g += row[k] * d[k]
					e[k] += row[k] * f
				}
				e[j] = g
			}
			f = 0
			for j := range i {
				e[j] /= h
				f += e[j] * d[j]
			}
			hh := f / (h + h)
			for j := range i {
				e[j] -= hh * d[j]
			}
			for j := range i {
				f, g = d[j], e[j]
				row := v[j*n : j*n+i]
				for k := j; k < i; k++ {
					row[k] -= f*e[k] + g*d[k]
				}
			}
			for j := range i {
				d[j] = v[j*n+i-1]
				v[i*n+j] = 0
			}
		}
		d[i] = h
	}
	// accumulate the transformations in t = Vᵀ
	t := matT(v, n, n)
	for i := 0; i < n-1; i++ {
		t[i*n+n-1] = t[i*n+i]
		t[i*n+i] = 1
		h := d[i+1]
		if h != 0 {
			u := t[(i+1)*n : (i+1)*n+i+1]
			for k := range u {
				d[k] = u[k] / h
			}
			for j := 0; j <= i; j++ {
				tj := t[j*n : j*n+i+1]
				g := dot(u, tj)
				for k := range tj {
					tj[k] -= g * d[k]
				}
			}
		}
		for k := 0; k <= i; k++ {
			t[(i+1)*n+k] = 0
		}
	}
	for j := range n {
		d[j] = t[j*n+n-1]
		t[j*n+n-1] = 0
	}
	t[(n-1)*n+n-1] = 1
	e[0] = 0
	return t
}

// tql2 diagonalises the symmetric tridiagonal matrix (d, e[1:]) by the
// implicit QL method with shifts, applying the rotations to the rows of w
// (the transposed eigenvector matrix, so rows are contiguous).
func tql2(w []float64, n int, d, e []float64) {
	for i := 1; i < n; i++ {
		e[i-1] = e[i]
	}
	e[n-1] = 0
	var f, tst1 float64
	const eps = 2.220446049250313e-16
	for l := range n {
		tst1 = math.Max(tst1, math.Abs(d[l])+math.Abs(e[l]))
		m := l
		for m < n-1 && !(math.Abs(e[m]) <= eps*tst1) {
			m++
		}
		if m > l {
			for iter := 0; iter < 60; iter++ {
				g := d[l]
				p := (d[l+1] - g) / (2 * e[l])
				r := math.Hypot(p, 1)
				if p < 0 {
					r = -r
				}
				d[l] = e[l] / (p + r)
				d[l+1] = e[l] * (p + r)
				dl1 := d[l+1]
				h := g - d[l]
				for i := l + 2; i < n; i++ {
					d[i] -= h
				}
				f += h
				p = d[m]
				c, c2, c3 := 1.0, 1.0, 1.0
				el1 := e[l+1]
				var s, s2 float64
				for i := m - 1; i >= l; i-- {
					c3 = c2
					c2 = c
					s2 = s
					g = c * e[i]
					h = c * p
					r = math.Hypot(p, e[i])
					e[i+1] = s * r
					s = e[i] / r
					c = p / r
					p = c*d[i] - s*g
					d[i+1] = h + s*(c*g+s*d[i])
					wi, wj := w[i*n:i*n+n], w[(i+1)*n:(i+1)*n+n]
					for k := range wi {
						h = wj[k]
						wj[k] = s*wi[k] + c*h
						wi[k] = c*wi[k] - s*h
					}
				}
				p = -s * s2 * c3 * el1 * e[l] / dl1
				e[l] = s * p
				d[l] = c * p
				if !(math.Abs(e[l]) > eps*tst1) {
					break
				}
			}
		}
		d[l] += f
		e[l] = 0
	}
}

// jacobiSVD returns the thin SVD of a (m×n): u (m×k), s (k, descending)
// and vt (k×n), k = min(m, n), by one-sided Jacobi rotations on the
// columns. With full, u is m×m and vt n×n, completed with orthonormal
// columns.
func jacobiSVD(a []float64, m, n int, full bool) (u, s, vt []float64) {
	return jacobiSVDWith(a, m, n, full, false)
}

// jacobiSVDWith is jacobiSVD; precond says a is already the triangular
// factor of a QR preconditioning step.
func jacobiSVDWith(a []float64, m, n int, full, precond bool) (u, s, vt []float64) {
	if m < n {
		ut, st, vtt := jacobiSVDWith(matT(a, m, n), n, m, full, precond)
		// Aᵀ = U' S V'ᵀ, so A = V' S U'ᵀ
		u = matT(vtt, m, m)
		vt = matT(ut, n, len(ut)/n)
		return u, st, vt
	}
	if n >= 8 && !precond {
		// Jacobi on Rᵀ of A = QR converges in fewer sweeps than on A and
		// rotates vectors of length n, not m (Drmač and Veselić): with
		// Rᵀ = U' S V'ᵀ, A = (Q V') S U'ᵀ.
		q, r, _, _ := householderQR(a, m, n, false)
		ut, st, vtt := jacobiSVDWith(matT(r, n, n), n, n, false, true)
		u = matMul(q, matT(vtt, n, n), m, n, n)
		vt = matT(ut, n, n)
		if full && m > n {
			cols := make([][]float64, n)
			for c := range n {
				cols[c] = make([]float64, m)
				for i := range m {
					cols[c][i] = u[i*n+c]
				}
			}
			cols = orthoComplete(cols, m, m)
			u = make([]float64, m*m)
			for c := range m {
				for i := range m {
					u[i*m+c] = cols[c][i]
				}
			}
		}
		return u, st, vt
	}
	// g holds Aᵀ: row i is column i of A, rotated in place; w holds Vᵀ.
	g := matT(a, m, n)
	w := matEye(n)
	norms := make([]float64, n)
	for i := range n {
		norms[i] = dot(g[i*m:i*m+m], g[i*m:i*m+m])
	}
	// columns count as orthogonal at √m·ε, LAPACK's dgesvj threshold
	tol := math.Sqrt(float64(m)) * 2.220446049250313e-16
	for sweep := 0; sweep < 80; sweep++ {
		rotated := false
		for i := range n {
			norms[i] = dot(g[i*m:i*m+m], g[i*m:i*m+m])
		}
		for p := range n {
			gp := g[p*m : p*m+m]
			for q := p + 1; q < n; q++ {
				gq := g[q*m : q*m+m]
				alpha, beta := norms[p], norms[q]
				gamma := dot(gp, gq)
				if gamma == 0 || math.Abs(gamma) <= tol*math.Sqrt(alpha*beta) {
					continue
				}
				rotated = true
				zeta := (beta - alpha) / (2 * gamma)
				t := 1 / (math.Abs(zeta) + math.Sqrt(1+zeta*zeta))
				if zeta < 0 {
					t = -t
				}
				c := 1 / math.Sqrt(1+t*t)
				sn := c * t
				for i := range gp {
					x, y := gp[i], gq[i]
					gp[i] = c*x - sn*y
					gq[i] = sn*x + c*y
				}
				wp, wq := w[p*n:p*n+n], w[q*n:q*n+n]
				for i := range wp {
					x, y := wp[i], wq[i]
					wp[i] = c*x - sn*y
					wq[i] = sn*x + c*y
				}
				norms[p] -= t * gamma
				norms[q] += t * gamma
			}
		}
		if !rotated {
			break
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return norms[order[i]] > norms[order[j]] })
	uc, vr := n, n
	if full {
		uc = m
	}
	s = make([]float64, n)
	u = make([]float64, m*uc)
	vt = make([]float64, vr*n)
	var cols [][]float64
	for c, o := range order {
		s[c] = math.Sqrt(dot(g[o*m:o*m+m], g[o*m:o*m+m]))
		copy(vt[c*n:c*n+n], w[o*n:o*n+n])
		col := make([]float64, m)
		if s[c] > 0 {
			for i := range m {
				col[i] = g[o*m+i] / s[c]
			}
		}
		cols = append(cols, col)
	}
	cols = orthoComplete(cols, m, uc)
	for c := range uc {
		for i := range m {
			u[i*uc+c] = cols[c][i]
		}
	}
	return u, s, vt
}

// orthoComplete replaces the zero vectors of cols (length m each) and
// appends vectors until there are want, so that all are orthonormal:
// modified Gram–Schmidt on the standard basis, twice for stability.
func orthoComplete(cols [][]float64, m, want int) [][]float64 {
	var basis [][]float64
	var missing []int
	for i, c := range cols {
		if dot(c, c) > 0 {
			basis = append(basis, c)
		} else {
			missing = append(missing, i)
		}
	}
	for len(cols) < want {
		missing = append(missing, len(cols))
		cols = append(cols, nil)
	}
	e := 0
	for _, idx := range missing {
		for ; e < m; e++ {
			v := make([]float64, m)
			v[e] = 1
			for range 2 {
				for _, b := range basis {
					d := dot(v, b)
					for i := range v {
						v[i] -= d * b[i]
					}
				}
			}
			if nv := math.Sqrt(dot(v, v)); nv > 0.5 {
				for i := range v {
					v[i] /= nv
				}
				cols[idx] = v
				basis = append(basis, v)
				e++
				break
			}
		}
	}
	return cols
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

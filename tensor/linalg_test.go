package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// linalgFn computes a case's outputs from its inputs a, b, c.
type linalgFn func(in map[string]*tensor.Tensor) []*tensor.Tensor

func laOne(f func(a *tensor.Tensor) *tensor.Tensor) linalgFn {
	return func(in map[string]*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(in["a"])} }
}

func laTwo(f func(a, b *tensor.Tensor) *tensor.Tensor) linalgFn {
	return func(in map[string]*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{f(in["a"], in["b"])} }
}

// gaugeColumns returns (v·diag(1, 2, …))·wᵀ: unique although the columns
// of v and w are unique only up to a shared sign.
func gaugeColumns(v, wt *tensor.Tensor) *tensor.Tensor {
	k := v.Dim(-1)
	c := make([]float64, k)
	for i := range c {
		c[i] = float64(i + 1)
	}
	ct := tensor.FromFloat64s(v.Device().Inner(), c).To(v.DType())
	return v.Mul(ct).Matmul(wt)
}

func linalgTable() map[string]linalgFn {
	t := map[string]linalgFn{
		"tril_f64":             laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Tril(0) }),
		"tril_transposed":      laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Transpose(-1, -2).Tril(0) }),
		"triu_empty":           laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Triu(0) }),
		"tril_int64":           laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Tril(0) }),
		"diagonal_0":           laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diagonal(0, 0, 1) }),
		"diagonal_1":           laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diagonal(1, 0, 1) }),
		"diagonal_m2":          laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diagonal(-2, 0, 1) }),
		"diagonal_far":         laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diagonal(7, 0, 1) }),
		"diagonal_dims":        laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diagonal(1, 0, 2) }),
		"diagonal_neg_dims":    laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diagonal(-1, -1, -3) }),
		"diagonal_transposed":  laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Transpose(0, 1).Diagonal(0, -2, -1) }),
		"diag_embed_0":         laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.DiagEmbed(0, -2, -1) }),
		"diag_embed_1":         laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.DiagEmbed(1, -2, -1) }),
		"diag_embed_dims":      laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.DiagEmbed(-1, 0, 2) }),
		"diag_vector_1":        laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diag(1) }),
		"diag_vector_m2":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diag(-2) }),
		"diag_matrix_1":        laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Diag(1) }),
		"trace":                laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Trace() }),
		"trace_f64":            laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Trace() }),
		"trace_transposed":     laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.T().Trace() }),
		"cross":                laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Cross(b, -1) }),
		"cross_broadcast":      laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Cross(b, -1) }),
		"cross_dim0":           laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Cross(b, 0) }),
		"vnorm_ties_inf":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.VectorNorm(math.Inf(1), false, 1) }),
		"vnorm_dims_f64":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.VectorNorm(2, false, 0, 2) }),
		"vnorm_transposed":     laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.T().VectorNorm(2, false, -1) }),
		"vnorm_empty":          laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.VectorNorm(2, false, 0) }),
		"mnorm_keepdim_f64":    laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.MatrixNorm("nuc", true) }),
		"det":                  laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Det() }),
		"det_batch":            laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Det() }),
		"det_f64":              laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Det() }),
		"det_singular":         laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Det() }),
		"det_transposed":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Transpose(-1, -2).Det() }),
		"det_empty":            laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Det() }),
		"inv":                  laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Inv() }),
		"inv_batch_f64":        laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Inv() }),
		"inv_transposed":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Transpose(-1, -2).Inv() }),
		"inv_empty":            laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Inv() }),
		"solve_matrix":         laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Solve(b) }),
		"solve_vector":         laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Solve(b) }),
		"solve_batched_vector": laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Solve(b) }),
		"solve_broadcast":      laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Solve(b) }),
		"solve_f64":            laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Solve(b) }),
		"cholesky":             laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Cholesky(false) }),
		"cholesky_batch_f64":   laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Cholesky(false) }),
		"cholesky_upper":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Cholesky(true) }),
		"eigvalsh":             laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Eigvalsh("L") }),
		"svdvals":              laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Svdvals() }),
		"svdvals_f64":          laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Svdvals() }),
		"matrix_power_0":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.MatrixPower(0) }),
		"matrix_power_1":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.MatrixPower(1) }),
		"matrix_power_3":       laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.MatrixPower(3) }),
		"matrix_power_m2":      laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.MatrixPower(-2) }),
		"matrix_power_batch_f32": laOne(func(a *tensor.Tensor) *tensor.Tensor {
			return a.MatrixPower(2)
		}),
		"einsum_matmul":       laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("ij,jk->ik", a, b) }),
		"einsum_bmm":          laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("bij,bjk->bik", a, b) }),
		"einsum_diag":         laOne(func(a *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("ii->i", a) }),
		"einsum_trace":        laOne(func(a *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("ii", a) }),
		"einsum_outer":        laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("i,j->ij", a, b) }),
		"einsum_ellipsis":     laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("...ij,...jk->...ik", a, b) }),
		"einsum_attention":    laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("bhid,bhjd->bhij", a, b) }),
		"einsum_permute":      laOne(func(a *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("ijk->kji", a) }),
		"einsum_implicit":     laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("ij,jk", a, b) }),
		"einsum_dot":          laTwo(func(a, b *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("ij,ij->", a, b) }),
		"einsum_repeated_sum": laOne(func(a *tensor.Tensor) *tensor.Tensor { return tensor.Einsum("iij->j", a) }),
		"einsum_transposed": laTwo(func(a, b *tensor.Tensor) *tensor.Tensor {
			return tensor.Einsum("ij,jk->ik", a.T(), b)
		}),
		"einsum_three": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{tensor.Einsum("ij,jk,kl->il", in["a"], in["b"], in["c"])}
		},
		"slogdet": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			s, l := in["a"].Slogdet()
			return []*tensor.Tensor{s, l}
		},
		"qr_complete_tall": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			q, r := in["a"].QR("complete")
			return []*tensor.Tensor{q, r}
		},
		"qr_complete_wide": func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			q, r := in["a"].QR("complete")
			return []*tensor.Tensor{q, r}
		},
	}
	t["slogdet_f32"] = t["slogdet"]
	for _, k := range []int{0, 1, -1, 5} {
		t[fmt.Sprintf("tril_%d", k)] = laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Tril(k) })
		t[fmt.Sprintf("triu_%d", k)] = laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.Triu(k) })
	}
	for tag, ord := range map[string]float64{"2": 2, "1": 1, "inf": math.Inf(1), "ninf": math.Inf(-1), "0": 0, "3": 3, "0_5": 0.5, "1_5": 1.5} {
		t["vnorm_"+tag] = laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.VectorNorm(ord, false) })
		t["vnorm_dim_"+tag] = laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.VectorNorm(ord, true, -1) })
	}
	for tag, ord := range map[string]float64{"2": 2, "1_5": 1.5, "3": 3, "inf": math.Inf(1)} {
		t["vnorm_zero_"+tag] = laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.VectorNorm(ord, false, 1) })
	}
	for tag, ord := range map[string]string{"fro": "fro", "nuc": "nuc", "1": "1", "m1": "-1", "2": "2", "m2": "-2", "inf": "inf", "minf": "-inf"} {
		t["mnorm_"+tag] = laOne(func(a *tensor.Tensor) *tensor.Tensor { return a.MatrixNorm(ord, false) })
	}
	for _, name := range []string{"qr_tall", "qr_wide", "qr_square_batch"} {
		t[name] = func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			q, r := in["a"].QR("reduced")
			return []*tensor.Tensor{q, r}
		}
	}
	for _, name := range []string{"lu_factor", "lu_factor_tall", "lu_factor_wide"} {
		t[name] = func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			lu, piv := in["a"].LUFactor()
			return []*tensor.Tensor{lu, piv}
		}
	}
	for _, name := range []string{"lu", "lu_tall", "lu_wide"} {
		t[name] = func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			p, l, u := in["a"].LU()
			return []*tensor.Tensor{p, l, u}
		}
	}
	eigh := func(uplo string) linalgFn {
		return func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			w, v := in["a"].Eigh(uplo)
			return []*tensor.Tensor{w, gaugeColumns(v, v.Transpose(-1, -2))}
		}
	}
	t["eigh"], t["eigh_upper"], t["eigh_lower_raw"] = eigh("L"), eigh("U"), eigh("L")
	t["svdvals_large_f32"], t["svdvals_rank3"] = t["svdvals"], t["svdvals"]
	t["eigh_large"] = eigh("L")
	for _, name := range []string{"svd_tall", "svd_wide", "svd_square_batch", "svd_large"} {
		t[name] = func(in map[string]*tensor.Tensor) []*tensor.Tensor {
			u, s, vh := in["a"].SVD(false)
			return []*tensor.Tensor{s, gaugeColumns(u, vh)}
		}
	}
	return t
}

// TestLinalgFixtures checks every case of testdata/linalg.json (written by
// testdata/gen_linalg.py with PyTorch 1.13) on every test device: output
// values and dtypes, and the gradients of Σ sum(out_i · w_i).
func TestLinalgFixtures(t *testing.T) {
	cases := loadFixtures(t, "linalg.json")
	table := linalgTable()
	var names []string
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		fn, ok := table[name]
		if !ok {
			t.Errorf("fixture case %s has no Go function", name)
			continue
		}
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				ad := dev.Autodiff()
				in := map[string]*tensor.Tensor{}
				for _, k := range []string{"a", "b", "c"} {
					f, ok := c[k]
					if !ok {
						continue
					}
					x := f.Tensor(ad)
					if _, g := c["grad_"+k]; g {
						x.RequireGrad()
					}
					in[k] = x
				}
				outs := fn(in)
				var loss *tensor.Tensor
				for i, o := range outs {
					want := c[fmt.Sprintf("out_%d", i)]
					rtol, atol := linalgTolerance(want.DType)
					if o.DType().String() != want.DType {
						t.Errorf("out_%d: dtype %s, want %s", i, o.DType(), want.DType)
					}
					assertClose(t, fmt.Sprintf("out_%d", i), o, want, rtol, atol)
					if w, ok := c[fmt.Sprintf("w_%d", i)]; ok && o.RequiresGrad() {
						term := o.Mul(w.Tensor(ad)).Sum()
						if loss == nil {
							loss = term
						} else {
							loss = loss.Add(term)
						}
					}
				}
				if loss == nil {
					return
				}
				grads := loss.Backward()
				for k, x := range in {
					want, ok := c["grad_"+k]
					if !ok {
						continue
					}
					g := grads.Get(x)
					if g == nil {
						t.Errorf("grad_%s: none", k)
						continue
					}
					rtol, atol := linalgTolerance(want.DType)
					assertClose(t, "grad_"+k, g, want, rtol*10, atol*10)
				}
			})
		})
	}
}

func linalgTolerance(dtype string) (rtol, atol float64) {
	if dtype == "float64" {
		return 1e-9, 1e-9
	}
	return 2e-5, 2e-5
}

// TestLinalgGradients checks the backward rules against finite differences
// in float64, through transposed and broadcast views where they apply.
func TestLinalgGradients(t *testing.T) {
	sym := func(x *tensor.Tensor) *tensor.Tensor { return x.Add(x.Transpose(-1, -2)) }
	spd := func(x *tensor.Tensor) *tensor.Tensor {
		n := x.Dim(-1)
		eye := tensor.EyeOf(x.Device().Inner(), tensor.Float64, n, n).MulScalar(float64(n))
		return x.Matmul(x.Transpose(-1, -2)).Add(eye)
	}
	rnd := func(seed uint64, shape ...int) func(dev tensor.Device) []*tensor.Tensor {
		return func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(dev, seed, -1, 1, shape...)}
		}
	}
	rnd2 := func(seed uint64, s1, s2 []int) func(dev tensor.Device) []*tensor.Tensor {
		return func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(dev, seed, -1, 1, s1...), randFloat64(dev, seed+1, -1, 1, s2...)}
		}
	}
	runGradCases(t, []gradCase{
		{"det", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Det() }, rnd(1, 2, 3, 3)},
		{"slogdet", func(in []*tensor.Tensor) *tensor.Tensor { _, l := in[0].Slogdet(); return l }, rnd(2, 3, 3)},
		{"inv_transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Inv() }, rnd(3, 2, 3, 3)},
		{"solve_broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Solve(in[1]) }, rnd2(4, []int{2, 1, 3, 3}, []int{4, 3, 2})},
		{"solve_vector", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Solve(in[1]) }, rnd2(5, []int{3, 3}, []int{3})},
		{"cholesky", func(in []*tensor.Tensor) *tensor.Tensor { return spd(in[0]).Cholesky(false) }, rnd(6, 2, 3, 3)},
		{"cholesky_upper", func(in []*tensor.Tensor) *tensor.Tensor { return spd(in[0]).Cholesky(true) }, rnd(7, 3, 3)},
		{"qr_tall_q", func(in []*tensor.Tensor) *tensor.Tensor { q, _ := in[0].QR(""); return q }, rnd(8, 4, 3)},
		{"qr_tall_r", func(in []*tensor.Tensor) *tensor.Tensor { _, r := in[0].QR(""); return r }, rnd(9, 4, 3)},
		{"qr_wide", func(in []*tensor.Tensor) *tensor.Tensor {
			q, r := in[0].QR("")
			return q.Sum().Add(r.MulScalar(0.5).Sum())
		}, rnd(10, 3, 4)},
		{"lu_factor", func(in []*tensor.Tensor) *tensor.Tensor { lu, _ := in[0].LUFactor(); return lu }, rnd(11, 3, 3)},
		{"lu_tall", func(in []*tensor.Tensor) *tensor.Tensor { _, l, u := in[0].LU(); return l.Sum().Add(u.Sum()) }, rnd(12, 4, 3)},
		{"lu_wide", func(in []*tensor.Tensor) *tensor.Tensor { _, l, u := in[0].LU(); return l.Sum().Add(u.Sum()) }, rnd(13, 3, 4)},
		{"eigh", func(in []*tensor.Tensor) *tensor.Tensor {
			w, v := sym(in[0]).Eigh("L")
			return w.Sum().Add(gaugeColumns(v, v.Transpose(-1, -2)).Sum())
		}, rnd(14, 3, 3)},
		{"eigvalsh", func(in []*tensor.Tensor) *tensor.Tensor { return sym(in[0]).Eigvalsh("U") }, rnd(15, 2, 3, 3)},
		{"svd_tall", func(in []*tensor.Tensor) *tensor.Tensor {
			u, s, vh := in[0].SVD(false)
			return s.Sum().Add(gaugeColumns(u, vh).Sum())
		}, rnd(16, 4, 3)},
		{"svd_wide", func(in []*tensor.Tensor) *tensor.Tensor {
			u, s, vh := in[0].SVD(false)
			return s.Sum().Add(gaugeColumns(u, vh).Sum())
		}, rnd(17, 2, 3)},
		{"svdvals", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Svdvals() }, rnd(18, 3, 4)},
		{"vector_norm_2", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].VectorNorm(2, false, -1) }, rnd(19, 3, 4)},
		{"vector_norm_3", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].VectorNorm(3, true, 0) }, rnd(20, 3, 4)},
		{"vector_norm_0_5", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].VectorNorm(0.5, false) }, rnd(21, 3, 4)},
		{"matrix_norm_nuc", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].MatrixNorm("nuc", false) }, rnd(22, 2, 3, 4)},
		{"matrix_norm_inf", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].MatrixNorm("inf", true) }, rnd(23, 2, 3, 4)},
		{"matrix_power_m3", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].MatrixPower(-3) }, rnd(24, 3, 3)},
		{"tril_transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Tril(-1) }, rnd(25, 3, 4)},
		{"diag_embed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].DiagEmbed(1, 0, 2) }, rnd(26, 2, 3)},
		{"diagonal", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Diagonal(-1, 2, 0) }, rnd(27, 3, 2, 4)},
		{"cross", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cross(in[1], 1) }, rnd2(28, []int{2, 3}, []int{1, 3})},
		{"einsum_ellipsis", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Einsum("...ij,...jk->...ik", in[0], in[1])
		}, rnd2(29, []int{2, 1, 2, 3}, []int{4, 3, 2})},
		{"einsum_diagonal", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Einsum("iji->j", in[0]) }, rnd(30, 3, 2, 3)},
	})
}

// TestLinalgInvariants checks what is unique about the decompositions
// whose vectors are not: reconstruction, orthogonality, triangularity and
// order, for full matrices too, on float32 and float64.
func TestLinalgInvariants(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			tol := 1e-4
			if dt == tensor.Float64 {
				tol = 1e-10
			}
			low := randFloat64(dev, 3, -1, 1, 12, 2).Matmul(randFloat64(dev, 4, -1, 1, 2, 9))
			inputs := []*tensor.Tensor{low.To(dt)} // rank 2: zero singular values, columns completed
			for _, shape := range [][]int{{5, 3}, {3, 5}, {2, 4, 4}, {6, 1}, {1, 6}, {12, 9}, {9, 12}, {2, 10, 10}, {0, 3}, {3, 0}, {2, 0, 0}} {
				inputs = append(inputs, randFloat64(dev, 1, -1, 1, shape...).To(dt))
			}
			for _, a := range inputs {
				shape := a.Shape()
				m, n := shape[len(shape)-2], shape[len(shape)-1]
				for _, full := range []bool{false, true} {
					u, s, vh := a.SVD(full)
					k := min(m, n)
					us := u.Narrow(-1, 0, k).Mul(s.Unsqueeze(-2))
					assertNear(t, fmt.Sprintf("%v %v full=%v U S Vh", dt, shape, full), us.Matmul(vh.Narrow(-2, 0, k)), a, tol)
					assertOrthonormal(t, fmt.Sprintf("%v %v U", dt, shape), u, tol)
					assertOrthonormal(t, fmt.Sprintf("%v %v V", dt, shape), vh.Transpose(-1, -2), tol)
					sv := s.Float64s()
					for i := 1; i < len(sv); i++ {
						if i%k != 0 && sv[i] > sv[i-1] {
							t.Errorf("%v singular values not descending: %v", shape, sv)
						}
					}
				}
				for _, mode := range []string{"reduced", "complete"} {
					q, r := a.QR(mode)
					assertNear(t, fmt.Sprintf("%v %v %s Q R", dt, shape, mode), q.Matmul(r), a, tol)
					assertOrthonormal(t, fmt.Sprintf("%v %v %s Q", dt, shape, mode), q, tol)
					assertNear(t, "R upper", r.Triu(0), r, 0)
				}
				p, l, u := a.LU()
				assertNear(t, fmt.Sprintf("%v %v P L U", dt, shape), p.Matmul(l).Matmul(u), a, tol)
			}
			x := randFloat64(dev, 2, -1, 1, 3, 5, 5).To(dt)
			sym := x.Add(x.Transpose(-1, -2))
			w, v := sym.Eigh("U")
			assertNear(t, fmt.Sprintf("%v V diag(w) Vᵀ", dt), v.Mul(w.Unsqueeze(-2)).Matmul(v.Transpose(-1, -2)), sym, tol*10)
			assertOrthonormal(t, "eigenvectors", v, tol)
		}
	})
}

func assertNear(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	assertValues(t, what, got, want.Shape(), want.Float64s(), tol, tol)
}

// assertOrthonormal checks that the columns of q are orthonormal.
func assertOrthonormal(t *testing.T, what string, q *tensor.Tensor, tol float64) {
	t.Helper()
	k := q.Dim(-1)
	qtq := q.Transpose(-1, -2).Matmul(q)
	eye := tensor.EyeOf(q.Device().Inner(), q.DType(), k, k).Expand(qtq.Shape()...)
	assertNear(t, what+" orthonormal", qtq, eye, tol)
}

// TestLinalgErrors checks that bad inputs fail with typed errors naming the
// op and what was wrong.
func TestLinalgErrors(t *testing.T) {
	dev := tensor.CPU()
	sing := tensor.FromFloat64s(dev, []float64{1, 0, 0, 1, 1, 2, 2, 4}, 2, 2, 2)
	notPD := tensor.FromFloat64s(dev, []float64{4, 0, 0, 9, 1, 2, 2, 1}, 2, 2, 2)
	m23 := tensor.Zeros(dev, 2, 3)
	cases := []struct {
		name string
		f    func()
		err  error
		msg  []string
	}{
		{"inv singular names the batch element", func() { sing.Inv() }, tensor.ErrArgument, []string{"tensor.Inv", "batch element 1", "singular"}},
		{"solve singular", func() { sing.Solve(tensor.OnesOf(dev, tensor.Float64, 2, 2)) }, tensor.ErrArgument, []string{"tensor.Solve", "batch element 1"}},
		{"cholesky not positive definite", func() { notPD.Cholesky(false) }, tensor.ErrArgument, []string{"tensor.Cholesky", "batch element 1", "order 2"}},
		{"det of a non-square matrix", func() { m23.Det() }, tensor.ErrShape, []string{"tensor.Det", "[2 3]"}},
		{"inv of a vector", func() { tensor.Zeros(dev, 3).Inv() }, tensor.ErrShape, []string{"tensor.Inv", "rank"}},
		{"svd of int64", func() { tensor.FromInt64s(dev, []int64{1, 2, 3, 4}, 2, 2).SVD(false) }, tensor.ErrDType, []string{"tensor.SVD", "int64"}},
		{"solve sizes", func() { tensor.Eye(dev, 3, 3).Solve(tensor.Zeros(dev, 2, 2)) }, tensor.ErrShape, []string{"tensor.Solve"}},
		{"qr mode", func() { m23.QR("r") }, tensor.ErrArgument, []string{"tensor.QR", "mode"}},
		{"eigh uplo", func() { tensor.Eye(dev, 2, 2).Eigh("X") }, tensor.ErrArgument, []string{"tensor.Eigh", "uplo"}},
		{"diagonal same dims", func() { m23.Diagonal(0, 1, -1) }, tensor.ErrArgument, []string{"tensor.Diagonal"}},
		{"diagonal dim out of range", func() { m23.Diagonal(0, 0, 2) }, tensor.ErrArgument, []string{"Diagonal"}},
		{"tril of a vector", func() { tensor.Zeros(dev, 3).Tril(0) }, tensor.ErrShape, []string{"tensor.Tril"}},
		{"cross size", func() { m23.Cross(tensor.Zeros(dev, 2, 3), 0) }, tensor.ErrShape, []string{"tensor.Cross", "want 3"}},
		{"matrix norm ord", func() { m23.MatrixNorm("3", false) }, tensor.ErrArgument, []string{"tensor.MatrixNorm"}},
		{"vector norm of ints", func() { tensor.FromInt64s(dev, []int64{1}).VectorNorm(2, false) }, tensor.ErrDType, []string{"tensor.VectorNorm"}},
		{"einsum terms", func() { tensor.Einsum("ij,jk->ik", m23) }, tensor.ErrArgument, []string{"tensor.Einsum", "2 terms for 1 operands"}},
		{"einsum rank", func() { tensor.Einsum("ijk->i", m23) }, tensor.ErrShape, []string{"tensor.Einsum"}},
		{"einsum sizes", func() { tensor.Einsum("ij,ij->i", m23, tensor.Zeros(dev, 3, 2)) }, tensor.ErrShape, []string{"tensor.Einsum", "sizes"}},
		{"qr complete tall is not differentiable", func() {
			a := tensor.Ones(dev.Autodiff(), 3, 2).RequireGrad()
			q, _ := a.QR("complete")
			q.Sum().Backward()
		}, tensor.ErrArgument, []string{"tensor.QR", "not differentiable"}},
		{"einsum output label", func() { tensor.Einsum("ij->k", m23) }, tensor.ErrArgument, []string{"tensor.Einsum", "no operand"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Try(c.f)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.err) {
				t.Errorf("error %v does not match %v", err, c.err)
			}
			for _, m := range c.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

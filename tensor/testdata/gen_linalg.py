"""Writes testdata/linalg.json: PyTorch 1.13 references for Kiln's linear
algebra (tensor/linalg_*.go, tensor/einsum.go): norms, det, slogdet, inv,
solve, Cholesky, QR, LU, SVD, eigh, matrix powers, triangles, diagonals,
trace, cross and einsum.

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_linalg.py

Each case holds its inputs (a, b), its outputs (out_0, out_1, ...), one
random weight tensor per float output (w_0, w_1, ...) and the gradients
grad_a, grad_b of sum_i (out_i * w_i).sum(). The Go test applies the same
function (named by the case) and compares all of them.

Outputs that are unique only up to sign (eigenvectors, singular vectors)
are never stored raw: those cases return gauge-invariant functions of them
(V diag(c) V^T, U diag(c) Vh with c = 1, 2, ...), whose values and
gradients are unique. QR and LU follow LAPACK's conventions, which Kiln
reproduces, so their factors are compared directly.
"""
import torch

from fixtures import dump

torch.manual_seed(0)
cases = {}
F32, F64 = torch.float32, torch.float64


def rnd(*shape, dtype=F32, lo=-2.0, hi=2.0):
    return (torch.rand(tuple(shape), dtype=F64) * (hi - lo) + lo).to(dtype)


def spd(n, batch=(), dtype=F32):
    x = torch.rand(*batch, n, n, dtype=F64) * 2 - 1
    return (x @ x.transpose(-1, -2) + n * torch.eye(n, dtype=F64)).to(dtype)


def add(name, fn, grad=True, **inputs):
    """Records fn(**inputs) and the gradients of the weighted sum of its
    float outputs with respect to the float inputs."""
    ins = {k: (v.clone().requires_grad_(grad) if v.dtype.is_floating_point else v) for k, v in inputs.items()}
    outs = fn(**ins)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    case = {k: v for k, v in inputs.items()}
    loss = None
    for i, o in enumerate(outs):
        case["out_%d" % i] = o.detach()
        if o.dtype.is_floating_point:
            w = rnd(*o.shape, dtype=o.dtype)
            case["w_%d" % i] = w
            if grad and o.requires_grad:
                term = (o * w).sum()
                loss = term if loss is None else loss + term
    if grad and loss is not None:
        loss.backward()
        for k, v in ins.items():
            if v.dtype.is_floating_point:
                case["grad_" + k] = v.grad if v.grad is not None else torch.zeros_like(v)
    cases[name] = case


# ------------------------------------------------------------- triangles

x = rnd(2, 3, 4)
for k in (0, 1, -1, 5):
    add("tril_%d" % k, lambda a, k=k: torch.tril(a, k), a=x)
    add("triu_%d" % k, lambda a, k=k: torch.triu(a, k), a=x)
add("tril_f64", lambda a: torch.tril(a, 0), a=rnd(3, 3, dtype=F64))
add("tril_transposed", lambda a: torch.tril(a.transpose(-1, -2), 0), a=rnd(4, 3))
add("triu_empty", lambda a: torch.triu(a, 0), a=rnd(2, 0, 3))
add("tril_int64", lambda a: torch.tril(a, 0), grad=False, a=torch.arange(12).reshape(3, 4))

# ------------------------------------------------------------- diagonals

x = rnd(3, 4)
add("diagonal_0", lambda a: torch.diagonal(a, 0, 0, 1), a=x)
add("diagonal_1", lambda a: torch.diagonal(a, 1, 0, 1), a=x)
add("diagonal_m2", lambda a: torch.diagonal(a, -2, 0, 1), a=x)
add("diagonal_far", lambda a: torch.diagonal(a, 7, 0, 1), a=x)
y = rnd(2, 3, 4, dtype=F64)
add("diagonal_dims", lambda a: torch.diagonal(a, 1, 0, 2), a=y)
add("diagonal_neg_dims", lambda a: torch.diagonal(a, -1, -1, -3), a=y)
add("diagonal_transposed", lambda a: torch.diagonal(a.transpose(0, 1), 0, -2, -1), a=x)
add("diag_embed_0", lambda a: torch.diag_embed(a, 0, -2, -1), a=rnd(2, 3))
add("diag_embed_1", lambda a: torch.diag_embed(a, 1, -2, -1), a=rnd(2, 3))
add("diag_embed_dims", lambda a: torch.diag_embed(a, -1, 0, 2), a=rnd(2, 3, dtype=F64))
add("diag_vector_1", lambda a: torch.diag(a, 1), a=rnd(3))
add("diag_vector_m2", lambda a: torch.diag(a, -2), a=rnd(3))
add("diag_matrix_1", lambda a: torch.diag(a, 1), a=x)
add("trace", lambda a: torch.trace(a), a=x)
add("trace_f64", lambda a: torch.trace(a), a=rnd(4, 4, dtype=F64))
add("trace_transposed", lambda a: torch.trace(a.t()), a=x)

# ------------------------------------------------------------- cross

add("cross", lambda a, b: torch.linalg.cross(a, b), a=rnd(4, 3), b=rnd(4, 3))
add("cross_broadcast", lambda a, b: torch.linalg.cross(a, b), a=rnd(2, 1, 3), b=rnd(1, 4, 3))
add("cross_dim0", lambda a, b: torch.linalg.cross(a, b, dim=0), a=rnd(3, 5, dtype=F64), b=rnd(3, 5, dtype=F64))

# ------------------------------------------------------------- norms

x = rnd(3, 4)
for ordv, tag in ((2, "2"), (1, "1"), (float("inf"), "inf"), (float("-inf"), "ninf"), (0, "0"),
                  (3, "3"), (0.5, "0_5"), (1.5, "1_5")):
    add("vnorm_" + tag, lambda a, o=ordv: torch.linalg.vector_norm(a, o), a=x)
    add("vnorm_dim_" + tag, lambda a, o=ordv: torch.linalg.vector_norm(a, o, dim=-1, keepdim=True), a=x)
z = torch.tensor([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0]], dtype=F64)
for ordv, tag in ((2, "2"), (1.5, "1_5"), (3, "3"), (float("inf"), "inf")):
    add("vnorm_zero_" + tag, lambda a, o=ordv: torch.linalg.vector_norm(a, o, dim=1), a=z)
add("vnorm_ties_inf", lambda a: torch.linalg.vector_norm(a, float("inf"), dim=1),
    a=torch.tensor([[1.0, -3.0, 3.0], [2.0, 2.0, -2.0]]))
add("vnorm_dims_f64", lambda a: torch.linalg.vector_norm(a, 2, dim=(0, 2)), a=rnd(2, 3, 4, dtype=F64))
add("vnorm_transposed", lambda a: torch.linalg.vector_norm(a.t(), 2, dim=-1), a=x)
add("vnorm_empty", lambda a: torch.linalg.vector_norm(a, 2, dim=0), a=rnd(0, 3))
y = rnd(2, 3, 4)
for ordv in ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")):
    tag = str(ordv).replace("-", "m")
    add("mnorm_" + tag, lambda a, o=ordv: torch.linalg.matrix_norm(a, o), a=y)
add("mnorm_keepdim_f64", lambda a: torch.linalg.matrix_norm(a, "nuc", keepdim=True), a=rnd(2, 4, 3, dtype=F64))

# ------------------------------------------------------------- det, inv, solve

add("det", lambda a: torch.linalg.det(a), a=rnd(3, 3))
add("det_batch", lambda a: torch.linalg.det(a), a=rnd(2, 3, 4, 4))
add("det_f64", lambda a: torch.linalg.det(a), a=rnd(5, 5, dtype=F64))
add("det_singular", lambda a: torch.linalg.det(a),
    a=torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], dtype=F64))
add("det_transposed", lambda a: torch.linalg.det(a.transpose(-1, -2)), a=rnd(2, 3, 3))
add("det_empty", lambda a: torch.linalg.det(a), a=rnd(2, 0, 0))
add("slogdet", lambda a: torch.linalg.slogdet(a), a=rnd(2, 4, 4, dtype=F64))
add("slogdet_f32", lambda a: torch.linalg.slogdet(a), a=rnd(3, 3))
add("inv", lambda a: torch.linalg.inv(a), a=rnd(4, 4) + 3 * torch.eye(4))
add("inv_batch_f64", lambda a: torch.linalg.inv(a), a=rnd(2, 3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64))
add("inv_transposed", lambda a: torch.linalg.inv(a.transpose(-1, -2)), a=rnd(3, 3) + 2 * torch.eye(3))
add("inv_empty", lambda a: torch.linalg.inv(a), a=rnd(0, 3, 3))
add("solve_matrix", lambda a, b: torch.linalg.solve(a, b), a=rnd(3, 3) + 2 * torch.eye(3), b=rnd(3, 2))
add("solve_vector", lambda a, b: torch.linalg.solve(a, b), a=rnd(3, 3) + 2 * torch.eye(3), b=rnd(3))
add("solve_batched_vector", lambda a, b: torch.linalg.solve(a, b),
    a=rnd(2, 3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64), b=rnd(2, 3, dtype=F64))
add("solve_broadcast", lambda a, b: torch.linalg.solve(a, b),
    a=rnd(2, 1, 3, 3) + 2 * torch.eye(3), b=rnd(4, 3, 2))
add("solve_f64", lambda a, b: torch.linalg.solve(a, b), a=rnd(5, 5, dtype=F64), b=rnd(5, 3, dtype=F64))

# ------------------------------------------------------------- Cholesky

add("cholesky", lambda a: torch.linalg.cholesky(a), a=spd(4))
add("cholesky_batch_f64", lambda a: torch.linalg.cholesky(a), a=spd(3, (2,), F64))
add("cholesky_upper", lambda a: torch.linalg.cholesky(a, upper=True), a=spd(4, (), F64))

# ------------------------------------------------------------- QR

add("qr_tall", lambda a: torch.linalg.qr(a), a=rnd(5, 3))
add("qr_wide", lambda a: torch.linalg.qr(a), a=rnd(3, 5, dtype=F64))
add("qr_square_batch", lambda a: torch.linalg.qr(a), a=rnd(2, 4, 4, dtype=F64))
add("qr_complete_wide", lambda a: torch.linalg.qr(a, mode="complete"), a=rnd(3, 5, dtype=F64))
add("qr_complete_tall", lambda a: torch.linalg.qr(a, mode="complete"), grad=False, a=rnd(5, 3, dtype=F64))

# ------------------------------------------------------------- LU

add("lu_factor", lambda a: torch.linalg.lu_factor(a), a=rnd(4, 4))
add("lu_factor_tall", lambda a: torch.linalg.lu_factor(a), a=rnd(5, 3, dtype=F64))
add("lu_factor_wide", lambda a: torch.linalg.lu_factor(a), a=rnd(2, 3, 5, dtype=F64))
add("lu", lambda a: torch.linalg.lu(a), a=rnd(4, 4, dtype=F64))
add("lu_tall", lambda a: torch.linalg.lu(a), a=rnd(5, 3, dtype=F64))
add("lu_wide", lambda a: torch.linalg.lu(a), a=rnd(3, 5))

# ------------------------------------------------------------- eigh and SVD


def eigh_inv(a, uplo="L"):
    w, v = torch.linalg.eigh(a, UPLO=uplo)
    c = torch.arange(1, v.shape[-1] + 1, dtype=v.dtype)
    return w, (v * c) @ v.transpose(-1, -2)


def svd_inv(a):
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    c = torch.arange(1, s.shape[-1] + 1, dtype=s.dtype)
    return s, (u * c) @ vh


sym = rnd(4, 4)
sym = sym + sym.t()
add("eigh", eigh_inv, a=sym)
add("eigh_upper", lambda a: eigh_inv(a, "U"), a=rnd(4, 4, dtype=F64))
add("eigh_lower_raw", lambda a: eigh_inv(a, "L"), a=rnd(2, 3, 3, dtype=F64))
add("eigvalsh", lambda a: torch.linalg.eigvalsh(a), a=rnd(2, 5, 5, dtype=F64))
add("svd_tall", svd_inv, a=rnd(5, 3))
add("svd_wide", svd_inv, a=rnd(3, 5, dtype=F64))
add("svd_square_batch", svd_inv, a=rnd(2, 4, 4, dtype=F64))
add("svdvals", lambda a: torch.linalg.svdvals(a), a=rnd(2, 3, 5))
add("svdvals_f64", lambda a: torch.linalg.svdvals(a), a=rnd(6, 4, dtype=F64))
# larger matrices take Kiln's QR-preconditioned Jacobi path (n >= 8)
add("svd_large", svd_inv, a=rnd(9, 12, dtype=F64))
add("svdvals_large_f32", lambda a: torch.linalg.svdvals(a), a=rnd(2, 20, 10))
low = rnd(10, 3, dtype=F64) @ rnd(3, 10, dtype=F64)
add("svdvals_rank3", lambda a: torch.linalg.svdvals(a), grad=False, a=low)
big = rnd(12, 12, dtype=F64)
add("eigh_large", eigh_inv, a=big + big.t())

# ------------------------------------------------------------- matrix power

m = rnd(3, 3, dtype=F64) + 2 * torch.eye(3, dtype=F64)
for n in (0, 1, 3, -2):
    add("matrix_power_%s" % str(n).replace("-", "m"), lambda a, n=n: torch.linalg.matrix_power(a, n), a=m)
add("matrix_power_batch_f32", lambda a: torch.linalg.matrix_power(a, 2), a=rnd(2, 3, 3))

# ------------------------------------------------------------- einsum

add("einsum_matmul", lambda a, b: torch.einsum("ij,jk->ik", a, b), a=rnd(2, 3), b=rnd(3, 4))
add("einsum_bmm", lambda a, b: torch.einsum("bij,bjk->bik", a, b), a=rnd(2, 2, 3, dtype=F64), b=rnd(2, 3, 4, dtype=F64))
add("einsum_diag", lambda a: torch.einsum("ii->i", a), a=rnd(3, 3))
add("einsum_trace", lambda a: torch.einsum("ii", a), a=rnd(3, 3))
add("einsum_outer", lambda a, b: torch.einsum("i,j->ij", a, b), a=rnd(3), b=rnd(4))
add("einsum_ellipsis", lambda a, b: torch.einsum("...ij,...jk->...ik", a, b), a=rnd(2, 1, 3, 4), b=rnd(5, 4, 2))
add("einsum_attention", lambda a, b: torch.einsum("bhid,bhjd->bhij", a, b), a=rnd(2, 2, 3, 4), b=rnd(2, 2, 5, 4))
add("einsum_permute", lambda a: torch.einsum("ijk->kji", a), a=rnd(2, 3, 4))
add("einsum_implicit", lambda a, b: torch.einsum("ij,jk", a, b), a=rnd(2, 3), b=rnd(3, 4))
add("einsum_dot", lambda a, b: torch.einsum("ij,ij->", a, b), a=rnd(2, 3), b=rnd(2, 3))
add("einsum_three", lambda a, b, c: torch.einsum("ij,jk,kl->il", a, b, c), a=rnd(2, 3), b=rnd(3, 4), c=rnd(4, 2))
add("einsum_repeated_sum", lambda a: torch.einsum("iij->j", a), a=rnd(3, 3, 2))
add("einsum_transposed", lambda a, b: torch.einsum("ij,jk->ik", a.t(), b), a=rnd(3, 2), b=rnd(3, 4))

dump("linalg", cases)

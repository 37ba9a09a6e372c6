"""Writes testdata/elementwise2.json: PyTorch 1.13 reference values for
Kiln's inverse and hyperbolic trigonometry (trig.go), selection ops
(select_ops.go), counting, bitwise ops (bitwise.go), logcumsumexp
(logcumsumexp.go) and statistics (stats.go).

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_elementwise2.py

Each case holds its inputs (x, a, b, mask, …) and its expected outputs
(out, values, indices, grad_*). Gradient cases ("grad_*") hold inputs
in_0, in_1, … and the gradients PyTorch's backward gives for them, seeded
with ones. Cases whose name ends in "_t" feed the op a transposed view of
their input (the Go test transposes x before the op), to check
non-contiguous inputs.
"""
import math

import numpy as np
import torch

from fixtures import dump

torch.manual_seed(0)
nan, inf = math.nan, math.inf
cases = {}


def f32(*v):
    return torch.tensor(v, dtype=torch.float32)


def f64(*v):
    return torch.tensor(v, dtype=torch.float64)


def i64(*v):
    return torch.tensor(v, dtype=torch.int64)


def rnd(*shape, lo=-2.0, hi=2.0, dtype=torch.float32):
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def grads(fn, *inputs):
    ts = [t.clone().requires_grad_(True) for t in inputs]
    out = fn(*ts)
    out.backward(torch.ones_like(out))
    return {("grad_%d" % k): t.grad for k, t in enumerate(ts)}


def gcase(name, fn, *inputs):
    d = {("in_%d" % k): t for k, t in enumerate(inputs)}
    d.update(grads(fn, *inputs))
    cases["grad_" + name] = d


# ------------------------------------------------- inverse and hyperbolic trig

SPECIAL = [nan, inf, -inf, 0.0, -0.0, 0.5, -0.5, 0.999, -1.0, 1.0, 1.5, -2.5, 1e-3, 3.0, -7.25, 100.0]
TRIG = {"asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
        "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh}
for name, fn in TRIG.items():
    for dt, mk in (("f32", f32), ("f64", f64)):
        x = mk(*SPECIAL)
        cases["trig_%s_%s" % (name, dt)] = {"x": x, "out": fn(x)}
    x = i64(-2, -1, 0, 1, 2)
    cases["trig_%s_int" % name] = {"x": x, "out": fn(x)}
    x = rnd(3, 2, lo=-0.9, hi=0.9) if name not in ("acosh",) else rnd(3, 2, lo=1.1, hi=3.0)
    cases["trig_%s_t" % name] = {"x": x, "out": fn(x.t())}
    cases["trig_%s_empty" % name] = {"x": torch.zeros(0, 3), "out": fn(torch.zeros(0, 3))}
    x = rnd(2, 3, lo=-0.9, hi=0.9, dtype=torch.float64) if name != "acosh" else rnd(2, 3, lo=1.1, hi=3.0, dtype=torch.float64)
    gcase(name, fn, x)
    # Domain edges: PyTorch's gradient formula gives inf or nan there.
    edge = {"asin": f64(1.0, -1.0, 0.0), "acos": f64(1.0, -1.0, 0.0), "atanh": f64(1.0, -1.0, 0.0),
            "acosh": f64(1.0, 2.0, 0.5)}.get(name)
    if edge is not None:
        gcase(name + "_edge", fn, edge)

y, x = rnd(3, 1), rnd(4)
cases["atan2_broadcast"] = {"a": y, "b": x, "out": torch.atan2(y, x)}
z = [0.0, -0.0, 1.0, -1.0, inf, -inf, nan]
ya = f32(*[a for a in z for _ in z])
xa = f32(*[b for _ in z for b in z])
cases["atan2_special"] = {"a": ya, "b": xa, "out": torch.atan2(ya, xa)}
cases["atan2_f64"] = {"a": ya.double(), "b": xa.double(), "out": torch.atan2(ya.double(), xa.double())}
cases["atan2_int"] = {"a": i64(1, -2, 0, 3), "b": i64(2, 2, -1, 0), "out": torch.atan2(i64(1, -2, 0, 3), i64(2, 2, -1, 0))}
cases["atan2_int_float"] = {"a": i64(1, -2, 0, 3), "b": f64(2, 2, -1, 0), "out": torch.atan2(i64(1, -2, 0, 3), f64(2, 2, -1, 0))}
cases["atan2_empty"] = {"a": torch.zeros(0, 2), "b": torch.zeros(2), "out": torch.atan2(torch.zeros(0, 2), torch.zeros(2))}
gcase("atan2", torch.atan2, rnd(2, 3, dtype=torch.float64), rnd(3, dtype=torch.float64))
gcase("atan2_origin", torch.atan2, f64(0.0, 1.0, 0.0), f64(0.0, 0.0, -2.0))

# ------------------------------------------------------------------ selection

x = rnd(2, 3, 4)
cases["movedim_one"] = {"x": x, "out": torch.movedim(x, 0, 2)}
cases["movedim_neg"] = {"x": x, "out": torch.movedim(x, -1, 0)}
cases["movedim_two"] = {"x": x, "out": torch.movedim(x, (0, 1), (2, 0))}
cases["movedim_f64"] = {"x": x.double(), "out": torch.movedim(x.double(), (2, 0), (0, 1))}
gcase("movedim", lambda a: torch.movedim(a, (0, 2), (1, 0)), rnd(2, 3, 4, dtype=torch.float64))

x = rnd(3, 4)
m = x > 0
cases["masked_select"] = {"x": x, "mask": m, "out": torch.masked_select(x, m)}
mrow = torch.tensor([True, False, True, True])
cases["masked_select_broadcast"] = {"x": x, "mask": mrow, "out": torch.masked_select(x, mrow)}
mcol = torch.tensor([[True], [False], [True]])
xr = rnd(4)
cases["masked_select_broadcast_x"] = {"x": xr, "mask": mcol, "out": torch.masked_select(xr, mcol)}
cases["masked_select_t"] = {"x": x, "mask": m.t(), "out": torch.masked_select(x.t(), m.t())}
cases["masked_select_none"] = {"x": x.double(), "mask": torch.zeros(3, 4, dtype=torch.bool),
                               "out": torch.masked_select(x.double(), torch.zeros(3, 4, dtype=torch.bool))}
cases["masked_select_int"] = {"x": i64(1, 2, 3, 4), "mask": torch.tensor([True, False, False, True]),
                              "out": torch.masked_select(i64(1, 2, 3, 4), torch.tensor([True, False, False, True]))}
cases["masked_select_empty"] = {"x": torch.zeros(0, 4), "mask": mrow, "out": torch.masked_select(torch.zeros(0, 4), mrow)}
gm = torch.tensor([[True, False, True], [False, True, True]])
gcase("masked_select", lambda a: torch.masked_select(a, gm), rnd(2, 3, dtype=torch.float64))
gcase("masked_select_broadcast", lambda a: torch.masked_select(a, gm), rnd(3, dtype=torch.float64))

x = rnd(3, 4)
ix = i64(0, 5, -1, 11, -12, 5)
cases["take"] = {"x": x, "idx": ix, "out": torch.take(x, ix)}
ix2 = i64(3, 0, -2, 1, 7, 2).reshape(2, 3)
cases["take_2d"] = {"x": x.double(), "idx": ix2, "out": torch.take(x.double(), ix2)}
cases["take_t"] = {"x": x, "idx": ix2, "out": torch.take(x.t(), ix2)}
cases["take_int"] = {"x": i64(5, 6, 7), "idx": i64(2, -3), "out": torch.take(i64(5, 6, 7), i64(2, -3))}
cases["take_empty"] = {"x": x, "idx": i64(), "out": torch.take(x, i64())}
gcase("take", lambda a: torch.take(a, i64(0, 5, 5, -1, 2)), rnd(2, 3, dtype=torch.float64))

# ------------------------------------------------------------------- counting

x = i64(0, 1, 1, 3, 2, 1, 7)
cases["bincount"] = {"x": x, "out": torch.bincount(x)}
cases["bincount_minlength"] = {"x": x, "out": torch.bincount(x, minlength=10)}
w = rnd(7)
cases["bincount_weights"] = {"x": x, "w": w, "out": torch.bincount(x, weights=w)}
cases["bincount_weights_f64"] = {"x": x, "w": w.double(), "out": torch.bincount(x, weights=w.double())}
cases["bincount_weights_int"] = {"x": x, "w": i64(1, 2, 3, 4, 5, 6, 7), "out": torch.bincount(x, weights=i64(1, 2, 3, 4, 5, 6, 7))}
cases["bincount_empty"] = {"x": i64(), "out": torch.bincount(i64(), minlength=3)}
cases["bincount_int32"] = {"x": x, "out": torch.bincount(x.int())}

x = rnd(50, lo=-3, hi=3)
cases["histc"] = {"x": x, "out": torch.histc(x, bins=7, min=-2, max=2)}
cases["histc_auto"] = {"x": x, "out": torch.histc(x, bins=5)}
cases["histc_f64"] = {"x": x.double(), "out": torch.histc(x.double(), bins=6, min=-1.5, max=2.5)}
cases["histc_edges"] = {"x": f32(0, 1, 2, 3, 4, -1, 5, nan), "out": torch.histc(f32(0, 1, 2, 3, 4, -1, 5, nan), bins=4, min=0, max=4)}
cases["histc_constant"] = {"x": f32(1, 1, 1), "out": torch.histc(f32(1, 1, 1), bins=4)}
x2 = rnd(4, 3)
cases["histc_t"] = {"x": x2, "out": torch.histc(x2.t(), bins=3, min=-1, max=1)}
cases["histc_empty"] = {"x": torch.zeros(0), "out": torch.histc(torch.zeros(0), bins=3, min=0, max=1)}

# --------------------------------------------------------------- logcumsumexp

x = rnd(3, 5, lo=-5, hi=5)
cases["logcumsumexp"] = {"x": x, "out": torch.logcumsumexp(x, 1)}
cases["logcumsumexp_dim0"] = {"x": x, "out": torch.logcumsumexp(x, 0)}
cases["logcumsumexp_neg"] = {"x": x.double(), "out": torch.logcumsumexp(x.double(), -1)}
cases["logcumsumexp_t"] = {"x": x, "out": torch.logcumsumexp(x.t(), 1)}
xs = f64(-1000.0, 0.0, -inf, 1000.0, 999.0, -inf, nan, 1.0)
cases["logcumsumexp_special"] = {"x": xs, "out": torch.logcumsumexp(xs, 0)}
xs = f32(-inf, -inf, 2.0, inf, 1.0)
cases["logcumsumexp_inf"] = {"x": xs, "out": torch.logcumsumexp(xs, 0)}
cases["logcumsumexp_empty"] = {"x": torch.zeros(2, 0), "out": torch.logcumsumexp(torch.zeros(2, 0), 1)}
cases["logcumsumexp_scalar"] = {"x": torch.tensor(1.5), "out": torch.logcumsumexp(torch.tensor(1.5), 0)}
xl = rnd(2, 37, lo=-3, hi=3, dtype=torch.float64)
cases["logcumsumexp_long"] = {"x": xl, "out": torch.logcumsumexp(xl, 1)}
gcase("logcumsumexp", lambda a: torch.logcumsumexp(a, 1), rnd(3, 6, lo=-3, hi=3, dtype=torch.float64))
gcase("logcumsumexp_wide", lambda a: torch.logcumsumexp(a, 0), f64(-50.0, 0.0, 30.0, -2.0, 30.0))


def lcse_weighted(a):
    # A gradient of both signs reaches the backward.
    return torch.logcumsumexp(a, 0) * f64(1.0, -2.0, 0.0, 3.0, -1.0)


gcase("logcumsumexp_signed", lcse_weighted, f64(0.5, -1.0, 2.0, 0.0, 1.0))

# -------------------------------------------------------------------- bitwise

a = i64(5, -3, 0, 7, 123456789012, -1)
b = i64(3, 1, 2, -1, 987654321, 6)
for name, fn in (("and", torch.bitwise_and), ("or", torch.bitwise_or), ("xor", torch.bitwise_xor)):
    cases["bitwise_%s" % name] = {"a": a, "b": b, "out": fn(a, b)}
    cases["bitwise_%s_scalar" % name] = {"a": a, "out": fn(a, 6)}
    ab, bb = torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False])
    cases["bitwise_%s_bool" % name] = {"a": ab, "b": bb, "out": fn(ab, bb)}
    cases["bitwise_%s_bool_int" % name] = {"a": ab, "b": i64(3, 2, 1, 0), "out": fn(ab, i64(3, 2, 1, 0))}
    am, bm = a[:4].reshape(2, 2), i64(12, 10)
    cases["bitwise_%s_broadcast" % name] = {"a": am, "b": bm, "out": fn(am, bm)}
    cases["bitwise_%s_t" % name] = {"a": am, "b": bm, "out": fn(am.t(), bm)}
    ua, ub = torch.tensor([200, 3, 255], dtype=torch.uint8), torch.tensor([7, 1, 128], dtype=torch.uint8)
    cases["bitwise_%s_uint8" % name] = {"a": ua.long(), "b": ub.long(), "out": fn(ua, ub).long()}
cases["bitwise_not"] = {"a": a, "out": torch.bitwise_not(a)}
cases["bitwise_not_bool"] = {"a": torch.tensor([True, False]), "out": torch.bitwise_not(torch.tensor([True, False]))}
cases["bitwise_not_uint8"] = {"a": i64(200, 0, 255), "out": torch.bitwise_not(torch.tensor([200, 0, 255], dtype=torch.uint8)).long()}
cases["bitwise_empty"] = {"a": i64(), "b": i64(), "out": torch.bitwise_and(i64(), i64())}
sh = i64(1, 2, 0, 3, 40, 1)
cases["left_shift"] = {"a": a, "b": sh, "out": torch.bitwise_left_shift(a, sh)}
cases["right_shift"] = {"a": a, "b": sh, "out": torch.bitwise_right_shift(a, sh)}
cases["left_shift_scalar"] = {"a": a, "out": torch.bitwise_left_shift(a, 3)}
cases["right_shift_scalar"] = {"a": a, "out": torch.bitwise_right_shift(a, 2)}
cases["left_shift_broadcast"] = {"a": a[:4].reshape(2, 2), "b": i64(1, 4), "out": torch.bitwise_left_shift(a[:4].reshape(2, 2), i64(1, 4))}
cases["left_shift_uint8"] = {"a": i64(200, 3, 255), "b": i64(1, 2, 7),
                             "out": torch.bitwise_left_shift(torch.tensor([200, 3, 255], dtype=torch.uint8),
                                                             torch.tensor([1, 2, 7], dtype=torch.uint8)).long()}
cases["right_shift_uint8"] = {"a": i64(200, 3, 255), "b": i64(1, 2, 7),
                              "out": torch.bitwise_right_shift(torch.tensor([200, 3, 255], dtype=torch.uint8),
                                                               torch.tensor([1, 2, 7], dtype=torch.uint8)).long()}
cases["left_shift_int32"] = {"a": i64(1, -3, 70000), "b": i64(30, 4, 16),
                             "out": torch.bitwise_left_shift(i64(1, -3, 70000).int(), i64(30, 4, 16).int()).long()}

# ----------------------------------------------------------------- statistics

x = rnd(4, 5)
cases["median_all"] = {"x": x, "out": torch.median(x)}
cases["median_all_even"] = {"x": f64(4.0, 1.0, 3.0, 2.0), "out": torch.median(f64(4.0, 1.0, 3.0, 2.0))}
cases["median_all_nan"] = {"x": f32(1.0, nan, 2.0), "out": torch.median(f32(1.0, nan, 2.0))}
cases["median_all_int"] = {"x": i64(5, 1, 4, 2), "out": torch.median(i64(5, 1, 4, 2))}
cases["median_all_empty"] = {"x": torch.zeros(0), "out": torch.median(torch.zeros(0))}
v, i = torch.median(x, 1)
cases["median_dim"] = {"x": x, "values": v, "indices": i}
v, i = torch.median(x, 0, keepdim=True)
cases["median_dim_keep"] = {"x": x, "values": v, "indices": i}
v, i = torch.median(x.t(), -1)
cases["median_dim_t"] = {"x": x, "values": v, "indices": i}
xn = f64(5.0, 4.0, nan, 5.0, 9.0, nan, 0.0, 3.0, 1.0, 1.0, 2.0, 2.0).reshape(2, 6)
v, i = torch.median(xn, 1)
cases["median_dim_nan_ties"] = {"x": xn, "values": v, "indices": i}
v, i = torch.nanmedian(xn, 1)
cases["nanmedian_dim"] = {"x": xn, "values": v, "indices": i}
cases["nanmedian_all"] = {"x": xn, "out": torch.nanmedian(xn)}
cases["nanmedian_all_nan"] = {"x": f32(nan, nan), "out": torch.nanmedian(f32(nan, nan))}
v, i = torch.median(i64(3, 1, 2, 2), 0)
cases["median_dim_int"] = {"x": i64(3, 1, 2, 2), "values": v, "indices": i}
gcase("median_all", torch.median, rnd(3, 4, dtype=torch.float64))
gcase("median_all_ties", torch.median, f64(1.0, 2.0, 2.0, 3.0, 2.0))
gcase("nanmedian_all", torch.nanmedian, f64(1.0, nan, 2.0, 3.0))
gcase("median_dim", lambda a: torch.median(a, 1)[0], rnd(3, 5, dtype=torch.float64))
gcase("nanmedian_dim", lambda a: torch.nanmedian(a, 0)[0], xn.t().contiguous())

x = rnd(3, 6)
q1 = f32(0.0, 0.1, 0.5, 0.75, 1.0)
for interp in ("linear", "lower", "higher", "midpoint", "nearest"):
    cases["quantile_%s" % interp] = {"x": x, "q": q1, "out": torch.quantile(x, q1, dim=1, interpolation=interp)}
    cases["quantile_all_%s" % interp] = {"x": x.double(), "out": torch.quantile(x.double(), 0.3, interpolation=interp)}
cases["quantile_scalar_keep"] = {"x": x, "out": torch.quantile(x, 0.4, dim=0, keepdim=True)}
cases["quantile_vector_keep"] = {"x": x, "q": q1, "out": torch.quantile(x, q1, dim=-1, keepdim=True)}
cases["quantile_t"] = {"x": x, "q": q1, "out": torch.quantile(x.t(), q1, dim=0)}
cases["quantile_half"] = {"x": f32(1.0, 2.0, 3.0, 4.0), "q": f32(0.5, 1.0 / 6), "out": torch.quantile(f32(1.0, 2.0, 3.0, 4.0), f32(0.5, 1.0 / 6), interpolation="nearest")}
xq = f64(1.0, nan, 3.0, 2.0, 4.0, 6.0).reshape(2, 3)
cases["quantile_nan"] = {"x": xq, "q": f64(0.25, 0.5), "out": torch.quantile(xq, f64(0.25, 0.5), dim=1)}
gcase("quantile_linear", lambda a: torch.quantile(a, f64(0.2, 0.5, 0.9), dim=1), rnd(2, 5, dtype=torch.float64))
gcase("quantile_midpoint", lambda a: torch.quantile(a, 0.5, dim=0, interpolation="midpoint"), rnd(4, 3, dtype=torch.float64))
gcase("quantile_all", lambda a: torch.quantile(a, 0.7), rnd(3, 3, dtype=torch.float64))

xm = f64(5, 4, 4, 5, 9, 4, 0, 0, 1, 1, 2, 2, 3, 1, 2, 2, 1, 3).reshape(3, 6)
v, i = torch.mode(xm, 1)
cases["mode"] = {"x": xm, "values": v, "indices": i}
v, i = torch.mode(xm, 0, keepdim=True)
cases["mode_keep"] = {"x": xm, "values": v, "indices": i}
v, i = torch.mode(xm.t(), 0)
cases["mode_t"] = {"x": xm, "values": v, "indices": i}
v, i = torch.mode(i64(1, 2, 2, 1, 3), 0)
cases["mode_int"] = {"x": i64(1, 2, 2, 1, 3), "values": v, "indices": i}
v, i = torch.mode(f32(1.0, nan, nan, 2.0), 0)
cases["mode_nan"] = {"x": f32(1.0, nan, nan, 2.0), "values": v, "indices": i}
v, i = torch.mode(f32(7.0), 0)
cases["mode_single"] = {"x": f32(7.0), "values": v, "indices": i}
gcase("mode", lambda a: torch.mode(a, 1)[0], xm.clone())

dump("elementwise2", cases)

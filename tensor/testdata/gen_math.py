"""Writes testdata/math.json: PyTorch 1.13 reference values for Kiln's math,
comparison, reduction, sort and range ops (tensor/math.go, compare.go,
reductions.go, sort.go, ranges.go).

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_math.py

Each case holds its inputs (a, b, x, …) and its expected outputs (out,
values, indices, grad_*). Gradient cases ("grad_*") record what PyTorch's
backward gives at points where finite differences cannot decide (ties,
clamp boundaries, zeros in products, zero standard deviations), seeded with
ones.
"""
import math

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


def rnd(*shape, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, dtype=torch.float32) * (hi - lo) + lo)


# Special values that every element-wise op meets.
SPECIAL = f32(nan, inf, -inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-3, 3.0, -7.25, 100.0)

# ---------------------------------------------------------------- binary math

a, b = rnd(3, 4, lo=0.1, hi=3.0), rnd(4, lo=-2.0, hi=2.0)
cases["pow_broadcast"] = {"a": a, "b": b, "out": torch.pow(a, b)}
a = f32(0.0, 0.0, -2.0, -2.0, nan, 1.0, inf, 2.0, -0.0)
b = f32(0.0, -1.0, 2.0, 0.5, 0.0, nan, -1.0, inf, 3.0)
cases["pow_special"] = {"a": a, "b": b, "out": torch.pow(a, b)}
a, b = i64(2, -3, 0, 7, -1, 5), i64(3, 3, 0, 2, 5, 0)
cases["pow_int64"] = {"a": a, "b": b, "out": torch.pow(a, b)}
x = f32(0.0, 1.5, -2.0, 4.0, nan, inf)
cases["pow_scalar_2_5"] = {"x": x, "out": torch.pow(x, 2.5)}
cases["pow_scalar_neg2"] = {"x": x, "out": torch.pow(x, -2.0)}
cases["pow_scalar_0"] = {"x": x, "out": torch.pow(x, 0.0)}
cases["pow_scalar_int3"] = {"x": i64(-3, 0, 2, 11), "out": torch.pow(i64(-3, 0, 2, 11), 3)}
cases["pow_scalar_int_frac"] = {"x": i64(0, 2, 9), "out": torch.pow(i64(0, 2, 9), 0.5)}
x = f32(-2.0, -0.5, 0.0, 1.0, 3.5, nan, -inf, inf)
cases["scalar_pow_2"] = {"x": x, "out": torch.pow(2.0, x)}
cases["scalar_pow_0"] = {"x": x, "out": torch.pow(0.0, x)}
cases["scalar_pow_0_5"] = {"x": x, "out": torch.pow(0.5, x)}
cases["scalar_pow_int"] = {"x": i64(0, 1, 5, 10), "out": torch.pow(3, i64(0, 1, 5, 10))}

a = f32(5.0, -5.0, 5.0, -5.0, 5.5, -0.5, 0.0, 3.0, nan, inf, 5.0, -5.0, 1.0)
b = f32(3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 2.0, 0.0, 1.0, 2.0, inf, inf, 0.1)
cases["remainder"] = {"a": a, "b": b, "out": torch.remainder(a, b)}
a, b = rnd(2, 3, lo=-10, hi=10), rnd(3, lo=0.5, hi=3) * torch.tensor([1.0, -1.0, 1.0])
cases["remainder_broadcast"] = {"a": a, "b": b, "out": torch.remainder(a, b)}
# Fixture numbers travel as JSON doubles: int64 exactness beyond 2^53 is
# checked in Go (TestMathInt64Exact), not here.
a = i64(7, -7, 7, -7, 0, 4503599627370495, -4503599627370495)
b = i64(2, 2, -2, -2, 5, 10, 10)
cases["remainder_int64"] = {"a": a, "b": b, "out": torch.remainder(a, b)}
x = f32(5.0, -5.0, 0.0, 7.5, -7.5)
cases["remainder_scalar_3"] = {"x": x, "out": torch.remainder(x, 3.0)}
cases["remainder_scalar_neg2_5"] = {"x": x, "out": torch.remainder(x, -2.5)}
cases["remainder_scalar_int"] = {"x": i64(-7, -1, 0, 1, 7), "out": torch.remainder(i64(-7, -1, 0, 1, 7), 3)}

# inf // 2 is NaN in PyTorch (fmod-based), inf in Kiln's backend table
# (floor(a/b)); that difference is reported, not fixed here.
a = f32(7.0, -7.0, 7.0, -7.0, 7.5, -0.5, 1.0, -1.0, 0.0, 1.0)
b = f32(2.0, 2.0, -2.0, -2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.1)
cases["floor_divide"] = {"a": a, "b": b, "out": torch.floor_divide(a, b)}
a = i64(7, -7, 7, -7, 0, 4503599627370495, -4503599627370495, 6)
b = i64(2, 2, -2, -2, 3, 2, 2, 3)
cases["floor_divide_int64"] = {"a": a, "b": b, "out": torch.floor_divide(a, b)}
x = f32(7.0, -7.0, 0.5, -0.5)
cases["floor_divide_scalar"] = {"x": x, "out": torch.floor_divide(x, 2.0)}
cases["floor_divide_scalar_int"] = {"x": i64(7, -7, 0), "out": torch.floor_divide(i64(7, -7, 0), 2)}

a = f32(1.0, 2.0, 3.0, nan, 5.0, nan, -inf, 0.0)
b = f32(1.0, 3.0, 2.0, 1.0, nan, nan, 0.0, -0.0)
cases["maximum"] = {"a": a, "b": b, "out": torch.maximum(a, b)}
cases["minimum"] = {"a": a, "b": b, "out": torch.minimum(a, b)}
a, b = rnd(2, 1, 3), rnd(4, 1)
cases["maximum_broadcast"] = {"a": a, "b": b, "out": torch.maximum(a, b)}
cases["minimum_broadcast"] = {"a": a, "b": b, "out": torch.minimum(a, b)}
a, b = i64(1, -5, 4503599627370495), i64(2, -6, 4503599627370494)
cases["maximum_int64"] = {"a": a, "b": b, "out": torch.maximum(a, b)}
cases["minimum_int64"] = {"a": a, "b": b, "out": torch.minimum(a, b)}

x = f32(-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, nan, inf, -inf)
cases["clamp"] = {"x": x, "out": torch.clamp(x, -1.0, 0.5)}
cases["clamp_min"] = {"x": x, "out": torch.clamp(x, min=-0.5)}
cases["clamp_max"] = {"x": x, "out": torch.clamp(x, max=0.0)}
cases["clamp_min_above_max"] = {"x": x, "out": torch.clamp(x, 1.0, -1.0)}
xi = i64(-5, -1, 0, 2, 9)
cases["clamp_int"] = {"x": xi, "out": torch.clamp(xi, -1, 3)}
cases["clamp_int_float_bound"] = {"x": xi, "out": torch.clamp(xi, min=-0.5)}

# ---------------------------------------------------------------- unary math

for name, fn in [("abs", torch.abs), ("sign", torch.sign), ("log1p", torch.log1p), ("sqrt", torch.sqrt),
                 ("rsqrt", torch.rsqrt), ("reciprocal", torch.reciprocal), ("erf", torch.erf),
                 ("sin", torch.sin), ("cos", torch.cos), ("tan", torch.tan), ("floor", torch.floor),
                 ("ceil", torch.ceil), ("round", torch.round), ("isnan", torch.isnan),
                 ("isinf", torch.isinf)]:
    x = SPECIAL.double() if name in ("sin", "cos", "tan", "erf") else SPECIAL
    cases["unary_" + name] = {"x": x, "out": fn(x)}
xi = i64(-3, 0, 4)
for name, fn in [("abs", torch.abs), ("sign", torch.sign), ("floor", torch.floor), ("sqrt", torch.sqrt),
                 ("reciprocal", torch.reciprocal), ("isnan", torch.isnan)]:
    cases["unary_int_" + name] = {"x": xi, "out": fn(xi)}

# ---------------------------------------------------------------- comparisons

a = f32(1.0, 2.0, nan, 3.0, -inf, 0.0)
b = f32(1.0, 3.0, nan, 2.0, -inf, -0.0)
for name in ["eq", "ne", "lt", "le", "gt", "ge"]:
    cases["cmp_" + name] = {"a": a, "b": b, "out": getattr(torch, name)(a, b)}
    cases["cmp_scalar_" + name] = {"a": a, "out": getattr(torch, name)(a, 2.0)}
ai, bf = i64(1, 2, 3), f32(1.0, 2.5, 2.0)
cases["cmp_int_float_lt"] = {"a": ai, "b": bf, "out": torch.lt(ai, bf)}
a, b = rnd(3, 1), rnd(1, 4)
cases["cmp_broadcast_ge"] = {"a": a, "b": b, "out": torch.ge(a, b)}
cases["cmp_scalar_int_frac_gt"] = {"a": i64(1, 2, 3), "out": torch.gt(i64(1, 2, 3), 1.5)}

a = f32(0.0, 1.0, nan, -2.0, 0.0, 1.0)
b = torch.tensor([False, True, True, False, True, False])
for name in ["and", "or", "xor"]:
    cases["logical_" + name] = {"a": a, "b": b, "out": getattr(torch, "logical_" + name)(a, b)}
cases["logical_not"] = {"a": a, "out": torch.logical_not(a)}
cases["logical_and_int"] = {"a": i64(0, 3, 0, -1), "b": i64(0, 0, 5, 2), "out": torch.logical_and(i64(0, 3, 0, -1), i64(0, 0, 5, 2))}

# ---------------------------------------------------------------- reductions

x = rnd(2, 3, 4, lo=0.5, hi=1.5)
cases["prod_all"] = {"x": x, "out": x.prod()}
cases["prod_dims"] = {"x": x, "out": x.prod(2).prod(0)}  # over dims (0, 2)
cases["prod_keep"] = {"x": x, "out": x.prod(1, keepdim=True)}
cases["prod_int"] = {"x": i64(2, -3, 4, 5), "out": i64(2, -3, 4, 5).prod()}

x = f32(3.0, 1.0, 3.0, nan, 2.0, -inf, 0.5, 4.0, 4.0, -1.0, -1.0, -2.0).reshape(3, 4)
cases["amax_dim1"] = {"x": x, "out": x.amax(1)}
cases["amin_dim1_keep"] = {"x": x, "out": x.amin(1, keepdim=True)}
cases["amax_dim0"] = {"x": x, "out": x.amax(0)}
y = rnd(2, 3, 4)
cases["amax_all"] = {"x": y, "out": y.amax()}
cases["amin_dims"] = {"x": y, "out": y.amin((0, 2))}
cases["amax_int"] = {"x": i64(3, -1, 7, 2), "out": i64(3, -1, 7, 2).amax()}
xt = f32(1.0, 3.0, 3.0, 2.0, 0.0, -1.0, -1.0, 5.0).reshape(2, 4)  # ties: first index wins
for name, fn in [("max_dim", torch.max), ("min_dim", torch.min)]:
    v, i = fn(xt, 1)
    cases[name + "_ties"] = {"x": xt, "values": v, "indices": i}
    v, i = fn(x, 1, keepdim=True)
    cases[name + "_nan_keep"] = {"x": x, "values": v, "indices": i}
    v, i = fn(y, 0)
    cases[name + "_dim0"] = {"x": y, "values": v, "indices": i}
cases["argmax_dim1"] = {"x": xt, "out": xt.argmax(1)}
cases["argmin_dim0_keep"] = {"x": y, "out": y.argmin(0, keepdim=True)}
cases["argmax_nan"] = {"x": x, "out": x.argmax(1)}
cases["argmax_all"] = {"x": y, "out": y.argmax()}
cases["argmin_all"] = {"x": y, "out": y.argmin()}
cases["argmax_all_ties"] = {"x": xt, "out": xt.argmax()}

z = rnd(3, 5)
cases["var_all"] = {"x": z, "out": z.var()}
cases["var_dim1"] = {"x": z, "out": z.var(1)}
cases["var_dim0_keep"] = {"x": z, "out": z.var(0, keepdim=True)}
cases["std_all"] = {"x": z, "out": z.std()}
cases["std_dim1_keep"] = {"x": z, "out": z.std(1, keepdim=True)}
cases["var_correction0"] = {"x": z, "out": torch.var(z, 1, correction=0)}
cases["std_correction2"] = {"x": z, "out": torch.std(z, (0, 1), correction=2)}
cases["var_single"] = {"x": f32(4.0), "out": f32(4.0).var()}
cases["var_correction_too_big"] = {"x": f32(1.0, 2.0), "out": torch.var(f32(1.0, 2.0), 0, correction=3)}
big = rnd(2, 6) + 1e4  # two-pass variance keeps precision
cases["var_offset"] = {"x": big, "out": big.var(1)}

w = rnd(3, 4) * 3
w[0, 1] = 80.0
w[0, 2] = 90.0
cases["logsumexp_dim1"] = {"x": w, "out": torch.logsumexp(w, 1)}
cases["logsumexp_all"] = {"x": w, "out": torch.logsumexp(w, (0, 1))}
cases["logsumexp_keep0"] = {"x": w, "out": torch.logsumexp(w, 0, keepdim=True)}
wi = f32(-inf, -inf, 1.0, -inf, inf, 2.0, nan, 0.0, 0.0).reshape(3, 3)
cases["logsumexp_inf"] = {"x": wi, "out": torch.logsumexp(wi, 1)}
cases["logsumexp_int"] = {"x": i64(1, 2, 3), "out": torch.logsumexp(i64(1, 2, 3), 0)}
large = torch.tensor([1000.0, 1000.0, -1000.0], dtype=torch.float64)
cases["logsumexp_large"] = {"x": large, "out": torch.logsumexp(large, 0)}

c = rnd(3, 4)
cases["cumsum_dim1"] = {"x": c, "out": c.cumsum(1)}
cases["cumsum_dim0"] = {"x": c, "out": c.cumsum(0)}
cases["cumprod_dim1"] = {"x": c, "out": c.cumprod(1)}
cases["cumsum_int"] = {"x": i64(1, -2, 3, 4), "out": i64(1, -2, 3, 4).cumsum(0)}
cases["cumsum_bool"] = {"x": torch.tensor([True, False, True]), "out": torch.tensor([True, False, True]).cumsum(0)}
cases["cumprod_int"] = {"x": i64(1, -2, 3, 4), "out": i64(1, -2, 3, 4).cumprod(0)}
cn = f32(1.0, nan, 2.0, inf, 0.0)
cases["cumsum_nan"] = {"x": cn, "out": cn.cumsum(0)}
cases["cumprod_nan"] = {"x": cn, "out": cn.cumprod(0)}

q = f32(0.0, 1.0, nan, 0.0, 0.0, 0.0, -2.0, 3.0).reshape(4, 2)
cases["any_dim1"] = {"x": q, "out": q.any(1)}
cases["all_dim1"] = {"x": q, "out": q.all(1)}
cases["any_all"] = {"x": q, "out": q.any()}
cases["all_all"] = {"x": q, "out": q.all()}
cases["all_dim0_keep"] = {"x": q, "out": torch.all(q, 0, keepdim=True)}
cases["any_int"] = {"x": i64(0, 0, 5), "out": i64(0, 0, 5).any()}
cases["all_bool"] = {"x": torch.tensor([True, True, False]), "out": torch.tensor([True, True, False]).all()}

# ---------------------------------------------------------------- sorting

s = f32(3.0, 1.0, 2.0, nan, 1.0, -inf, 2.0, 0.0, 5.0, 5.0, -1.0, inf).reshape(3, 4)
for desc in (False, True):
    tag = "desc" if desc else "asc"
    v, i = torch.sort(s, dim=1, descending=desc, stable=True)
    cases["sort_dim1_" + tag] = {"x": s, "values": v, "indices": i}
    v, i = torch.sort(s, dim=0, descending=desc, stable=True)
    cases["sort_dim0_" + tag] = {"x": s, "values": v, "indices": i}
    cases["argsort_dim1_" + tag] = {"x": s, "out": torch.sort(s, dim=1, descending=desc, stable=True)[1]}
si = i64(5, -3, 4503599627370495, 0, -3)
v, i = torch.sort(si, dim=0, stable=True)
cases["sort_int64"] = {"x": si, "values": v, "indices": i}
tk = f32(2.0, 1.0, nan, 3.0, -1.0, 7.0, 0.5, 4.0).reshape(2, 4)
for largest in (True, False):
    tag = "largest" if largest else "smallest"
    v, i = torch.topk(tk, 2, 1, largest=largest)
    cases["topk_2_" + tag] = {"x": tk, "values": v, "indices": i}
r = rnd(5, 3)
v, i = torch.topk(r, 3, 0)
cases["topk_dim0"] = {"x": r, "values": v, "indices": i}

# ---------------------------------------------------------------- ranges

cases["arange_int"] = {"out": torch.arange(0, 10, 3)}
cases["arange_neg_step"] = {"out": torch.arange(5, -5, -2)}
cases["arange_float"] = {"out": torch.arange(0, 1, 0.3)}
cases["arange_float_start"] = {"out": torch.arange(-1.5, 2.0, 0.5)}
cases["arange_fraction_end"] = {"out": torch.arange(0, 2.5, 1)}
cases["arange_empty"] = {"out": torch.arange(3, 3, 1)}
cases["arange_float64"] = {"out": torch.arange(0, 1, 0.1, dtype=torch.float64)}
cases["linspace_7"] = {"out": torch.linspace(0, 1, 7)}
cases["linspace_rev"] = {"out": torch.linspace(3, -2, 6)}
cases["linspace_1"] = {"out": torch.linspace(2, 9, 1)}
cases["linspace_0"] = {"out": torch.linspace(2, 9, 0)}
cases["linspace_float64"] = {"out": torch.linspace(-1, 1, 11, dtype=torch.float64)}
cases["linspace_int64"] = {"out": torch.linspace(0, 10, 4, dtype=torch.int64)}
cases["eye_2_3"] = {"out": torch.eye(2, 3)}
cases["eye_3_2"] = {"out": torch.eye(3, 2)}
cases["eye_3_3"] = {"out": torch.eye(3)}

# ---------------------------------------------------------------- gradient conventions


def grads(fn, *inputs):
    ts = [t.clone().requires_grad_(True) for t in inputs]
    out = fn(*ts)
    out.backward(torch.ones_like(out))
    return {("grad_%d" % k): t.grad for k, t in enumerate(ts)}


def gcase(name, fn, *inputs):
    d = {("in_%d" % k): t for k, t in enumerate(inputs)}
    d.update(grads(fn, *inputs))
    cases["grad_" + name] = d


ga = f32(1.0, 2.0, 3.0, nan, 5.0, 2.0)
gb = f32(1.0, 3.0, 2.0, 1.0, nan, 2.0)
gcase("maximum_ties", torch.maximum, ga, gb)
gcase("minimum_ties", torch.minimum, ga, gb)
gm = f32(1.0, 3.0, 3.0, 2.0, 0.0, -1.0, -1.0, -1.0).reshape(2, 4)
gcase("amax_ties", lambda x: x.amax(1), gm)
gcase("amin_ties", lambda x: x.amin(1), gm)
gcase("max_all_ties", lambda x: x.max(), gm)
gcase("max_all_nan", lambda x: x.max(), f32(1.0, nan, 3.0, nan))
gcase("max_dim_ties", lambda x: x.max(1)[0], gm)
gcase("min_dim_ties", lambda x: x.min(1)[0], gm)
gcase("clamp_boundary", lambda x: torch.clamp(x, -1.0, 1.0), f32(-2.0, -1.0, 0.0, 1.0, 2.0, nan))
gcase("clamp_min_boundary", lambda x: torch.clamp(x, min=0.0), f32(-1.0, 0.0, 1.0))
gcase("pow_special", torch.pow, f32(0.0, 0.0, 2.0, 0.0, 3.0), f32(0.0, 2.0, -1.0, 0.5, 0.0))
gcase("pow_scalar_0", lambda x: torch.pow(x, 0.0), f32(0.0, 1.0, -2.0))
gcase("scalar_pow_base0", lambda e: torch.pow(0.0, e), f32(0.0, 2.0, 1.0))
gcase("prod_one_zero", lambda x: x.prod(), f32(3.0, 0.0, 5.0, 2.0))
gcase("prod_two_zeros", lambda x: x.prod(), f32(3.0, 0.0, 0.0, 2.0))
gcase("prod_dim_zeros", lambda x: x.prod(1), f32(3.0, 0.0, 5.0, 0.0, 0.0, 2.0, 1.0, 2.0, 3.0).reshape(3, 3))
gcase("cumprod_zeros", lambda x: x.cumprod(0), f32(2.0, 0.0, 3.0, 0.0, 4.0))
gcase("std_zero", lambda x: x.std(1), f32(2.0, 2.0, 2.0, 1.0, 2.0, 3.0).reshape(2, 3))
gcase("abs_zero", torch.abs, f32(-1.0, 0.0, 1.0))
gcase("remainder", torch.remainder, f32(5.0, -5.0, 7.5), f32(3.0, 3.0, -2.0))
gcase("sort_ties", lambda x: torch.sort(x, stable=True)[0] * f32(1.0, 2.0, 3.0, 4.0), f32(2.0, 1.0, 2.0, 0.0))
gcase("topk_ties", lambda x: torch.topk(x, 2)[0] * f32(1.0, 2.0), f32(2.0, 5.0, 2.0, 5.0))

dump("math", cases)

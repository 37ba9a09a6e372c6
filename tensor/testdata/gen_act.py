"""Writes act.json: PyTorch 1.13 references for activations, softmax,
log-softmax, layer norm, cross-entropy, linear, dot and outer.

Forward values and gradients are computed in float64. Gradients are those of
(out * gw).sum() for a fixed weight tensor gw stored with the case (activations
use gw = 1, so their gradient is f'(x)), taken at the same points, kinks
included, so the tests also pin PyTorch's convention for the derivative at a
kink.

Run: /usr/bin/python3 testdata/gen_act.py
"""
import torch
import torch.nn.functional as F

from fixtures import dump

torch.manual_seed(0)
D = torch.float64

# Points around every kink and threshold of the activations, plus large magnitudes.
GRID = [-1000.0, -100.0, -30.0, -20.5, -10.0, -6.5, -6.0, -3.5, -3.0, -2.9, -2.5, -1.0,
        -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.5, 2.9, 3.0, 3.5, 5.9, 6.0, 6.5, 10.0, 19.9,
        20.0, 20.1, 30.0, 100.0, 1000.0]

ACTIVATIONS = {
    "relu": lambda x: F.relu(x),
    "leaky_relu_0.01": lambda x: F.leaky_relu(x, 0.01),
    "leaky_relu_0.2": lambda x: F.leaky_relu(x, 0.2),
    "relu6": lambda x: F.relu6(x),
    "elu_1": lambda x: F.elu(x, 1.0),
    "elu_0.5": lambda x: F.elu(x, 0.5),
    "selu": lambda x: F.selu(x),
    "celu_1": lambda x: F.celu(x, 1.0),
    "celu_2": lambda x: F.celu(x, 2.0),
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "sigmoid": lambda x: torch.sigmoid(x),
    "log_sigmoid": lambda x: F.logsigmoid(x),
    "hard_sigmoid": lambda x: F.hardsigmoid(x),
    "silu": lambda x: F.silu(x),
    "hard_swish": lambda x: F.hardswish(x),
    "mish": lambda x: F.mish(x),
    "softplus_1_20": lambda x: F.softplus(x, 1.0, 20.0),
    "softplus_2_10": lambda x: F.softplus(x, 2.0, 10.0),
    "softplus_0.5_5": lambda x: F.softplus(x, 0.5, 5.0),
    "softsign": lambda x: F.softsign(x),
    "tanh": lambda x: torch.tanh(x),
}


def with_grads(fn, inputs, gw=None):
    """Returns fn(*inputs) and the gradients of (out*gw).sum() for the inputs
    that are floating point."""
    xs = [x.clone().requires_grad_(x.dtype.is_floating_point) if x is not None else None for x in inputs]
    out = fn(*xs)
    if gw is None:
        gw = torch.randn(out.shape, dtype=D)
    (out * gw).sum().backward()
    grads = [x.grad if x is not None and x.dtype.is_floating_point else None for x in xs]
    return out.detach(), gw, grads


cases = {}

# The derivatives are taken one point at a time: PyTorch's vectorised CPU
# kernels disagree with its scalar (and CUDA) kernels at some kinks (hardswish'
# gradient at x = 3 is 1 in the vectorised loop and 1.5 in the scalar one);
# Kiln follows the scalar/CUDA rule, which is also the documented formula.
grid = torch.tensor(GRID, dtype=D)
for name, fn in ACTIVATIONS.items():
    y = fn(grid)
    dx = torch.cat([with_grads(fn, [grid[i:i + 1]], torch.ones(1, dtype=D))[2][0] for i in range(len(GRID))])
    cases["act/" + name] = {"x": grid, "y": y, "dx": dx}

# Softmax and log-softmax, including rows of huge values (stability) and views.
sm_inputs = {
    "2d_dim1": (torch.randn(3, 5, dtype=D), 1),
    "2d_dim0": (torch.randn(3, 5, dtype=D), 0),
    "3d_dim-1": (torch.randn(2, 3, 4, dtype=D), -1),
    "3d_dim1": (torch.randn(2, 3, 4, dtype=D), 1),
    "1d": (torch.randn(6, dtype=D), 0),
    "large": (torch.tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1001.0], [1e4, 0.0, -1e4]], dtype=D), 1),
    "scalar": (torch.tensor(2.5, dtype=D), 0),
}
for name, (x, dim) in sm_inputs.items():
    for op, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
        y, gw, (dx,) = with_grads(lambda a: fn(a, dim), [x])
        cases["%s/%s" % (op, name)] = {"x": x, "y": y, "gw": gw, "dx": dx}

# Layer norm: 1 and 2 normalized dims, with and without affine parameters.
ln_inputs = {
    "1dim_affine": ((4, 5), [5], True, 1e-5),
    "1dim_plain": ((4, 5), [5], False, 1e-5),
    "2dims_affine": ((2, 3, 4), [3, 4], True, 1e-5),
    "2dims_plain": ((2, 3, 4), [3, 4], False, 1e-3),
    "3d_1dim_affine": ((2, 3, 4), [4], True, 1e-5),
}
for name, (shape, ns, affine, eps) in ln_inputs.items():
    x = torch.randn(*shape, dtype=D) * 3 + 1
    if affine:
        w = torch.randn(*ns, dtype=D)
        b = torch.randn(*ns, dtype=D)
        y, gw, (dx, dw, db) = with_grads(lambda a, ww, bb: F.layer_norm(a, ns, ww, bb, eps), [x, w, b])
        cases["layer_norm/" + name] = {"x": x, "w": w, "b": b, "y": y, "gw": gw, "dx": dx, "dw": dw, "db": db,
                                       "eps": torch.tensor(eps, dtype=D), "normalized_shape": torch.tensor(ns)}
    else:
        y, gw, (dx,) = with_grads(lambda a: F.layer_norm(a, ns, None, None, eps), [x])
        cases["layer_norm/" + name] = {"x": x, "y": y, "gw": gw, "dx": dx, "eps": torch.tensor(eps, dtype=D),
                                       "normalized_shape": torch.tensor(ns)}

# Cross-entropy. Options are stored as tensors: "ignore" (absent: default
# -100), "smoothing" (absent: 0) and the reduction in the case name.


def ce_case(name, logits, target, weight=None, ignore=None, smoothing=0.0):
    for red in ("mean", "sum", "none"):
        kw = {"reduction": red, "label_smoothing": smoothing}
        if ignore is not None:
            kw["ignore_index"] = ignore
        prob = target.dtype.is_floating_point
        inputs = [logits, target] if prob else [logits]

        def fn(lg, tg=target):
            return F.cross_entropy(lg, tg, weight=weight, **kw)

        y, gw, grads = with_grads(fn, inputs)
        c = {"logits": logits, "target": target, "y": y, "gw": gw, "dlogits": grads[0]}
        if prob:
            c["dtarget"] = grads[1]
        if weight is not None:
            c["weight"] = weight
        if ignore is not None:
            c["ignore"] = torch.tensor(ignore)
        if smoothing:
            c["smoothing"] = torch.tensor(smoothing, dtype=D)
        cases["cross_entropy/%s/%s" % (name, red)] = c


lg = torch.randn(5, 4, dtype=D)
ce_case("index", lg, torch.tensor([0, 3, 1, 1, 2]))
ce_case("index_weight", lg, torch.tensor([0, 3, 1, 1, 2]), weight=torch.tensor([0.5, 2.0, 1.0, 0.25], dtype=D))
ce_case("index_default_ignore", lg, torch.tensor([0, -100, 1, -100, 2]))
ce_case("index_ignore_2_weight", lg, torch.tensor([0, 3, 2, 1, 2]), weight=torch.tensor([0.5, 2.0, 1.0, 0.25], dtype=D),
        ignore=2)
ce_case("index_ignore_0", lg, torch.tensor([0, 3, 0, 1, 2]), ignore=0)
ce_case("index_smoothing", lg, torch.tensor([0, 3, 1, 1, 2]), smoothing=0.1)
ce_case("index_smoothing_ignore", lg, torch.tensor([0, -100, 1, 1, -100]), smoothing=0.2)
ce_case("index_smoothing_weight_ignore", lg, torch.tensor([0, 3, 1, -100, 2]),
        weight=torch.tensor([0.5, 2.0, 1.0, 0.25], dtype=D), smoothing=0.3)
ce_case("index_large_logits", torch.tensor([[1000.0, -1000.0, 0.0], [5e3, 5e3, -5e3]], dtype=D), torch.tensor([1, 0]))
ce_case("index_3d", torch.randn(2, 4, 3, dtype=D), torch.tensor([[0, 3, 1], [2, 2, -100]]))
ce_case("index_4d_weight_smoothing", torch.randn(2, 3, 2, 2, dtype=D), torch.tensor([[[0, 1], [2, 1]], [[1, 1], [0, 2]]]),
        weight=torch.tensor([1.0, 0.5, 3.0], dtype=D), smoothing=0.15)
ce_case("index_unbatched", torch.randn(4, dtype=D), torch.tensor(2))
probs = torch.softmax(torch.randn(5, 4, dtype=D), 1)
ce_case("prob", lg, probs)
ce_case("prob_weight", lg, probs, weight=torch.tensor([0.5, 2.0, 1.0, 0.25], dtype=D))
ce_case("prob_smoothing_weight", lg, probs, weight=torch.tensor([0.5, 2.0, 1.0, 0.25], dtype=D), smoothing=0.2)
ce_case("prob_3d", torch.randn(2, 4, 3, dtype=D), torch.softmax(torch.randn(2, 4, 3, dtype=D), 1))
ce_case("prob_unnormalized", lg, torch.rand(5, 4, dtype=D) * 2)

# Linear, dot and outer.
lin = {
    "2d_bias": ((3, 4), 5, True),
    "2d_nobias": ((3, 4), 5, False),
    "3d_bias": ((2, 3, 4), 2, True),
    "1d_bias": ((4,), 3, True),
}
for name, (xs, out, bias) in lin.items():
    x = torch.randn(*xs, dtype=D)
    w = torch.randn(out, xs[-1], dtype=D)
    if bias:
        b = torch.randn(out, dtype=D)
        y, gw, (dx, dw, db) = with_grads(lambda a, ww, bb: F.linear(a, ww, bb), [x, w, b])
        cases["linear/" + name] = {"x": x, "w": w, "b": b, "y": y, "gw": gw, "dx": dx, "dw": dw, "db": db}
    else:
        y, gw, (dx, dw) = with_grads(lambda a, ww: F.linear(a, ww), [x, w])
        cases["linear/" + name] = {"x": x, "w": w, "y": y, "gw": gw, "dx": dx, "dw": dw}

a, b = torch.randn(5, dtype=D), torch.randn(5, dtype=D)
y, gw, (da, db) = with_grads(torch.dot, [a, b])
cases["dot/float"] = {"a": a, "b": b, "y": y, "gw": gw, "da": da, "db": db}
a, b = torch.randn(3, dtype=D), torch.randn(4, dtype=D)
y, gw, (da, db) = with_grads(torch.outer, [a, b])
cases["outer/float"] = {"a": a, "b": b, "y": y, "gw": gw, "da": da, "db": db}

dump("act", cases)

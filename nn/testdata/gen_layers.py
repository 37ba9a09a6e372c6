"""Writes nn/testdata/{layers,norm,activations}.json: reference values for
Kiln's layers, from PyTorch 1.13 modules (and NumPy for RMSNorm, which
PyTorch 1.13 lacks).

Every case builds a torch.nn module in float64 and rounds its parameters to
two decimals (so the JSON stays short and float64 runs are exact), feeds it
inputs with two decimals, and records:
  sd.<key>      the module's state_dict (what the Go test loads with
                nn.LoadStateDict, which proves the names map one to one);
  x0, x1        the inputs;
  out           the output;
  grad.x0 …     gradients of the inputs and
  grad.<key>    of the parameters, of loss = Σ out·w with the fixed weights
                w[i] = ((37·i) mod 19 − 9)/9 (the Go test builds the same w).
Outputs and gradients are rounded to 12 significant digits.

Batch-norm cases run three training steps (train<k>.*), record the state
dict after them (after.<key>) and then one step in evaluation mode (eval.*).

Run with Debian's interpreter: /usr/bin/python3 nn/testdata/gen_layers.py
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tensor/testdata"))
from fixtures import t2j  # noqa: E402

torch.manual_seed(0)
rng = np.random.default_rng(0)


def rnd(*shape, scale=1.0):
    """Random float64 tensor with two decimals."""
    return torch.tensor(np.round(rng.standard_normal(shape) * scale, 2), dtype=torch.float64)


def indices(high, *shape):
    return torch.tensor(rng.integers(0, high, size=shape), dtype=torch.int64)


def sig(x):
    """Rounds a float64 tensor to 12 significant digits."""
    a = x.detach().double().numpy()
    return torch.tensor(np.vectorize(lambda v: float(f"{v:.12g}"))(a) if a.size else a)


def loss_weights(shape):
    n = int(np.prod(shape)) if len(shape) else 1
    return torch.tensor([((37 * i) % 19 - 9) / 9.0 for i in range(n)], dtype=torch.float64).reshape(shape)


def prepare(module):
    module = module.double()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.round(p * 100) / 100)
    return module


def step(module, inputs, prefix=""):
    """Runs module on inputs, back-propagates the weighted sum; returns tensors."""
    module.zero_grad()
    ins = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    out = module(*ins)
    (out * loss_weights(out.shape)).sum().backward()
    c = {}
    for i, x in enumerate(ins):
        c[f"{prefix}x{i}"] = x.detach()
        if x.is_floating_point():
            c[f"{prefix}grad.x{i}"] = sig(x.grad)
    c[prefix + "out"] = sig(out)
    for k, p in module.named_parameters():
        c[f"{prefix}grad.{k}"] = sig(p.grad if p.grad is not None else torch.zeros_like(p))
    return c


def dump_here(name, cases):
    """Writes cases to name.json beside this script (fixtures.dump writes
    beside fixtures.py)."""
    out = {c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(out), "cases", os.path.getsize(path), "bytes")


def case(cases, name, module, *inputs):
    module = prepare(module)
    c = {"sd." + k: v.clone() for k, v in module.state_dict().items()}
    c.update(step(module, inputs))
    cases[name] = c


# ---------------------------------------------------------------- layers
layers = {}
case(layers, "linear", nn.Linear(4, 3), rnd(2, 5, 4))
case(layers, "linear no bias", nn.Linear(3, 2, bias=False), rnd(4, 3))
case(layers, "bilinear", nn.Bilinear(3, 4, 2), rnd(5, 3), rnd(5, 4))
case(layers, "bilinear batch dims no bias", nn.Bilinear(2, 3, 4, bias=False), rnd(2, 3, 2), rnd(2, 3, 3))
case(layers, "embedding", nn.Embedding(7, 3), indices(7, 2, 4))
case(layers, "embedding padding", nn.Embedding(6, 3, padding_idx=1),
     torch.tensor([[1, 0, 1], [5, 1, 2]], dtype=torch.int64))
case(layers, "embedding negative padding", nn.Embedding(5, 2, padding_idx=-1),
     torch.tensor([4, 0, 4, 3], dtype=torch.int64))
case(layers, "conv2d", nn.Conv2d(3, 4, 3), rnd(2, 3, 5, 5))
case(layers, "conv2d stride padding", nn.Conv2d(2, 3, 3, stride=2, padding=1), rnd(1, 2, 6, 5))
case(layers, "conv2d rectangular", nn.Conv2d(2, 2, (3, 2), stride=(2, 1), padding=(1, 0)), rnd(1, 2, 5, 4))
case(layers, "conv2d same even kernel", nn.Conv2d(2, 3, (4, 2), padding="same", bias=False), rnd(1, 2, 5, 5))
case(layers, "conv2d dilation", nn.Conv2d(2, 2, 3, dilation=2, padding=2), rnd(1, 2, 6, 6))
case(layers, "conv2d groups", nn.Conv2d(4, 6, 3, groups=2, padding=1), rnd(1, 4, 4, 4))
case(layers, "conv2d depthwise", nn.Conv2d(3, 3, 3, groups=3), rnd(2, 3, 4, 4))
case(layers, "conv2d reflect", nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"), rnd(1, 2, 4, 5))
case(layers, "conv2d replicate", nn.Conv2d(2, 2, 3, padding=(2, 1), padding_mode="replicate"), rnd(1, 2, 4, 4))
case(layers, "conv2d circular same", nn.Conv2d(2, 2, (2, 3), padding="same", padding_mode="circular"),
     rnd(1, 2, 4, 4))
case(layers, "conv2d unbatched", nn.Conv2d(2, 3, 2), rnd(2, 4, 4))
case(layers, "conv1d", nn.Conv1d(3, 4, 3, stride=2, padding=1), rnd(2, 3, 8))
case(layers, "conv1d same dilation groups", nn.Conv1d(4, 2, 3, padding="same", dilation=2, groups=2), rnd(2, 4, 7))
case(layers, "conv1d reflect", nn.Conv1d(2, 2, 3, padding=2, padding_mode="reflect", bias=False), rnd(1, 2, 6))
case(layers, "conv_transpose2d", nn.ConvTranspose2d(3, 2, 3), rnd(2, 3, 3, 3))
case(layers, "conv_transpose2d stride output padding",
     nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1), rnd(1, 2, 3, 3))
case(layers, "conv_transpose2d groups dilation no bias",
     nn.ConvTranspose2d(4, 2, 2, groups=2, dilation=2, bias=False), rnd(1, 4, 3, 3))
case(layers, "max_pool2d", nn.MaxPool2d(2), torch.tensor(rng.permutation(2 * 2 * 4 * 4).reshape(2, 2, 4, 4) / 10.0))
case(layers, "max_pool2d stride padding dilation ceil",
     nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True),
     torch.tensor(rng.permutation(2 * 5 * 6).reshape(1, 2, 5, 6) / 10.0))
case(layers, "avg_pool2d", nn.AvgPool2d(2), rnd(2, 2, 4, 4))
case(layers, "avg_pool2d padding exclude ceil", nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                                               count_include_pad=False), rnd(1, 2, 6, 5))
case(layers, "avg_pool2d divisor", nn.AvgPool2d((2, 3), divisor_override=4), rnd(1, 1, 4, 6))
case(layers, "adaptive_avg_pool2d", nn.AdaptiveAvgPool2d((3, 2)), rnd(2, 2, 5, 7))
case(layers, "adaptive_avg_pool2d keep width", nn.AdaptiveAvgPool2d((2, None)), rnd(1, 2, 5, 3))
case(layers, "flatten", nn.Flatten(), rnd(2, 3, 2, 2))
case(layers, "flatten middle", nn.Flatten(1, 2), rnd(2, 3, 2, 2))
case(layers, "sequential cnn", nn.Sequential(
    nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3)), rnd(2, 1, 4, 4))


dump_here("layers", layers)

# ---------------------------------------------------------------- normalisation
norm = {}
case(norm, "layer_norm", nn.LayerNorm(5), rnd(3, 5))
case(norm, "layer_norm two dims", nn.LayerNorm([2, 3], eps=1e-3), rnd(2, 2, 3))
case(norm, "layer_norm no affine", nn.LayerNorm(4, elementwise_affine=False), rnd(3, 4))
case(norm, "group_norm", nn.GroupNorm(2, 4), rnd(2, 4, 3, 3))
case(norm, "group_norm 1d one group eps", nn.GroupNorm(1, 3, eps=1e-3), rnd(2, 3, 5))
case(norm, "group_norm instance no affine", nn.GroupNorm(3, 3, affine=False), rnd(2, 3, 2, 2))


def rms_norm(name, x, shape, eps, weight, eps_for=None):
    """RMSNorm from its definition y = x/√(mean(x²)+eps)·w, with gradients
    derived by hand and checked against torch.autograd on the same
    equation."""
    xn = x.numpy()
    axes = tuple(range(xn.ndim - len(shape), xn.ndim))
    n = int(np.prod(shape))
    r = 1 / np.sqrt(np.mean(xn ** 2, axis=axes, keepdims=True) + eps)
    w = np.ones(shape) if weight is None else weight.numpy()
    y = xn * r * w
    g = loss_weights(y.shape).numpy()
    gw = np.sum(g * xn * r, axis=tuple(range(xn.ndim - len(shape))))
    gx = r * w * g - xn * r ** 3 / n * np.sum(g * w * xn, axis=axes, keepdims=True)
    # Cross-check the hand-derived gradients with autograd.
    xt = x.clone().requires_grad_(True)
    wt = torch.tensor(w, requires_grad=True)
    yt = xt * torch.rsqrt((xt ** 2).mean(dim=axes, keepdim=True) + eps) * wt
    (yt * loss_weights(yt.shape)).sum().backward()
    assert np.allclose(yt.detach().numpy(), y, rtol=1e-12, atol=1e-14)
    assert np.allclose(xt.grad.numpy(), gx, rtol=1e-10, atol=1e-12)
    assert np.allclose(wt.grad.numpy(), gw, rtol=1e-10, atol=1e-12)
    c = {"x0": x, "out": sig(torch.tensor(y)), "grad.x0": sig(torch.tensor(gx))}
    if weight is not None:
        c["sd.weight"] = weight
        c["grad.weight"] = sig(torch.tensor(gw))
    norm[name] = c


rms_norm("rms_norm", rnd(3, 6), [6], 1e-6, rnd(6))
rms_norm("rms_norm two dims no affine", rnd(2, 2, 3), [2, 3], 1e-3, None)
# Default eps is torch.finfo(dtype).eps; small inputs make it matter.
small = rnd(2, 4, scale=1e-3)
w4 = rnd(4)
rms_norm("rms_norm default eps float32", small, [4], float(np.finfo(np.float32).eps), w4)
rms_norm("rms_norm default eps float64", small, [4], float(np.finfo(np.float64).eps), w4)


def batch_norm(name, module, train_inputs, eval_input):
    module = prepare(module)
    with torch.no_grad():  # random affine parameters, rounded
        if module.affine:
            module.weight.copy_(rnd(module.num_features))
            module.bias.copy_(rnd(module.num_features))
    c = {"sd." + k: v.clone() for k, v in module.state_dict().items()}
    module.train()
    for k, x in enumerate(train_inputs):
        c.update(step(module, [x], f"train{k}."))
    for k, v in module.state_dict().items():
        c["after." + k] = sig(v) if v.is_floating_point() else v.clone()
    module.eval()
    c.update(step(module, [eval_input], "eval."))
    norm[name] = c


def shifted(*shape):
    # inputs with a per-channel offset and scale, so running stats move
    x = rnd(*shape)
    ch = torch.arange(shape[1], dtype=torch.float64).reshape([1, shape[1]] + [1] * (len(shape) - 2))
    return x * (1 + ch) + ch


batch_norm("batch_norm1d", nn.BatchNorm1d(3), [shifted(4, 3), shifted(5, 3), shifted(4, 3)], shifted(2, 3))
batch_norm("batch_norm1d 3d momentum", nn.BatchNorm1d(2, momentum=0.3, eps=1e-3),
           [shifted(3, 2, 4), shifted(2, 2, 5), shifted(3, 2, 2)], shifted(2, 2, 3))
batch_norm("batch_norm1d cumulative", nn.BatchNorm1d(3, momentum=None),
           [shifted(4, 3), shifted(3, 3), shifted(5, 3)], shifted(2, 3))
batch_norm("batch_norm2d", nn.BatchNorm2d(3), [shifted(2, 3, 3, 3), shifted(3, 3, 2, 2), shifted(2, 3, 2, 3)],
           shifted(2, 3, 2, 2))
batch_norm("batch_norm2d no affine", nn.BatchNorm2d(2, affine=False),
           [shifted(2, 2, 2, 2), shifted(2, 2, 3, 2), shifted(1, 2, 3, 3)], shifted(1, 2, 2, 2))
batch_norm("batch_norm2d no running stats", nn.BatchNorm2d(2, track_running_stats=False),
           [shifted(2, 2, 2, 2), shifted(3, 2, 2, 2), shifted(2, 2, 1, 3)], shifted(2, 2, 2, 2))
dump_here("norm", norm)

# ---------------------------------------------------------------- activations
acts = {}
x_act = rnd(3, 7, scale=2.5)
for name, m in [
    ("relu", nn.ReLU()), ("leaky_relu", nn.LeakyReLU()), ("leaky_relu 0.2", nn.LeakyReLU(0.2)),
    ("relu6", nn.ReLU6()), ("elu", nn.ELU()), ("elu 0.5", nn.ELU(0.5)), ("selu", nn.SELU()),
    ("celu", nn.CELU()), ("celu 2", nn.CELU(2.0)), ("gelu", nn.GELU()), ("gelu tanh", nn.GELU(approximate="tanh")),
    ("sigmoid", nn.Sigmoid()), ("log_sigmoid", nn.LogSigmoid()), ("hardsigmoid", nn.Hardsigmoid()),
    ("silu", nn.SiLU()), ("hardswish", nn.Hardswish()), ("mish", nn.Mish()), ("softplus", nn.Softplus()),
    ("softplus beta threshold", nn.Softplus(beta=2, threshold=3)), ("softsign", nn.Softsign()),
    ("tanh", nn.Tanh()), ("softmax", nn.Softmax(dim=1)), ("softmax dim 0", nn.Softmax(dim=0)),
    ("log_softmax", nn.LogSoftmax(dim=-1)), ("identity", nn.Identity()),
]:
    case(acts, name, m, x_act)
dump_here("activations", acts)

"""Writes nn/testdata/lora.json: reference outputs and gradients of LoRA-adapted
layers, for nn/lora_test.go.

PEFT is not installed beside PyTorch 1.13 here, so the LoRA forward is written
out by hand from PEFT's definitions (peft/tuners/lora/layer.py):
  Linear:   y = x·Wᵀ + b + s·(x·Aᵀ)·Bᵀ                    A [r, in], B [out, r]
  Conv2d:   y = conv(x, W, b) + s·conv(conv(x, A), B)     A [r, in, kh, kw] with
            the layer's stride and padding, B [out, r, 1, 1]
  MultiheadAttention: in_proj_weight + s·B·A, as PEFT's MultiheadAttention
            LoRA layer does; out_proj is a Linear adapted as above (its
            own A and B), folded into its weight the same way here.
with s = lora_alpha / r. Parameters and inputs have two decimals; every case
is float64 (the Go test runs each in float32 as well, with a looser
tolerance), and records under names:
  W, b, A, B (and Wo, bo, Ao, Bo for attention's out_proj), x, gy:
            inputs, with gy the weights of the loss Σ y·gy;
  y:        the output;
  grad.x, grad.A, grad.B (grad.Ao, grad.Bo): gradients of that loss.
Case "linear_t" feeds x transposed (the Go test passes a transposed view).

Run with Debian's interpreter: /usr/bin/python3 nn/testdata/gen_lora.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tensor/testdata"))
from fixtures import t2j  # noqa: E402
import json  # noqa: E402

rng = np.random.default_rng(22)


def rnd(*shape):
    return torch.tensor(np.round(rng.standard_normal(shape), 2), dtype=torch.float64)


def leaf(t):
    return t.clone().requires_grad_(True)


cases = {}


def record(name, y, gy, ins, grads):
    (y * gy).sum().backward()
    c = dict(ins)
    c["y"] = y.detach()
    c["gy"] = gy
    for k in grads:
        g = ins[k].grad
        c["grad." + k] = g if g is not None else torch.zeros_like(ins[k])
    cases[name] = {k: (v.detach() if isinstance(v, torch.Tensor) else v) for k, v in c.items()}


def linear_case(name, xshape, r=3, alpha=6.0, transposed=False):
    inf, outf = 6, 5
    W, b, A, B = rnd(outf, inf), rnd(outf), leaf(rnd(r, inf)), leaf(rnd(outf, r))
    x = leaf(rnd(*xshape))
    xin = x.t() if transposed else x
    s = alpha / r
    y = xin @ W.t() + b + s * (xin @ A.t()) @ B.t()
    gy = rnd(*y.shape)
    record(name, y, gy, {"W": W, "b": b, "A": A, "B": B, "x": x}, ["x", "A", "B"])


linear_case("linear", (4, 6))
linear_case("linear_3d", (2, 3, 6))
linear_case("linear_t", (6, 4), transposed=True)
linear_case("linear_empty", (0, 6))

# Conv2d 3→4 channels, 3×3 kernel, stride 2, padding 1; r = 2, alpha 4.
W, b = rnd(4, 3, 3, 3), rnd(4)
A, B = leaf(rnd(2, 3, 3, 3)), leaf(rnd(4, 2, 1, 1))
x = leaf(rnd(2, 3, 6, 6))
y = F.conv2d(x, W, b, stride=2, padding=1) + 2.0 * F.conv2d(F.conv2d(x, A, stride=2, padding=1), B)
record("conv2d", y, rnd(*y.shape), {"W": W, "b": b, "A": A, "B": B, "x": x}, ["x", "A", "B"])

# MultiheadAttention, embed 8, 2 heads, batch first; r = 4, alpha 8 on the
# input projection and on out_proj.
E, H, r, s = 8, 2, 4, 2.0
W, b = rnd(3 * E, E), rnd(3 * E)
Wo, bo = rnd(E, E), rnd(E)
A, B = leaf(rnd(r, E)), leaf(rnd(3 * E, r))
Ao, Bo = leaf(rnd(r, E)), leaf(rnd(E, r))
x = leaf(rnd(2, 5, E))
xt = x.transpose(0, 1)  # [L, N, E] for the functional form
out, _ = F.multi_head_attention_forward(
    xt, xt, xt, E, H, W + s * B @ A, b, None, None, False, 0.0, Wo + s * Bo @ Ao, bo,
    training=False, need_weights=False)
y = out.transpose(0, 1)
record("attention", y, rnd(*y.shape),
       {"W": W, "b": b, "Wo": Wo, "bo": bo, "A": A, "B": B, "Ao": Ao, "Bo": Bo, "x": x},
       ["x", "A", "B", "Ao", "Bo"])

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lora.json")
with open(path, "w") as f:
    json.dump({c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}, f, separators=(",", ":"), sort_keys=True)
    f.write("\n")
print("wrote", path, len(cases), "cases")

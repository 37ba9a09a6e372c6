"""Writes nn/testdata/layers2.json: reference values for Kiln's
ConvTranspose1d, 1-D pooling, InstanceNorm, PixelShuffle/PixelUnshuffle,
Upsample, Fold/Unfold and RNN layers, from PyTorch 1.13 modules, and for
DeformConv2d from torchvision 0.14's torchvision.ops.DeformConv2d.

The layout is gen_layers.py's: every case builds a torch.nn module in
float64 with parameters rounded to two decimals, feeds it inputs with two
decimals, and records
  sd.<key>      the module's state_dict (the Go test loads it with
                nn.LoadStateDict, which proves the names map one to one);
  x0, x1        the inputs;
  out           the output;
  grad.x0 …     gradients of the inputs and
  grad.<key>    of the parameters, of loss = Σ out·w with the fixed weights
                w[i] = ((37·i) mod 19 − 9)/9 (the Go test builds the same w).
Outputs and gradients are rounded to 12 significant digits.

Instance-norm cases with running statistics ("tracked …") run three training steps
(train<k>.*), record the state dict after them (after.<key>) and then one
step in evaluation mode (eval.*), as the batch-norm cases of norm.json do.

RNN cases record the output sequence as out and the final hidden state as
hn; the loss is Σ out·w + Σ hn·w' (w' the same formula over hn), so the
gradients cover both.

Run with Debian's interpreter: /usr/bin/python3 nn/testdata/gen_layers2.py
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
rng = np.random.default_rng(2)


def rnd(*shape, scale=1.0):
    return torch.tensor(np.round(rng.standard_normal(shape) * scale, 2), dtype=torch.float64)


def distinct(*shape):
    n = int(np.prod(shape))
    return torch.tensor(rng.permutation(n).reshape(shape) / 10.0 - n / 20.0, dtype=torch.float64)


def sig(x):
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
    module.zero_grad()
    ins = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    out = module(*ins)
    extra = {}
    if isinstance(out, tuple):  # RNN: (output, h_n)
        out, hn = out
        loss = (out * loss_weights(out.shape)).sum() + (hn * loss_weights(hn.shape)).sum()
        extra[prefix + "hn"] = sig(hn)
    else:
        loss = (out * loss_weights(out.shape)).sum()
    if out.numel() > 0:
        loss.backward()
    c = {}
    for i, x in enumerate(ins):
        c[f"{prefix}x{i}"] = x.detach()
        if x.is_floating_point():
            c[f"{prefix}grad.x{i}"] = sig(x.grad if x.grad is not None else torch.zeros_like(x))
    c[prefix + "out"] = sig(out)
    c.update(extra)
    for k, p in module.named_parameters():
        c[f"{prefix}grad.{k}"] = sig(p.grad if p.grad is not None else torch.zeros_like(p))
    return c


def dump_here(name, cases):
    out = {c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(out), "cases", os.path.getsize(path), "bytes")


cases = {}


def case(name, module, *inputs):
    module = prepare(module)
    c = {"sd." + k: v.clone() for k, v in module.state_dict().items()}
    c.update(step(module, inputs))
    cases[name] = c


# ConvTranspose1d
case("conv_transpose1d", nn.ConvTranspose1d(3, 2, 3), rnd(2, 3, 5))
case("conv_transpose1d stride padding output padding dilation",
     nn.ConvTranspose1d(2, 3, 3, stride=3, padding=2, output_padding=1, dilation=2), rnd(1, 2, 4))
case("conv_transpose1d groups no bias", nn.ConvTranspose1d(4, 6, 2, stride=2, groups=2, bias=False), rnd(2, 4, 3))
case("conv_transpose1d unbatched", nn.ConvTranspose1d(2, 1, 3, padding=1), rnd(2, 4))
# 1-D pooling
case("max_pool1d", nn.MaxPool1d(2), distinct(2, 3, 8))
case("max_pool1d stride padding dilation ceil", nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True),
     distinct(1, 2, 10))
case("max_pool1d unbatched", nn.MaxPool1d(3, stride=1), distinct(2, 5))
case("avg_pool1d", nn.AvgPool1d(3), rnd(2, 2, 7))
case("avg_pool1d padding exclude ceil", nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     rnd(1, 2, 8))
case("avg_pool1d padding include", nn.AvgPool1d(4, stride=3, padding=2), rnd(1, 3, 9))
case("adaptive_avg_pool1d", nn.AdaptiveAvgPool1d(4), rnd(2, 3, 10))
case("adaptive_avg_pool1d larger output", nn.AdaptiveAvgPool1d(7), rnd(2, 5))
case("adaptive_max_pool1d", nn.AdaptiveMaxPool1d(3), distinct(2, 2, 7))
case("adaptive_max_pool1d unbatched", nn.AdaptiveMaxPool1d(5), distinct(3, 5))
# InstanceNorm without running statistics (PyTorch's default)
case("instance_norm1d", nn.InstanceNorm1d(3), rnd(2, 3, 5))
case("instance_norm1d affine unbatched", nn.InstanceNorm1d(3, affine=True, eps=1e-3), rnd(3, 4))
case("instance_norm2d", nn.InstanceNorm2d(2), rnd(2, 2, 3, 4))
case("instance_norm2d affine", nn.InstanceNorm2d(3, affine=True), rnd(2, 3, 3, 3))
case("instance_norm3d affine", nn.InstanceNorm3d(2, affine=True), rnd(2, 2, 2, 3, 2))
case("instance_norm3d unbatched", nn.InstanceNorm3d(2), rnd(2, 2, 2, 3))
# PixelShuffle / PixelUnshuffle
case("pixel_shuffle", nn.PixelShuffle(2), rnd(2, 8, 2, 3))
case("pixel_unshuffle", nn.PixelUnshuffle(3), rnd(1, 2, 6, 3))
# Upsample
case("upsample nearest scale", nn.Upsample(scale_factor=2), rnd(1, 2, 3, 2))
case("upsample nearest size 1d", nn.Upsample(size=7), rnd(2, 2, 3))
case("upsample linear align corners", nn.Upsample(scale_factor=2.5, mode="linear", align_corners=True), rnd(1, 2, 4))
case("upsample bilinear", nn.Upsample(size=(5, 7), mode="bilinear"), rnd(1, 2, 3, 4))
case("upsample bicubic", nn.Upsample(scale_factor=2, mode="bicubic"), rnd(1, 2, 3, 3))
case("upsample bicubic align corners", nn.Upsample(size=(4, 6), mode="bicubic", align_corners=True), rnd(2, 1, 3, 4))
# Fold / Unfold
case("unfold", nn.Unfold(2, padding=1, stride=2), rnd(2, 3, 4, 5))
case("unfold rectangular dilation", nn.Unfold((2, 3), dilation=(2, 1)), rnd(1, 2, 5, 5))
case("fold", nn.Fold((4, 5), 2), rnd(2, 8, 12))
case("fold stride padding", nn.Fold(5, 3, padding=1, stride=2), rnd(1, 9, 9))
case("unfold fold round trip", nn.Sequential(nn.Unfold(3, padding=1), nn.Fold((4, 4), 3, padding=1)),
     rnd(1, 2, 4, 4))

# ---------------------------------------------------------------- instance norm with running statistics
norm = cases


def tracked(name, module, train_inputs, eval_input):
    module = prepare(module)
    with torch.no_grad():
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
    x = rnd(*shape)
    ch = torch.arange(shape[1], dtype=torch.float64).reshape([1, shape[1]] + [1] * (len(shape) - 2))
    return x * (1 + ch) + ch


tracked("tracked instance_norm1d", nn.InstanceNorm1d(3, track_running_stats=True),
        [shifted(2, 3, 4), shifted(3, 3, 5), shifted(2, 3, 3)], shifted(2, 3, 4))
tracked("tracked instance_norm2d affine momentum", nn.InstanceNorm2d(2, affine=True, track_running_stats=True,
                                                                     momentum=0.3, eps=1e-3),
        [shifted(2, 2, 3, 3), shifted(1, 2, 2, 3), shifted(3, 2, 2, 2)], shifted(2, 2, 2, 3))
tracked("tracked instance_norm3d", nn.InstanceNorm3d(2, track_running_stats=True),
        [shifted(2, 2, 2, 2, 2), shifted(1, 2, 2, 3, 2)], shifted(1, 2, 2, 2, 2))

# ---------------------------------------------------------------- plain RNN
# Cases named "rnn …": inputs x0 (the sequence) and optionally x1 (h0);
# outputs out and hn; the loss covers both (see step).
case("rnn tanh", nn.RNN(3, 4), rnd(5, 2, 3))
case("rnn relu two layers h0", nn.RNN(3, 4, num_layers=2, nonlinearity="relu"), rnd(4, 2, 3), rnd(2, 2, 4))
case("rnn bidirectional batch first", nn.RNN(2, 3, batch_first=True, bidirectional=True), rnd(2, 4, 2))
case("rnn no bias unbatched h0", nn.RNN(3, 2, bias=False), rnd(4, 3), rnd(1, 2))
case("rnn two layers bidirectional", nn.RNN(2, 3, num_layers=2, bidirectional=True), rnd(3, 2, 2))

# ---------------------------------------------------------------- deformable convolution
# torchvision.ops.DeformConv2d (python3-torchvision 0.14, Debian's package,
# needed only to run this script): inputs x0 (image), x1 (offsets) and,
# for v2, x2 (mask).
from torchvision.ops import DeformConv2d  # noqa: E402


def unit(*shape):
    return torch.tensor(np.round(rng.uniform(0.05, 0.95, shape), 2), dtype=torch.float64)


case("deform_conv2d", DeformConv2d(3, 4, 3, padding=1), rnd(2, 3, 4, 4), rnd(2, 18, 4, 4) * 1.5, unit(2, 9, 4, 4))
case("deform_conv2d groups offset groups stride dilation v1", DeformConv2d(4, 2, (2, 3), stride=(1, 2), dilation=(2, 1),
                                                                          groups=2, bias=False),
     rnd(1, 4, 5, 6), rnd(1, 24, 3, 2) * 2)
dump_here("layers2", cases)

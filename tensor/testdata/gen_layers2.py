"""Writes testdata/layers2.json: reference values and gradients for Kiln's
Unfold, Fold, PixelShuffle, PixelUnshuffle, bicubic Interpolate,
AdaptiveMaxPool1d and ConvTranspose1d, from PyTorch 1.13, and for
DeformConv2d from torchvision 0.14's torchvision.ops.deform_conv2d (Debian's
python3-torchvision, installed for this script only: the Go tests read the
committed JSON).

Inputs are float64 with two decimals. Each case holds its inputs (x, and
w, b for convolutions), the output "out" and the gradients "grad.<input>"
of loss = Σ out·lw with the fixed weights lw[i] = ((37·i) mod 19 − 9)/9
(the Go test builds the same lw). Integer outputs (indices) are exact.
Outputs and gradients are rounded to 12 significant digits.

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_layers2.py
"""
import numpy as np
import torch
import torch.nn.functional as F

from fixtures import dump

torch.manual_seed(0)
rng = np.random.default_rng(22)


def rnd(*shape):
    return torch.tensor(np.round(rng.standard_normal(shape), 2), dtype=torch.float64)


def distinct(*shape):
    n = int(np.prod(shape))
    return torch.tensor(rng.permutation(n).reshape(shape) / 10.0 - n / 20.0, dtype=torch.float64)


def sig(x):
    a = x.detach().double().numpy()
    return torch.tensor(np.vectorize(lambda v: float(f"{v:.12g}"))(a) if a.size else a)


def loss_weights(shape):
    n = int(np.prod(shape)) if len(shape) else 1
    return torch.tensor([((37 * i) % 19 - 9) / 9.0 for i in range(n)], dtype=torch.float64).reshape(shape)


cases = {}


def case(name, fn, **inputs):
    ins = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    res = fn(**ins)
    c = {k: v.detach() for k, v in inputs.items()}
    if isinstance(res, tuple):
        res, idx = res
        c["indices"] = idx
    c["out"] = sig(res)
    if res.numel() > 0:
        (res * loss_weights(res.shape)).sum().backward()
    for k, v in ins.items():
        c["grad." + k] = sig(v.grad if v.grad is not None else torch.zeros_like(v))
    cases[name] = c


# Unfold (im2col) and Fold (col2im)
case("unfold basic", lambda x: F.unfold(x, 2), x=rnd(2, 3, 4, 5))
case("unfold dilation padding stride", lambda x: F.unfold(x, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)),
     x=rnd(1, 2, 5, 6))
case("unfold unbatched", lambda x: F.unfold(x, 3, padding=1, stride=2), x=rnd(2, 4, 4))
case("unfold empty batch", lambda x: F.unfold(x, 2), x=rnd(0, 2, 3, 3))
case("fold basic", lambda x: F.fold(x, (4, 5), 2), x=rnd(2, 12, 12))
case("fold dilation padding stride", lambda x: F.fold(x, (5, 6), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)),
     x=rnd(1, 12, 18))
case("fold unbatched overlapping", lambda x: F.fold(x, 4, 3, padding=1, stride=1), x=rnd(18, 16))
# PixelShuffle / PixelUnshuffle
case("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), x=rnd(2, 8, 2, 3))
case("pixel_shuffle 3d factor 3", lambda x: F.pixel_shuffle(x, 3), x=rnd(9, 2, 2))
case("pixel_shuffle 5d", lambda x: F.pixel_shuffle(x, 2), x=rnd(2, 1, 4, 2, 2))
case("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), x=rnd(2, 2, 4, 6))
case("pixel_unshuffle 3d factor 3", lambda x: F.pixel_unshuffle(x, 3), x=rnd(1, 3, 6))
# Bicubic interpolation (A = -0.75)
case("bicubic up", lambda x: F.interpolate(x, size=(7, 9), mode="bicubic"), x=rnd(1, 2, 4, 5))
case("bicubic up align corners", lambda x: F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=True),
     x=rnd(1, 2, 4, 5))
case("bicubic down", lambda x: F.interpolate(x, size=(3, 2), mode="bicubic"), x=rnd(2, 1, 6, 5))
case("bicubic down align corners", lambda x: F.interpolate(x, size=(3, 1), mode="bicubic", align_corners=True),
     x=rnd(1, 2, 6, 5))
case("bicubic scale factor", lambda x: F.interpolate(x, scale_factor=(1.7, 0.6), mode="bicubic"), x=rnd(1, 2, 5, 6))
case("bicubic tiny input", lambda x: F.interpolate(x, size=(5, 4), mode="bicubic"), x=rnd(1, 1, 1, 2))
# AdaptiveMaxPool1d
case("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), x=distinct(2, 3, 10))
case("adaptive_max_pool1d larger output", lambda x: F.adaptive_max_pool1d(x, 7, return_indices=True),
     x=distinct(1, 2, 5))
case("adaptive_max_pool1d unbatched global", lambda x: F.adaptive_max_pool1d(x, 1, return_indices=True),
     x=distinct(3, 6))
# ConvTranspose1d
case("conv_transpose1d basic", lambda x, w, b: F.conv_transpose1d(x, w, b), x=rnd(2, 3, 5), w=rnd(3, 2, 3), b=rnd(2))
case("conv_transpose1d stride padding output padding dilation",
     lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=2, output_padding=1, dilation=2),
     x=rnd(1, 2, 4), w=rnd(2, 3, 3), b=rnd(3))
case("conv_transpose1d groups", lambda x, w: F.conv_transpose1d(x, w, None, stride=2, groups=2),
     x=rnd(2, 4, 3), w=rnd(4, 3, 2))
case("conv_transpose1d unbatched", lambda x, w, b: F.conv_transpose1d(x, w, b, padding=1), x=rnd(2, 4), w=rnd(2, 1, 3),
     b=rnd(1))

# DeformConv2d (torchvision.ops.deform_conv2d); offsets up to a few pixels,
# so that some samples fall outside the image.
from torchvision.ops import deform_conv2d  # noqa: E402


def unit(*shape):
    return torch.tensor(np.round(rng.uniform(0.05, 0.95, shape), 2), dtype=torch.float64)


case("deform_conv2d basic", lambda x, offset, weight, bias, mask: deform_conv2d(x, offset, weight, bias, mask=mask),
     x=rnd(2, 3, 5, 5), offset=rnd(2, 18, 3, 3) * 1.5, weight=rnd(4, 3, 3, 3), bias=rnd(4), mask=unit(2, 9, 3, 3))
case("deform_conv2d stride padding dilation groups offset groups",
     lambda x, offset, weight, bias, mask: deform_conv2d(x, offset, weight, bias, stride=(2, 1), padding=(1, 2),
                                                         dilation=(2, 1), mask=mask),
     x=rnd(1, 4, 6, 5), offset=rnd(1, 24, 3, 7) * 2, weight=rnd(6, 2, 2, 3), bias=rnd(6), mask=unit(1, 12, 3, 7))
case("deform_conv2d v1 no bias", lambda x, offset, weight: deform_conv2d(x, offset, weight),
     x=rnd(2, 2, 4, 4), offset=rnd(2, 8, 3, 3) * 3, weight=rnd(3, 2, 2, 2))

dump("layers2", cases)

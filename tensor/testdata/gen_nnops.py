"""Writes testdata/nnops.json: reference values for Kiln's convolution,
pooling, interpolation, embedding and attention ops.

Inputs are float64 with two decimals (short JSON); outputs are computed in
float64 and rounded to 1e-7, so tests compare with an absolute tolerance of
about 1e-6. PyTorch 1.13 has no scaled_dot_product_attention, so attention
references come from NumPy and the defining equation
softmax(q·kᵀ·scale + mask)·v.

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_nnops.py
"""
import numpy as np
import torch
import torch.nn.functional as F

from fixtures import dump

torch.manual_seed(0)
rng = np.random.default_rng(0)


def rnd(*shape):
    """Random float64 tensor with two decimals."""
    return torch.tensor(np.round(rng.standard_normal(shape), 2), dtype=torch.float64)


def distinct(*shape):
    """Float64 tensor of distinct values (no ties for max pooling)."""
    n = int(np.prod(shape))
    return torch.tensor(rng.permutation(n).reshape(shape) / 10.0 - n / 20.0, dtype=torch.float64)


def out(x):
    if x.dtype.is_floating_point:
        return torch.round(x * 1e7) / 1e7
    return x


cases = {}


def conv(name, x, w, b=None, fn=F.conv2d, **kw):
    c = {"x": x, "w": w, "out": out(fn(x, w, b, **kw))}
    if b is not None:
        c["b"] = b
    cases[name] = c


# Conv2d
conv("conv2d basic", rnd(2, 3, 6, 6), rnd(4, 3, 3, 3), rnd(4))
conv("conv2d stride 2 padding 1", rnd(1, 2, 7, 7), rnd(3, 2, 3, 3), rnd(3), stride=2, padding=1)
conv("conv2d rectangular stride padding kernel", rnd(2, 2, 7, 6), rnd(3, 2, 3, 2), rnd(3), stride=(2, 1), padding=(1, 0))
conv("conv2d same odd kernel", rnd(1, 2, 5, 6), rnd(3, 2, 3, 3), rnd(3), padding="same")
conv("conv2d same even kernel", rnd(1, 2, 5, 6), rnd(3, 2, 4, 2), None, padding="same")
conv("conv2d same dilated", rnd(1, 2, 6, 6), rnd(2, 2, 3, 2), rnd(2), padding="same", dilation=(2, 3))
conv("conv2d valid", rnd(1, 2, 5, 5), rnd(2, 2, 2, 2), None, padding="valid")
conv("conv2d dilation", rnd(1, 2, 7, 8), rnd(3, 2, 3, 3), rnd(3), dilation=2, padding=2)
conv("conv2d groups", rnd(2, 4, 5, 5), rnd(6, 2, 3, 3), rnd(6), groups=2, padding=1)
conv("conv2d depthwise", rnd(2, 3, 5, 5), rnd(6, 1, 3, 3), rnd(6), groups=3, stride=2)
conv("conv2d no bias", rnd(2, 3, 4, 5), rnd(2, 3, 2, 2), None)
conv("conv2d unbatched", rnd(3, 5, 5), rnd(2, 3, 3, 3), rnd(2), padding=1)
# Conv1d
conv("conv1d stride padding", rnd(2, 3, 10), rnd(4, 3, 3), rnd(4), F.conv1d, stride=2, padding=1)
conv("conv1d groups dilation", rnd(2, 4, 9), rnd(2, 2, 3), None, F.conv1d, groups=2, dilation=2)
conv("conv1d same", rnd(1, 2, 7), rnd(3, 2, 4), rnd(3), F.conv1d, padding="same")
conv("conv1d unbatched", rnd(2, 6), rnd(3, 2, 2), rnd(3), F.conv1d)
# ConvTranspose
conv("conv_transpose2d basic", rnd(2, 3, 4, 4), rnd(3, 2, 3, 3), rnd(2), F.conv_transpose2d)
conv("conv_transpose2d stride padding output padding", rnd(1, 2, 3, 4), rnd(2, 3, 3, 3), rnd(3), F.conv_transpose2d,
     stride=2, padding=1, output_padding=1)
conv("conv_transpose2d rectangular", rnd(1, 2, 3, 3), rnd(2, 2, 2, 3), None, F.conv_transpose2d,
     stride=(3, 2), padding=(0, 1), output_padding=(2, 0))
conv("conv_transpose2d groups dilation", rnd(1, 4, 3, 3), rnd(4, 3, 3, 3), rnd(6), F.conv_transpose2d,
     groups=2, dilation=2)
conv("conv_transpose1d stride output padding", rnd(2, 3, 4), rnd(3, 2, 4), rnd(2), F.conv_transpose1d,
     stride=3, output_padding=2, padding=1)


# Max pooling
def maxpool(name, x, fn=F.max_pool2d, **kw):
    v, i = fn(x, return_indices=True, **kw)
    cases[name] = {"x": x, "out": out(v), "indices": i}


maxpool("max_pool2d basic", distinct(2, 3, 6, 6), kernel_size=2)
maxpool("max_pool2d stride padding", distinct(1, 2, 7, 7), kernel_size=3, stride=2, padding=1)
maxpool("max_pool2d ceil mode", distinct(1, 2, 6, 7), kernel_size=3, stride=2, ceil_mode=True)
maxpool("max_pool2d ceil mode padding", distinct(1, 1, 5, 5), kernel_size=2, stride=2, padding=1, ceil_mode=True)
maxpool("max_pool2d dilation", distinct(1, 2, 7, 6), kernel_size=2, stride=1, dilation=(2, 3))
maxpool("max_pool2d rectangular", distinct(2, 1, 6, 7), kernel_size=(2, 3), stride=(1, 2), padding=(1, 1))
maxpool("max_pool2d unbatched", distinct(2, 5, 5), kernel_size=3, stride=2)
maxpool("max_pool1d", distinct(2, 3, 11), F.max_pool1d, kernel_size=3, stride=2, padding=1, ceil_mode=True)


# Average pooling
def avgpool(name, x, fn=F.avg_pool2d, **kw):
    cases[name] = {"x": x, "out": out(fn(x, **kw))}


avgpool("avg_pool2d basic", rnd(2, 3, 6, 6), kernel_size=2)
avgpool("avg_pool2d padding counts pad", rnd(1, 2, 7, 7), kernel_size=3, stride=2, padding=1)
avgpool("avg_pool2d padding excludes pad", rnd(1, 2, 7, 7), kernel_size=3, stride=2, padding=1, count_include_pad=False)
avgpool("avg_pool2d ceil mode counts pad", rnd(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True)
avgpool("avg_pool2d ceil mode excludes pad", rnd(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True,
        count_include_pad=False)
avgpool("avg_pool2d divisor override", rnd(1, 2, 5, 5), kernel_size=(2, 3), stride=(2, 1), divisor_override=4)
avgpool("avg_pool1d", rnd(2, 3, 9), F.avg_pool1d, kernel_size=4, stride=3, padding=2, ceil_mode=True)

# Adaptive average pooling
avgpool("adaptive_avg_pool2d non divisible", rnd(2, 3, 7, 5), F.adaptive_avg_pool2d, output_size=(3, 2))
avgpool("adaptive_avg_pool2d larger output", rnd(1, 2, 5, 4), F.adaptive_avg_pool2d, output_size=(7, 3))
avgpool("adaptive_avg_pool2d global", rnd(2, 3, 4, 5), F.adaptive_avg_pool2d, output_size=1)
avgpool("adaptive_avg_pool1d", rnd(2, 3, 10), F.adaptive_avg_pool1d, output_size=4)


# Interpolation
def interp(name, x, **kw):
    cases[name] = {"x": x, "out": out(F.interpolate(x, **kw))}


interp("nearest size up", rnd(1, 2, 5, 4), size=(8, 7), mode="nearest")
interp("nearest scale 2", rnd(1, 2, 3, 4), scale_factor=2, mode="nearest")
interp("nearest size down", rnd(1, 2, 8, 8), size=(3, 5), mode="nearest")
interp("nearest scale factor 1.3", rnd(1, 1, 5, 6), scale_factor=1.3, mode="nearest")
interp("nearest scale factor recomputed", rnd(1, 1, 5, 6), scale_factor=1.3, mode="nearest", recompute_scale_factor=True)
interp("nearest-exact size", rnd(1, 2, 5, 7), size=(8, 3), mode="nearest-exact")
interp("bilinear up", rnd(2, 2, 4, 5), size=(7, 9), mode="bilinear", align_corners=False)
interp("bilinear up align corners", rnd(2, 2, 4, 5), size=(7, 9), mode="bilinear", align_corners=True)
interp("bilinear down", rnd(1, 2, 9, 8), size=(4, 3), mode="bilinear", align_corners=False)
interp("bilinear down align corners", rnd(1, 2, 9, 8), size=(4, 1), mode="bilinear", align_corners=True)
interp("bilinear scale factor", rnd(1, 1, 5, 6), scale_factor=(1.7, 0.6), mode="bilinear", align_corners=False)
interp("linear align corners", rnd(2, 3, 6), size=10, mode="linear", align_corners=True)
interp("nearest 1d", rnd(2, 3, 6), size=4, mode="nearest")

# Embedding, with weight gradients for the loss Σ out·gw
for name, pad in [("embedding", None), ("embedding padding index", 2)]:
    w = rnd(10, 4).requires_grad_()
    idx = torch.tensor([[1, 2, 7], [7, 0, 2]], dtype=torch.int64)
    o = F.embedding(idx, w, padding_idx=pad)
    gw = rnd(*o.shape)
    (o * gw).sum().backward()
    cases[name] = {"w": w, "indices": idx, "out": out(o), "loss_weights": gw, "w_grad": out(w.grad)}


# Attention, from the defining equation in NumPy
def softmax(s):
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def attention(name, q, k, v, mask=None, causal=False, scale=None):
    qn, kn, vn = q.numpy(), k.numpy(), v.numpy()
    sc = 1 / np.sqrt(qn.shape[-1]) if scale is None else scale
    s = qn @ np.swapaxes(kn, -1, -2) * sc
    c = {"q": q, "k": k, "v": v}
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), dtype=bool)), s, -np.inf)
    if mask is not None:
        c["mask"] = mask
        mn = mask.numpy()
        s = np.where(mn, s, -np.inf) if mn.dtype == bool else s + mn
    c["out"] = out(torch.tensor(softmax(s) @ vn))
    cases[name] = c


attention("attention plain", rnd(2, 3, 4, 5), rnd(2, 3, 6, 5), rnd(2, 3, 6, 7))
attention("attention bool mask", rnd(2, 3, 4, 5), rnd(2, 3, 6, 5), rnd(2, 3, 6, 7),
          mask=torch.tensor(rng.random((4, 6)) < 0.7) | torch.eye(4, 6, dtype=torch.bool))
attention("attention float mask", rnd(2, 2, 4, 3), rnd(2, 2, 5, 3), rnd(2, 2, 5, 2), mask=rnd(2, 1, 4, 5))
attention("attention causal", rnd(2, 3, 4, 5), rnd(2, 3, 6, 5), rnd(2, 3, 6, 2), causal=True)
attention("attention causal square", rnd(1, 2, 5, 4), rnd(1, 2, 5, 4), rnd(1, 2, 5, 4), causal=True)
attention("attention broadcast batch scale", rnd(2, 3, 4, 5), rnd(1, 3, 6, 5), rnd(3, 6, 4), scale=0.3)
attention("attention key padding mask", rnd(2, 2, 3, 4), rnd(2, 2, 5, 4), rnd(2, 2, 5, 4),
          mask=torch.tensor([[True, True, True, False, False], [True, True, True, True, True]]).reshape(2, 1, 1, 5))

dump("nnops", cases)

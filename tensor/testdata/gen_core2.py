"""Writes testdata/core2.json: PyTorch 1.13 reference values for the tensor
ops that no other fixture file checks (OPS.md lists them): logical and
boolean ops, Sub, Mean/MeanKeep, SumKeep, DivScalar, Squeeze, RMSNorm
(composed in torch from its definition: 1.13 has no rms_norm), the
n-dimensional inverse FFT (complex as a trailing dimension of 2, as
torch.view_as_real), ZerosLike and FullLike, with the gradients PyTorch's
backward gives (seeded with ones) where the op has one.

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_core2.py
"""
import torch

from fixtures import dump

torch.manual_seed(2)
cases = {}


def rnd(*shape, dtype=torch.float32):
    return (torch.rand(*shape, dtype=torch.float64) * 4 - 2).to(dtype)


def with_grads(name, fn, **inputs):
    ts = {k: v.clone().requires_grad_(v.dtype.is_floating_point) for k, v in inputs.items()}
    out = fn(**ts)
    case = dict(inputs)
    case["out"] = out.detach()
    if out.requires_grad:
        out.backward(torch.ones_like(out))
        for k, t in ts.items():
            if t.grad is not None:
                case["grad_" + k] = t.grad
    cases[name] = case


# Logical ops on bools and on numbers (non-zero is true), with broadcasting.
a, b = torch.tensor([[True, False, True], [False, False, True]]), torch.tensor([True, False, False])
for name, fn in {"and": torch.logical_and, "or": torch.logical_or, "xor": torch.logical_xor}.items():
    cases[name + "_bool"] = {"a": a, "b": b, "out": fn(a, b)}
    x, y = torch.tensor([[0.0, 1.5, -2.0], [3.0, 0.0, 0.0]]), torch.tensor([2, 0, 0], dtype=torch.int64)
    cases[name + "_numbers"] = {"a": x, "b": y, "out": fn(x, y)}
cases["not_bool"] = {"a": a, "out": torch.logical_not(a)}
cases["not_numbers"] = {"a": torch.tensor([0.0, -1.0, 2.5]), "out": torch.logical_not(torch.tensor([0.0, -1.0, 2.5]))}

# Arithmetic and reductions, float32 and float64, with broadcasting and
# negative dims.
for dt, tag in [(torch.float32, "f32"), (torch.float64, "f64")]:
    with_grads("sub_broadcast_" + tag, lambda x, y: x - y, x=rnd(2, 3, 4, dtype=dt), y=rnd(3, 1, dtype=dt))
    with_grads("divscalar_" + tag, lambda x: x / -2.5, x=rnd(3, 4, dtype=dt))
    with_grads("mean_all_" + tag, lambda x: x.mean(), x=rnd(2, 3, 4, dtype=dt))
    with_grads("mean_dims_" + tag, lambda x: x.mean(dim=(0, -1)), x=rnd(2, 3, 4, dtype=dt))
    with_grads("meankeep_" + tag, lambda x: x.mean(dim=1, keepdim=True), x=rnd(2, 3, 4, dtype=dt))
    with_grads("sumkeep_" + tag, lambda x: x.sum(dim=(-1, 0), keepdim=True), x=rnd(2, 3, 4, dtype=dt))
    with_grads("squeeze_" + tag, lambda x: x.squeeze(1), x=rnd(2, 1, 4, dtype=dt))
    with_grads("squeeze_all_" + tag, lambda x: x.squeeze(), x=rnd(1, 3, 1, dtype=dt))
    # RMSNorm over the last dimension with a weight, eps 1e-6.
    with_grads("rmsnorm_" + tag, lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
               x=rnd(2, 3, 8, dtype=dt), w=rnd(8, dtype=dt))
    cases["meanempty_" + tag] = {"x": torch.zeros(0, 3, dtype=dt), "out": torch.zeros(0, 3, dtype=dt).mean(dim=0)}

# Integer Sub and SumKeep keep integers; Mean refuses them (as torch).
cases["sub_int"] = {"x": torch.tensor([[5, -2], [7, 0]]), "y": torch.tensor([3, 4]),
                    "out": torch.tensor([[5, -2], [7, 0]]) - torch.tensor([3, 4])}
cases["sumkeep_int"] = {"x": torch.tensor([[5, -2], [7, 1]]), "out": torch.tensor([[5, -2], [7, 1]]).sum(dim=(-1, 0), keepdim=True)}

# The inverse n-dimensional FFT over dims (0, 1) of a [3, 5, 2] complex
# tensor, ortho and backward norms, with gradients.
for norm in ["ortho", "backward"]:
    z = rnd(3, 5, 2, dtype=torch.float64)

    def ifftn(z, norm=norm):
        return torch.view_as_real(torch.fft.ifftn(torch.view_as_complex(z), dim=(0, 1), norm=norm))
    with_grads("ifftn_" + norm, ifftn, z=z)

# Constructors of another tensor's shape and dtype.
for dt, tag in [(torch.float32, "f32"), (torch.int64, "i64")]:
    x = torch.ones(2, 3, dtype=dt)
    cases["zeroslike_" + tag] = {"x": x, "out": torch.zeros_like(x)}
    cases["fulllike_" + tag] = {"x": x, "out": torch.full_like(x, 7)}

dump("core2", cases)

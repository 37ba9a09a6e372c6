"""Writes nn/testdata/act2.json: PyTorch 1.13 references for the activations
of tensor/activation_extra.go and nn/activation_extra.go (PReLU, GLU,
Hardtanh, Threshold, Softmin, Softshrink, Hardshrink, Tanhshrink and RReLU
in evaluation mode; RReLU's training mode is random and is tested by its
distribution in Go).

Run from nn/testdata with Debian's interpreter: /usr/bin/python3 gen_act2.py

Each case "act2/<op>/<variant>" holds the float64 inputs ("x", and "w" for
PReLU's weight), the output "y", fixed random weights "gw" and the
gradients "dx" (and "dw") of sum(y * gw). The options are encoded in the
variant name and repeated in the Go tests' tables, which fail on any case
they do not know. Inputs hit the kinks exactly (the bounds, ±lambda, the
threshold, 0); "nan" variants hold a NaN. Softshrink of NaN is left out:
PyTorch 1.13 gives 0 there, Kiln keeps NaN.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tensor/testdata"))
from fixtures import t2j  # noqa: E402

torch.manual_seed(0)
cases = {}

GRID = torch.tensor([-3.0, -2.0, -1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, -0.75, 0.75, 4.0],
                    dtype=torch.float64).reshape(4, 4)
NAN = torch.tensor([float("nan"), -1.0, 1.0, 0.5, -0.5, 2.0], dtype=torch.float64)


def add(name, fn, x, w=None):
    """Records fn(x[, w]) and the gradients of sum(y * gw)."""
    x = x.clone().double().requires_grad_()
    args = [x]
    if w is not None:
        w = w.clone().double().requires_grad_()
        args.append(w)
    y = fn(*args)
    gw = torch.rand(y.shape, dtype=torch.float64) * 2 - 1
    (y * gw).sum().backward()
    rec = {"x": x.detach(), "y": y.detach(), "gw": gw, "dx": x.grad}
    if w is not None:
        rec["w"] = w.detach()
        rec["dw"] = w.grad
    cases["act2/" + name] = rec


def randn(*s):
    return torch.randn(*s, dtype=torch.float64) * 2


for lo, hi in [(-1.0, 1.0), (-2.0, 0.5)]:
    add(f"hardtanh/{lo:g}_{hi:g}", lambda x, lo=lo, hi=hi: F.hardtanh(x, lo, hi), GRID)
add("hardtanh/nan", lambda x: F.hardtanh(x, -1.0, 1.0), NAN)
for th, v in [(0.5, -3.0), (0.0, 0.0), (-1.0, 2.0)]:
    add(f"threshold/{th:g}_{v:g}", lambda x, th=th, v=v: F.threshold(x, th, v), GRID)
add("threshold/nan", lambda x: F.threshold(x, 0.5, -3.0), NAN)
for lam in [0.5, 1.5, 0.0]:
    add(f"softshrink/{lam:g}", lambda x, lam=lam: F.softshrink(x, lam), GRID)
for lam in [0.5, 1.5, 0.0]:
    add(f"hardshrink/{lam:g}", lambda x, lam=lam: F.hardshrink(x, lam), GRID)
add("hardshrink/nan", lambda x: F.hardshrink(x, 0.5), NAN)
add("tanhshrink/grid", F.tanhshrink, GRID)
add("tanhshrink/large", F.tanhshrink, torch.tensor([-30.0, -1e-3, 1e-3, 25.0], dtype=torch.float64))

x3 = randn(2, 3, 4)
add("softmin/1", lambda x: F.softmin(x, 1), x3)
add("softmin/-1", lambda x: F.softmin(x, -1), x3)
add("softmin/0", lambda x: F.softmin(x, 0), x3)
add("softmin/large", lambda x: F.softmin(x, 0), torch.tensor([-800.0, 1.0, 700.0], dtype=torch.float64))

x4 = randn(2, 4, 6)
add("glu/-1", lambda x: F.glu(x, -1), x4)
add("glu/0", lambda x: F.glu(x, 0), x4)
add("glu/1", lambda x: F.glu(x, 1), x4)
add("glu/-2", lambda x: F.glu(x, -2), x4)

xp = randn(2, 3, 4)
xp[0, 0, 0] = 0.0
add("prelu/single", F.prelu, xp, torch.tensor([0.25]))
add("prelu/channels", F.prelu, xp, torch.tensor([0.25, -0.5, 1.5]))
add("prelu/channels_4d", F.prelu, randn(2, 3, 2, 2), torch.tensor([0.1, 0.2, 0.3]))
add("prelu/matrix", F.prelu, randn(5, 3), torch.tensor([0.1, -0.2, 2.0]))
add("prelu/vector", F.prelu, randn(5), torch.tensor([0.3]))
add("prelu/scalar", F.prelu, torch.tensor(-2.0, dtype=torch.float64), torch.tensor([0.3]))
add("prelu/one_channel", F.prelu, randn(2, 1, 3), torch.tensor([0.4]))

add("rrelu_eval/default", lambda x: F.rrelu(x, 1.0 / 8, 1.0 / 3, training=False), GRID)
for lo, hi in [(0.1, 0.3), (0.5, 0.5)]:
    add(f"rrelu_eval/{lo:g}_{hi:g}", lambda x, lo=lo, hi=hi: F.rrelu(x, lo, hi, training=False), GRID)

# Empty inputs: every op gives an empty output and an empty gradient.
e = torch.zeros(0, 4, dtype=torch.float64)
add("hardtanh/empty", lambda x: F.hardtanh(x, -1.0, 1.0), e)
add("softmin/empty", lambda x: F.softmin(x, 1), e)
add("glu/empty", lambda x: F.glu(x, 1), e)
add("prelu/empty", F.prelu, torch.zeros(0, 3, 2, dtype=torch.float64), torch.tensor([0.25, -0.5, 1.5]))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "act2.json"), "w") as f:
    json.dump({c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}, f,
              separators=(",", ":"), sort_keys=True)
    f.write("\n")
print("wrote act2.json", len(cases), "cases")

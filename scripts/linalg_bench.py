"""Times PyTorch's (LAPACK's) linear algebra on the shapes of Kiln's
tensor/linalg_bench_test.go benchmarks, with 1 and 2 threads, for the
ratios reported beside `go test ./tensor/ -run XXX -bench 'SVD|Svdvals|Eigh256|Inverse|Solve'`.

Run: /usr/bin/python3 scripts/linalg_bench.py
"""
import time

import torch


def bench(name, shape, fn, rhs=None, reps=5):
    torch.manual_seed(0)
    n = shape[-1]
    a = torch.randn(*shape) + n * torch.eye(n)
    fn(a) if rhs is None else fn(a, rhs)  # warm up
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(a) if rhs is None else fn(a, rhs)
        best = min(best, time.perf_counter() - t0)
    mats = 1
    for d in shape[:-2]:
        mats *= d
    print("%-24s %12.3f ms/op %14.2f matrices/s" % (name, best * 1e3, mats / best))


for threads in (1, 2):
    torch.set_num_threads(threads)
    print("torch", torch.__version__, "threads", torch.get_num_threads())
    bench("SVD256", (256, 256), lambda a: torch.linalg.svd(a, full_matrices=False))
    bench("SVDBatch64x32", (64, 32, 32), lambda a: torch.linalg.svd(a, full_matrices=False))
    bench("Svdvals256", (256, 256), torch.linalg.svdvals)
    bench("Eigh256", (256, 256), torch.linalg.eigh)
    bench("Inverse256", (256, 256), torch.linalg.inv)
    bench("InverseBatch64x32", (64, 32, 32), torch.linalg.inv)
    bench("Solve256", (256, 256), torch.linalg.solve, torch.randn(256, 16))
    bench("SolveBatch64x32", (64, 32, 32), torch.linalg.solve, torch.randn(64, 32, 4))

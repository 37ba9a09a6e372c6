#!/usr/bin/python3
"""Time a GPT-style decoder's training step in Kiln and in PyTorch.

Run with Debian's /usr/bin/python3 (python3-torch installed). The model is
the one nn/gpt_bench_test.go builds: token and position embeddings (N(0,
0.02)), pre-norm TransformerEncoderLayers (--size 256: width 256, 6
layers, 4 heads; --size 512: width 512, 8 layers, 8 heads; feed-forward
4·width, GELU, no dropout, causal mask), a final LayerNorm and a linear
head over a vocabulary of 1024, trained with AdamW (lr 1e-3) on batches
of 8 sequences of 256 tokens from the same synthetic task (each
token one more than the token two places before it, modulo the
vocabulary, the first two from an LCG), next-token cross-entropy.

For each thread count Kiln (BenchmarkGPTTrainStep, compiled once, run with
KILN_CPU_THREADS and GOMAXPROCS set) and PyTorch run in turn, --rounds
times interleaved, and each keeps its best round; a round is the mean of
--steps steps after two warm-up steps. PyTorch runs as Debian ships it
("torch") and tuned as scripts/bench_compare.py tunes it ("torch+":
glibc malloc told to keep freed memory, ATEN_CPU_CAPABILITY=avx2, and
AdamW's foreach implementation); the ratio is against the faster of the
two. Wall time and process CPU time per step are both reported: on a
shared machine the CPU time is the steadier of the two.

--curve N prints the loss of the first N steps of each (from their own
initialisations, which differ: compare the curves' shapes, not values).
--baseline EXE measures a second Kiln test binary in the same rounds (the
"before" of a change).
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
VOCAB, CONTEXT, BATCH = 1024, 256, 8
SIZES = {256: (6, 4), 512: (8, 8)}  # width: (layers, heads), as gptSizes in nn/gpt_bench_test.go
WIDTH = int(os.environ.get("GPT_WIDTH", "256"))
LAYERS, HEADS = SIZES[WIDTH]
TUNED = dict(MALLOC_MMAP_THRESHOLD_=str(1 << 32), MALLOC_TRIM_THRESHOLD_=str(1 << 34),
             MALLOC_TOP_PAD_=str(1 << 29), ATEN_CPU_CAPABILITY="avx2")


def batch(step):
    """gptBatch of nn/gpt_bench_test.go: inputs and targets, [B*T] each."""
    state = step * 2654435761 + 12345
    inputs, targets = [], []
    for _ in range(BATCH):
        seq = []
        for _ in range(2):
            state = (state * 6364136223846793005 + 1442695040888963407) & ((1 << 63) - 1)
            seq.append((state >> 33) % VOCAB)
        while len(seq) < CONTEXT + 1:
            seq.append((seq[-2] + 1) % VOCAB)
        inputs += seq[:CONTEXT]
        targets += seq[1:]
    return inputs, targets


def torch_trainer(foreach):
    import torch
    nn = torch.nn
    torch.manual_seed(1)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, WIDTH)
            self.pos = nn.Embedding(CONTEXT, WIDTH)
            nn.init.normal_(self.tok.weight, std=0.02)
            nn.init.normal_(self.pos.weight, std=0.02)
            layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, VOCAB)
            self.register_buffer("mask", torch.triu(torch.full((CONTEXT, CONTEXT), float("-inf")), 1))
            self.register_buffer("positions", torch.arange(CONTEXT))

        def forward(self, x, y):
            h = self.tok(x) + self.pos(self.positions)
            h = self.encoder(h, mask=self.mask)
            logits = self.head(self.norm(h))
            return nn.functional.cross_entropy(logits.view(-1, VOCAB), y.view(-1))

    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=foreach)

    def step(i):
        x, y = batch(i)
        x = torch.tensor(x).view(BATCH, CONTEXT)
        y = torch.tensor(y).view(BATCH, CONTEXT)
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def worker():
    import torch
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    step = torch_trainer(foreach=os.environ.get("GPT_FOREACH") == "1")
    print(json.dumps({"ready": True}), flush=True)
    i = 0
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("curve"):
            fresh = torch_trainer(foreach=os.environ.get("GPT_FOREACH") == "1")
            print(json.dumps({"losses": [fresh(j) for j in range(req["curve"])]}), flush=True)
            continue
        for _ in range(2):
            step(i)
            i += 1
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(req["steps"]):
            step(i)
            i += 1
        n = req["steps"]
        print(json.dumps({"wall": (time.perf_counter() - t0) / n, "cpu": (time.process_time() - c0) / n}), flush=True)


class Peer:
    def __init__(self, threads, tuned):
        env = dict(os.environ, GPT_WIDTH=str(WIDTH), OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        if tuned:
            env.update(TUNED, GPT_FOREACH="1")
        self.p = subprocess.Popen([sys.executable, __file__, "--worker"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        json.loads(self.p.stdout.readline())

    def ask(self, req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def kiln(exe, threads, steps, curve=0):
    env = dict(os.environ, KILN_CPU_THREADS=str(threads), GOMAXPROCS=str(threads))
    if curve:
        env["KILN_GPT_STEPS"] = str(curve)
    out = subprocess.run([exe, "-test.run", "^$", "-test.bench", f"^BenchmarkGPTTrainStep$/^d={WIDTH},L={LAYERS}$",
                          "-test.benchtime", f"{steps}x", "-test.count", "1", "-test.v"],
                         env=env, capture_output=True, text=True, check=True, cwd=os.path.join(ROOT, "nn")).stdout
    wall = re.search(r"([0-9.]+) ms/step", out)
    cpu = re.search(r"([0-9.]+) cpu-ms/step", out)
    if not wall or not cpu:
        raise SystemExit("no ms/step in the benchmark's output:\n" + out)
    losses = [float(v) for v in re.findall(r"step \d+ loss ([0-9.]+)", out)]
    return dict(wall=float(wall.group(1)) / 1e3, cpu=float(cpu.group(1)) / 1e3, losses=losses[:curve])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each is kept")
    ap.add_argument("--steps", type=int, default=4, help="timed steps per round")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--size", type=int, default=256, choices=sorted(SIZES), help="model width (256: 6 layers; 512: 8)")
    ap.add_argument("--curve", type=int, default=0, help="also print the first N losses of each")
    ap.add_argument("--exe", default="", help="a prebuilt nn test binary (go test -c ./nn) instead of building one")
    ap.add_argument("--baseline", default="", help="another nn test binary (say, of an earlier commit), measured as "
                    "\"base\" in the same rounds")
    args = ap.parse_args()
    if args.worker:
        return worker()
    global WIDTH, LAYERS, HEADS
    WIDTH = args.size
    LAYERS, HEADS = SIZES[WIDTH]
    threads = [int(t) for t in args.threads.split(",")]
    libs = ("kiln", "torch", "torch+") + (("base",) if args.baseline else ())
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        exe = args.exe
        if not exe:
            exe = os.path.join(tmp, "nn.test")
            subprocess.run(["go", "test", "-c", "-o", exe, "./nn"], cwd=ROOT, check=True)
        peers = {(t, tuned): Peer(t, tuned) for t in threads for tuned in (False, True)}
        try:
            if args.curve:
                k = kiln(exe, threads[0], 1, args.curve)["losses"]
                p = peers[(threads[0], False)].ask({"curve": args.curve})["losses"]
                print(f"{'step':>4} {'Kiln loss':>10} {'PyTorch loss':>12}")
                for i in range(args.curve):
                    print(f"{i:>4} {k[i]:>10.4f} {p[i]:>12.4f}")
            for r in range(args.rounds):
                for t in threads:
                    for lib in libs:
                        if lib in ("kiln", "base"):
                            v = kiln(exe if lib == "kiln" else args.baseline, t, args.steps)
                        else:
                            v = peers[(t, lib == "torch+")].ask({"steps": args.steps})
                        for what in ("wall", "cpu"):
                            k = (t, lib, what)
                            best[k] = min(best.get(k, float("inf")), v[what])
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            for p in peers.values():
                p.close()
    print(f"best of {args.rounds} interleaved rounds of {args.steps} steps; seconds per step "
          f"(batch {BATCH}×{CONTEXT}, d={WIDTH}, {LAYERS} layers, {HEADS} heads, vocab {VOCAB})")
    hdr = f"{'thr':>3} {'':>4} {'Kiln':>8} {'torch':>8} {'torch+':>8} {'Kiln/fastest torch':>19}"
    if args.baseline:
        hdr += f" {'base':>8} {'base/fastest torch':>19}"
    print(hdr)
    print("-" * len(hdr))
    for t in threads:
        for what in ("wall", "cpu"):
            k, p, q = (best[(t, lib, what)] for lib in libs[:3])
            line = f"{t:>3} {what:>4} {k:8.3f} {p:8.3f} {q:8.3f} {k / min(p, q):19.2f}"
            if args.baseline:
                b = best[(t, "base", what)]
                line += f" {b:8.3f} {b / min(p, q):19.2f}"
            print(line)


if __name__ == "__main__":
    main()

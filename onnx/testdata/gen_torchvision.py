"""Builds torchvision's ResNet-18, MobileNetV2 and SqueezeNet 1.1 with seeded
random weights (nothing is downloaded: weights=None), gives their batch
norms non-trivial running statistics, and writes for each, into the folder
given as the first argument:

  <name>.onnx          torch.onnx.export at opset 13, batch dimension dynamic
  <name>.input.bin     a [2, 3, 224, 224] float32 input, little-endian
  <name>.output.bin    PyTorch's [2, 1000] float32 logits for it

Run by onnx's TestTorchvisionModels with Debian's interpreter
(/usr/bin/python3, python3-torchvision).

With --bench (after the folder), it writes ResNet-18 only and then times
PyTorch on it as onnx's BenchmarkResNet18 times Kiln: inference of batch 1
and 32 in evaluation mode under torch.no_grad, best of --rounds rounds, on
1 and 2 threads, printed as "resnet18 batch=N threads=T ms=…".
"""
import os
import sys
import time

import torch
import torchvision


def build(i, name):
    torch.manual_seed(i)
    model = getattr(torchvision.models, name)(weights=None)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            torch.nn.init.uniform_(m.weight, 0.5, 1.5)
            torch.nn.init.uniform_(m.bias, -0.2, 0.2)
    return model.eval()


out = sys.argv[1]
bench = "--bench" in sys.argv
rounds = 5
if "--rounds" in sys.argv:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
names = ["resnet18"] if bench else ["resnet18", "mobilenet_v2", "squeezenet1_1"]
for i, name in enumerate(names):
    model = build(i, name)
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, x, os.path.join(out, name + ".onnx"), opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    x.numpy().astype("<f4").tofile(os.path.join(out, name + ".input.bin"))
    y.numpy().astype("<f4").tofile(os.path.join(out, name + ".output.bin"))

if bench:
    model = build(0, "resnet18")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for batch in (1, 32):
            x = torch.randn(batch, 3, 224, 224)
            best = float("inf")
            with torch.no_grad():
                model(x)
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    model(x)
                    best = min(best, time.perf_counter() - t0)
            print(f"resnet18 batch={batch} threads={threads} ms={best * 1e3:.1f}", flush=True)

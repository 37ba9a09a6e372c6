"""Builds torchvision's ResNet-18, MobileNetV2 and SqueezeNet 1.1 with seeded
random weights (nothing is downloaded: weights=None), gives their batch
norms non-trivial running statistics, and writes for each, into the folder
given as the only argument:

  <name>.onnx          torch.onnx.export at opset 13, batch dimension dynamic
  <name>.input.bin     a [2, 3, 224, 224] float32 input, little-endian
  <name>.output.bin    PyTorch's [2, 1000] float32 logits for it

Run by onnx's TestTorchvisionModels with Debian's interpreter
(/usr/bin/python3, python3-torchvision).
"""
import os
import sys

import torch
import torchvision

out = sys.argv[1]
for i, name in enumerate(["resnet18", "mobilenet_v2", "squeezenet1_1"]):
    torch.manual_seed(i)
    model = getattr(torchvision.models, name)(weights=None)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            torch.nn.init.uniform_(m.weight, 0.5, 1.5)
            torch.nn.init.uniform_(m.bias, -0.2, 0.2)
    model.eval()
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, x, os.path.join(out, name + ".onnx"), opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    x.numpy().astype("<f4").tofile(os.path.join(out, name + ".input.bin"))
    y.numpy().astype("<f4").tofile(os.path.join(out, name + ".output.bin"))

"""Fixtures for the PyTorch name mapping tests (store.NameMap).

Builds a small torch model, Net below, wrapped as DataParallel would be (its
state-dict keys start with "module."), and writes

  torch_names.safetensors  the wrapped model's state_dict, by hand in the
                           safetensors format (Debian has no `safetensors`
                           package): 8-byte little-endian header length, a
                           JSON header, the raw little-endian tensor bytes;
  torch_names.json         an input batch and the model's output on it, in
                           evaluation mode (fixtures.py's format).

Net holds a Sequential of Conv2d, BatchNorm2d (with non-trivial running
statistics), ReLU and Conv2d, a Linear classifier and a GPT-2-style Conv1D
whose weight is stored [in, out], the transpose of a Linear's. The Go test
loads the file into the equivalent Kiln model with renamed fields and a
transpose, and compares its output with the recorded one.

With --check WEIGHTS INPUT the script instead loads WEIGHTS (a safetensors
file Kiln wrote) into the same wrapped module with
load_state_dict(strict=True), runs it on the tensor "x" of INPUT (a
safetensors file) and prints {"shape": [...], "data": [...]} as JSON: the
reverse test, run only where torch is installed.

Run with Debian's interpreter: /usr/bin/python3 gen_torch_names.py
"""
import json
import os
import struct
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tensor", "testdata"))
from fixtures import t2j  # noqa: E402

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
TORCH_DTYPES = {v: k for k, v in DTYPES.items()}


class Conv1D(nn.Module):
    """GPT-2's Conv1D: a linear layer whose weight is [in, out]."""

    def __init__(self, nin, nout):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nin, nout) * 0.3)
        self.bias = nn.Parameter(torch.randn(nout) * 0.1)

    def forward(self, x):
        return x @ self.weight + self.bias


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.Conv2d(4, 3, 3, stride=2),
        )
        self.classifier = nn.Linear(3 * 2 * 2, 5)
        self.proj = Conv1D(5, 2)

    def forward(self, x):
        h = self.features(x).flatten(1)
        return self.proj(torch.tanh(self.classifier(h)))


class Wrapped(nn.Module):
    """Names parameters as nn.DataParallel does ("module." prefix)."""

    def __init__(self):
        super().__init__()
        self.module = Net()

    def forward(self, x):
        return self.module(x)


def write_safetensors(path, tensors, metadata=None):
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    at = 0
    blobs = []
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        raw = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8 : 8 + n])
    header.pop("__metadata__", None)
    data = buf[8 + n :]
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        dt = TORCH_DTYPES[e["dtype"]]
        if end == b:
            out[name] = torch.zeros(e["shape"], dtype=dt)
        else:
            out[name] = torch.frombuffer(bytearray(data[b:end]), dtype=dt).reshape(e["shape"]).clone()
    return out


def generate():
    torch.manual_seed(11)
    model = Wrapped()
    # Give BatchNorm running statistics that matter, then evaluate.
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(6, 2, 5, 5) * 2 + 0.5)
    model.eval()
    x = torch.randn(2, 2, 5, 5)
    with torch.no_grad():
        y = model(x)
    write_safetensors(os.path.join(HERE, "torch_names.safetensors"), model.state_dict(), {"format": "pt"})
    with open(os.path.join(HERE, "torch_names.json"), "w") as f:
        json.dump({"forward": {"x": t2j(x), "y": t2j(y)}}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("keys:", ", ".join(model.state_dict()))


def check(weights, inputs):
    model = Wrapped()
    model.load_state_dict(read_safetensors(weights), strict=True)
    model.eval()
    x = read_safetensors(inputs)["x"]
    with torch.no_grad():
        y = model(x).double()
    json.dump({"shape": list(y.shape), "data": y.reshape(-1).tolist()}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3])
    else:
        generate()

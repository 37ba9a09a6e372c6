"""Writes fixture.safetensors and fixture.json for the store tests.

Debian has no `safetensors` Python package, so the file is built by hand
from the format's specification, the way the reference writer lays it out:
8-byte little-endian header length, a compact JSON header with
"__metadata__" first and tensors ordered by dtype alignment (largest first)
then name, the header padded with spaces to a multiple of 8, then each
tensor's raw little-endian bytes taken from torch. fixture.json holds the
values torch sees, which the Go test compares exactly.

Run with Debian's interpreter: /usr/bin/python3 gen_safetensors.py
"""
import json
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    torch.float32: "F32",
    torch.float64: "F64",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}


def tensors():
    g = torch.Generator().manual_seed(7)
    r = torch.randn(3, 4, generator=g, dtype=torch.float64)
    return {
        "f32.weight": r.to(torch.float32),
        "f64.matrix": r.t().contiguous(),  # torch's own transposed copy
        "f16.vec": torch.tensor([0.5, -2.0, 65504.0, 6.1e-5, 1e-7, float("inf")], dtype=torch.float16),
        "bf16.vec": torch.tensor([1.0, -3.140625, 1e30, -1e-30, 0.0], dtype=torch.bfloat16),
        "i64.ids": torch.tensor([[0, -1, 2**40], [-(2**50), 7, 123456789]], dtype=torch.int64),
        "i32.idx": torch.tensor([-(2**31), 2**31 - 1, 0, 5], dtype=torch.int32),
        "u8.pixels": torch.arange(0, 256, 37, dtype=torch.uint8).reshape(1, 7),
        "bool.mask": torch.tensor([[True, False, True], [False, False, True]]),
        "scalar": torch.tensor(2.5, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
    }


def to_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        raw = t.view(torch.int16).numpy().tobytes()
    else:
        raw = t.numpy().tobytes()
    return raw


def values(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.to(torch.float64)
    v = t.reshape(-1).tolist()
    out = []
    for x in v:
        if isinstance(x, bool):
            out.append(1 if x else 0)
        elif isinstance(x, float) and x != x:
            out.append("nan")
        elif isinstance(x, float) and x in (float("inf"), float("-inf")):
            out.append("inf" if x > 0 else "-inf")
        else:
            out.append(x)
    return out


def main():
    ts = tensors()
    order = sorted(ts, key=lambda n: (-ts[n].element_size(), n))
    header = {"__metadata__": {"format": "pt", "source": "gen_safetensors.py"}}
    data = b""
    for n in order:
        raw = to_bytes(ts[n])
        header[n] = {
            "dtype": DTYPES[ts[n].dtype],
            "shape": list(ts[n].shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(os.path.join(HERE, "fixture.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + data)
    expect = {
        n: {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data": values(t)}
        for n, t in ts.items()
    }
    with open(os.path.join(HERE, "fixture.json"), "w") as f:
        json.dump({"metadata": header["__metadata__"], "tensors": expect}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()

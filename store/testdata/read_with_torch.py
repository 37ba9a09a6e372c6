"""Reads a safetensors file with torch alone and prints its content as JSON.

Used by the store tests (TestSafetensorsReadByTorch) to check that files
Kiln writes parse with an independent reader: the header is parsed with
json, the tensor bytes are turned into tensors with torch.frombuffer.
Prints {"metadata": {...}, "header_len": n, "misaligned": [names of tensors
whose file offset is not a multiple of their element size], "tensors":
{name: {"dtype", "shape", "data"}}}; float values are printed as repr-exact JSON numbers,
non-finite ones as the strings "nan", "inf", "-inf".

Usage: /usr/bin/python3 read_with_torch.py FILE
"""
import json
import struct
import sys

import torch

DTYPES = {
    "F32": torch.float32,
    "F64": torch.float64,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def values(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.to(torch.float64)
    out = []
    for x in t.reshape(-1).tolist():
        if isinstance(x, bool):
            out.append(1 if x else 0)
        elif isinstance(x, float) and x != x:
            out.append("nan")
        elif isinstance(x, float) and x in (float("inf"), float("-inf")):
            out.append("inf" if x > 0 else "-inf")
        else:
            out.append(x)
    return out


def main(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8 : 8 + n].decode("utf-8"))
    data = buf[8 + n :]
    out = {"metadata": header.pop("__metadata__", {}), "header_len": n, "misaligned": [], "tensors": {}}
    for name, e in header.items():
        b, end = e["data_offsets"]
        dt = DTYPES[e["dtype"]]
        shape = e["shape"]
        if end == b:
            t = torch.zeros(shape, dtype=dt)
        else:
            t = torch.frombuffer(bytearray(data[b:end]), dtype=dt).reshape(shape)
        if (8 + n + b) % t.element_size() != 0:
            out["misaligned"].append(name)
        out["tensors"][name] = {"dtype": e["dtype"], "shape": list(t.shape), "data": values(t)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])

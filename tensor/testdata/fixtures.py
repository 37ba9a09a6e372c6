"""Shared helpers for the scripts that write Kiln's tensor test fixtures.

Each gen_*.py script builds cases with PyTorch (or NumPy from the defining
equations where PyTorch 1.13 lacks an op) and writes testdata/<name>.json:
{"case": {"tensor name": {"shape": [...], "dtype": "float32", "data": [...]}}}.
Run with Debian's interpreter: /usr/bin/python3 testdata/gen_NAME.py
"""
import json
import math
import os

import numpy as np


def t2j(x):
    """Converts a torch tensor or numpy array to the fixture JSON form."""
    try:
        import torch
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu()
            dtype = str(x.dtype).replace("torch.", "")
            x = x.double().numpy() if x.dtype.is_floating_point else x.numpy()
        else:
            x = np.asarray(x)
            dtype = str(x.dtype)
    except ImportError:
        x = np.asarray(x)
        dtype = str(x.dtype)
    if dtype == "bool":
        data = [1 if v else 0 for v in x.reshape(-1).tolist()]
    else:
        data = []
        for v in x.reshape(-1).tolist():
            if isinstance(v, float) and math.isnan(v):
                data.append("nan")
            elif isinstance(v, float) and math.isinf(v):
                data.append("inf" if v > 0 else "-inf")
            else:
                data.append(v)
    return {"shape": list(x.shape), "dtype": dtype, "data": data}


def dump(name, cases):
    """Writes cases ({case: {tensor name: tensor}}) to testdata/name.json."""
    out = {c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(out), "cases")

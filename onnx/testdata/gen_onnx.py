"""Writes the ONNX fixtures for package onnx's tests.

Run with Debian's interpreter (PyTorch 1.13, python3-onnx 1.12, NumPy):

    /usr/bin/python3 onnx/testdata/gen_onnx.py

It writes:
  models/<case>.onnx   real models exported by torch.onnx.export (an MLP, the
                       MNIST CNN, a ResNet block with batch norm, a 2-layer
                       transformer encoder, LSTM and GRU) and small single-
                       family models, exported at several opsets;
  ops/<case>.onnx      single-operator graphs built with onnx.helper for the
                       operators and opset forms PyTorch does not emit, with
                       NumPy references computed from the operators' definitions;
  onnx.json            for every case, its inputs ("in:NAME") and expected
                       outputs ("out:NAME") in tensor/testdata/fixtures.py's form.

A case named "<model>@<tag>" runs the model file <model>.onnx on other inputs
(another batch size). Every exported model passes onnx.checker.check_model;
models of opsets ONNX 1.12 does not know (18+) skip the checker.
"""
import io
import json
import math
import os
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tensor", "testdata"))
from fixtures import t2j  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)
rng = np.random.default_rng(0)
CASES = {}
SKIPPED = []


def np32(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def write(sub, name, data):
    d = os.path.join(HERE, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".onnx"), "wb") as f:
        f.write(data)


def record(case, inputs, outputs):
    c = {}
    for k, v in inputs.items():
        c["in:" + k] = v
    for k, v in outputs.items():
        c["out:" + k] = v
    CASES[case] = c


def export(name, module, args, opset, in_names, out_names, dynamic=None,
           training=torch.onnx.TrainingMode.EVAL, folding=True, extra=()):
    """Exports module at opset to models/name.onnx and records its outputs
    on args (and on each extra (tag, args) pair, for dynamic shapes)."""
    f = io.BytesIO()
    try:
        torch.onnx.export(module, args, f, opset_version=opset, input_names=in_names,
                          output_names=out_names, dynamic_axes=dynamic, training=training,
                          do_constant_folding=folding)
    except Exception as e:  # an op the exporter cannot write at this opset
        SKIPPED.append("%s: %s" % (name, str(e).splitlines()[0][:100]))
        return
    mp = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(mp)
    write("models", name, f.getvalue())
    for tag, a in [("", args)] + list(extra):
        with torch.no_grad():
            outs = module(*a)
        if not isinstance(outs, (tuple, list)):
            outs = (outs,)
        flat = []
        for o in outs:
            if isinstance(o, (tuple, list)):
                flat.extend(o)
            else:
                flat.append(o)
        record(name + ("@" + tag if tag else ""), dict(zip(in_names, a)), dict(zip(out_names, flat)))


# ---------------------------------------------------------------- real models

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class MNISTCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc2(torch.relu(self.fc1(x))), dim=1)


class ResBlock(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.head = nn.Linear(c, 3)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        y = torch.relu(y + x)
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


def batch(name):
    return {name: {0: "batch"}}


mlp = MLP().eval()
x = torch.randn(2, 8)
for v in [7, 9, 11, 13, 17]:
    export("mlp_op%d" % v, mlp, (x,), v, ["x"], ["y"], dynamic={**batch("x"), **batch("y")},
           extra=[("b1", (torch.randn(1, 8),)), ("b3", (torch.randn(3, 8),))])

cnn = MNISTCNN().eval()
for v in [9, 13, 17]:
    export("mnist_cnn_op%d" % v, cnn, (torch.rand(1, 1, 28, 28),), v, ["x"], ["y"],
           dynamic={**batch("x"), **batch("y")}, extra=[("b3", (torch.rand(3, 1, 28, 28),))])

res = ResBlock()
for bn in (res.bn1, res.bn2):
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.5, 0.5)
res.eval()
xr = torch.randn(2, 4, 6, 6)
export("resnet_block_op13", res, (xr,), 13, ["x"], ["y"], dynamic={**batch("x"), **batch("y")},
       training=torch.onnx.TrainingMode.PRESERVE, folding=False, extra=[("b3", (torch.randn(3, 4, 6, 6),))])
export("resnet_block_fused_op11", res, (xr,), 11, ["x"], ["y"])

layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
enc = nn.TransformerEncoder(layer, num_layers=2).eval()
xt = torch.randn(2, 5, 16)
for v in [13, 17]:
    export("transformer_op%d" % v, enc, (xt,), v, ["x"], ["y"],
           dynamic={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
           extra=[("b1", (torch.randn(1, 5, 16),)), ("b3s7", (torch.randn(3, 7, 16),))])

lstm = nn.LSTM(4, 8, num_layers=2, batch_first=True).eval()
xl = torch.randn(2, 5, 4)
for v in [9, 14]:
    export("lstm_op%d" % v, lstm, (xl,), v, ["x"], ["y", "h", "c"],
           dynamic={"x": {0: "batch"}, "y": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"}},
           extra=[("b3", (torch.randn(3, 5, 4),))])

gru = nn.GRU(4, 6, bidirectional=True).eval()
xg = torch.randn(5, 2, 4)
for v in [11, 13]:
    export("gru_op%d" % v, gru, (xg,), v, ["x"], ["y", "h"],
           dynamic={"x": {1: "batch"}, "y": {1: "batch"}, "h": {1: "batch"}},
           extra=[("b3", (torch.randn(5, 3, 4),))])

# ------------------------------------------------ operator families via torch


class Elementwise(nn.Module):
    def forward(self, x, y):
        return (x + y, x - y, x * y, x / (y.abs() + 1), torch.pow(x, 2), torch.pow(x.abs() + 0.5, y),
                -x, torch.abs(x), torch.sqrt(x.abs()), torch.exp(x), torch.log(x.abs() + 1),
                torch.erf(x), torch.tanh(x), torch.sigmoid(x), torch.relu(x),
                torch.maximum(x, y), torch.minimum(x, y))


class Activations(nn.Module):
    def forward(self, x):
        return (F.leaky_relu(x, 0.1), F.elu(x, 0.5), F.selu(x), F.gelu(x), F.hardsigmoid(x),
                F.hardswish(x), F.softplus(x), torch.clamp(x, -0.5, 0.5), torch.clamp(x, min=0.2),
                F.relu6(x * 4), F.softsign(x), F.silu(x))


class Products(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.w = nn.Parameter(torch.randn(4, 5))

    def forward(self, x, m):
        return self.lin(m), torch.matmul(x, self.w), self.lin(x)


class Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2)
        self.c2 = nn.Conv2d(4, 2, 3, padding=2, dilation=2)
        self.c3 = nn.Conv1d(4, 3, 3, stride=1, padding=1)
        self.t1 = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.t2 = nn.ConvTranspose1d(4, 2, 4, stride=2, padding=1)

    def forward(self, x):
        s = x.flatten(2)[:, :, :10]
        return (self.c1(x), self.c2(x), self.c3(s), self.t1(x), self.t2(s),
                F.max_pool2d(x, 3, stride=2, padding=1), F.max_pool2d(x, 2, ceil_mode=True),
                F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
                F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=True),
                F.adaptive_avg_pool2d(x, 1), F.adaptive_max_pool2d(x, 1), F.max_pool1d(s, 2))


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(4)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 2)
        self.bn.weight.data.uniform_(0.5, 1.5)
        self.ln = nn.LayerNorm(5)
        self.ln.weight.data.uniform_(0.5, 1.5)
        self.ln.bias.data.uniform_(-0.5, 0.5)
        self.gn = nn.GroupNorm(2, 4)
        self.gn.weight.data.uniform_(0.5, 1.5)
        self.gn.bias.data.uniform_(-0.5, 0.5)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.inorm.weight.data.uniform_(0.5, 1.5)
        self.inorm.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.bn(x), self.ln(x), self.gn(x), self.inorm(x)


class Shapes(nn.Module):
    def forward(self, x, idx):
        n = x.shape[0]
        a, b = torch.chunk(x, 2, dim=1)
        return (torch.flatten(x, 1), x.reshape(n, -1, 2), x.permute(0, 2, 1), x.unsqueeze(1).squeeze(1),
                x[:, 1:3, ::2], x[..., -2:], torch.cat([x[:, :2], x[:, 1:] * 2], dim=2), a.sum(1, keepdim=True) - b,
                x.index_select(1, idx), x[:, idx], x[:, 0], x.narrow(2, 1, 2),
                x[:, :1].expand(n, 3, 4), x.repeat(1, 2, 1), F.pad(x, (1, 2), value=0.5),
                F.pad(x, (1, 1, 1, 0), mode="reflect"), F.pad(x, (2, 0), mode="replicate"),
                torch.where(x > 0, x, x * 0.1), (x > 0.2) & (x < 0.8), ~(x > 0), (x == x) | (x < 0),
                x.int().float(), torch.zeros_like(x) + 1, torch.arange(x.shape[1]).float() * 2,
                x.sum(dim=-1).to(torch.int64), torch.split(x, [1, 2], dim=1)[1])


class Reductions(nn.Module):
    def forward(self, x):
        v, i = torch.topk(x, 2, dim=-1)
        return (x.sum(dim=1), x.mean(dim=(1, 2), keepdim=True), torch.amax(x, dim=2), torch.amin(x, dim=0),
                x.prod(dim=2), torch.norm(x, p=2, dim=1), x.argmax(dim=2), x.argmin(dim=1, keepdim=True),
                v, i, torch.softmax(x, dim=1), torch.log_softmax(x, dim=-1),
                torch.softmax(x, dim=-1), x.sum())


class Indexing(nn.Module):
    def forward(self, x, idx):
        return (torch.gather(x, 2, idx), torch.scatter(x, 2, idx, x[:, :, :2] * 10), torch.cumsum(x, dim=1))


class Einsums(nn.Module):
    def forward(self, x):
        return (torch.einsum("bij,bjk->bik", x, x.transpose(1, 2)), torch.einsum("bij->bji", x),
                torch.einsum("bij,bkj->bik", x, x), torch.einsum("ij,j->i", x[0], x[0, 0]))


class Nearest(nn.Module):
    # size=(5, 7) is left out: at opsets 9 and 10 PyTorch writes the scale
    # 5/3 as a float32, and ONNX's floor(3 · 1.6666666) is 4, not 5.
    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, scale_factor=(1, 3), mode="nearest"))


class Resizes(nn.Module):
    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(5, 7), mode="nearest"),
                F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                F.interpolate(x, size=(5, 3), mode="bilinear", align_corners=True))


def names(prefix, n):
    return ["%s%d" % (prefix, i) for i in range(n)]


ex = torch.randn(2, 3, 4)
ey = torch.randn(3, 4)
for v in [7, 9, 11, 13, 17]:
    export("elementwise_op%d" % v, Elementwise(), (ex, ey), v, ["x", "y"], names("y", 17))
    export("activations_op%d" % v, Activations(), (ex,), v, ["x"], names("y", 12))
    export("products_op%d" % v, Products().eval(), (ex, torch.randn(2, 4)), v, ["x", "m"], names("y", 3))
    export("convs_op%d" % v, Convs().eval(), (torch.randn(2, 4, 5, 5),), v, ["x"], names("y", 13))
    export("norms_op%d" % v, Norms().eval(), (torch.randn(2, 4, 3, 5),), v, ["x"], names("y", 4),
           training=torch.onnx.TrainingMode.PRESERVE, folding=False)
    export("shapes_op%d" % v, Shapes(), (torch.rand(2, 3, 4), torch.tensor([2, 0, 2])), v, ["x", "idx"],
           names("y", 26), dynamic={"x": {0: "batch"}}, extra=[("b3", (torch.rand(3, 3, 4), torch.tensor([1, 1, 0])))])
    export("reductions_op%d" % v, Reductions(), (torch.randn(2, 3, 4),), v, ["x"], names("y", 14))
    if v >= 11:
        export("indexing_op%d" % v, Indexing(), (torch.randn(2, 3, 4), torch.tensor([[[3, 0], [1, 1], [2, 3]]] * 2)),
               v, ["x", "idx"], names("y", 3))
        export("resizes_op%d" % v, Resizes(), (torch.randn(1, 2, 3, 4),), v, ["x"], names("y", 4))
    else:
        export("nearest_op%d" % v, Nearest(), (torch.randn(1, 2, 3, 4),), v, ["x"], names("y", 2))
    if v >= 12:
        export("einsum_op%d" % v, Einsums(), (torch.randn(2, 3, 4),), v, ["x"], names("y", 4))

# ------------------------------------------- single operators via onnx.helper


def single(name, opset, op, inputs, outputs, attrs=None, inits=None, in_types=None, check=True, nout=None):
    """Builds a one-node graph: inputs maps name → array fed at run time,
    inits maps name → array stored as an initializer (given in the node's
    input order through the names list in `order`), outputs maps name → the
    NumPy reference."""
    inits = inits or {}
    order = [k for k in list(inputs) + list(inits)]
    node_inputs = attrs.pop("_inputs", order) if attrs else order
    node = helper.make_node(op, node_inputs, list(outputs), **(attrs or {}))

    def vi(n, a):
        return helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype")
                                             else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape))
    g = helper.make_graph([node], name, [vi(k, v) for k, v in inputs.items()],
                          [vi(k, np.asarray(v)) for k, v in outputs.items()],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="kiln-gen")
    m.ir_version = 8 if opset <= 17 else 8
    if check and opset <= 17:
        onnx.checker.check_model(m)
    write("ops", name, m.SerializeToString())
    record(name, inputs, {k: np.asarray(v) for k, v in outputs.items()})


a = np32(2, 3, 4)
b = np32(2, 3, 4)
c3 = np32(3, 4)
single("sum_op13", 13, "Sum", {"a": a, "b": b, "c": c3}, {"y": a + b + c3})
single("sum_op7", 7, "Sum", {"a": a, "b": b}, {"y": a + b})
single("mean_op8", 8, "Mean", {"a": a, "b": c3}, {"y": (a + c3) / 2})
gp = np32(2, 3, 4, 5)
single("globalmaxpool_op7", 7, "GlobalMaxPool", {"x": gp}, {"y": gp.max(axis=(2, 3), keepdims=True)})
single("globalmaxpool_op13_1d", 13, "GlobalMaxPool", {"x": a}, {"y": a.max(axis=2, keepdims=True)})
single("globalaveragepool_op13_1d", 13, "GlobalAveragePool", {"x": a}, {"y": a.mean(axis=2, keepdims=True)})
single("mean_op13", 13, "Mean", {"a": a, "b": b, "c": c3}, {"y": (a + b + c3) / 3})
single("max3_op13", 13, "Max", {"a": a, "b": b, "c": c3}, {"y": np.maximum(np.maximum(a, b), c3)})
single("min3_op8", 8, "Min", {"a": a, "b": b, "c": c3}, {"y": np.minimum(np.minimum(a, b), c3)})
single("dropout_op7", 7, "Dropout", {"x": a}, {"y": a}, attrs={"ratio": 0.3})
single("dropout_op13", 13, "Dropout", {"x": a}, {"y": a})
single("identity_op13", 13, "Identity", {"x": a}, {"y": a})
single("clip_op7", 7, "Clip", {"x": a}, {"y": np.clip(a, -0.3, 0.4)}, attrs={"min": -0.3, "max": 0.4})
single("clip_op11", 11, "Clip", {"x": a}, {"y": np.clip(a, -0.3, 0.4)},
       inits={"lo": np.array(-0.3, np.float32), "hi": np.array(0.4, np.float32)})
single("clip_max_op13", 13, "Clip", {"x": a}, {"y": np.minimum(a, 0.1)},
       attrs={"_inputs": ["x", "", "hi"]}, inits={"hi": np.array(0.1, np.float32)})
s1 = np32(2, 1, 4, 1)
single("squeeze_op7", 7, "Squeeze", {"x": s1}, {"y": s1.reshape(2, 4, 1)}, attrs={"axes": [1]})
single("squeeze_op13", 13, "Squeeze", {"x": s1}, {"y": s1.reshape(2, 4)}, inits={"axes": np.array([1, -1])})
single("squeeze_all_op13", 13, "Squeeze", {"x": s1}, {"y": s1.reshape(2, 4)})
single("unsqueeze_op7", 7, "Unsqueeze", {"x": c3}, {"y": c3.reshape(1, 3, 1, 4)}, attrs={"axes": [0, 2]})
single("unsqueeze_op13", 13, "Unsqueeze", {"x": c3}, {"y": c3.reshape(3, 4, 1, 1)}, inits={"axes": np.array([-1, 2])})
sp = np32(2, 6)
single("split_op7", 7, "Split", {"x": sp}, {"y0": sp[:, :2], "y1": sp[:, 2:]}, attrs={"axis": 1, "split": [2, 4]})
single("split_op11_equal", 11, "Split", {"x": sp}, {"y0": sp[:, :2], "y1": sp[:, 2:4], "y2": sp[:, 4:]}, attrs={"axis": 1})
single("split_op13", 13, "Split", {"x": sp}, {"y0": sp[:, :1], "y1": sp[:, 1:]}, attrs={"axis": -1},
       inits={"split": np.array([1, 5])})
single("reducesum_op11", 11, "ReduceSum", {"x": a}, {"y": a.sum(axis=(0, 2))}, attrs={"axes": [0, 2], "keepdims": 0})
single("reducesum_op13", 13, "ReduceSum", {"x": a}, {"y": a.sum(axis=1, keepdims=True)}, inits={"axes": np.array([1])})
single("reducesum_noop_op13", 13, "ReduceSum", {"x": a}, {"y": a}, attrs={"noop_with_empty_axes": 1})
single("reducemean_op18", 18, "ReduceMean", {"x": a}, {"y": a.mean(axis=-1)}, attrs={"keepdims": 0},
       inits={"axes": np.array([-1])}, check=False)
single("reducel2_op13", 13, "ReduceL2", {"x": a}, {"y": np.sqrt((a * a).sum(axis=2, keepdims=True))}, attrs={"axes": [2]})
single("reduceprod_op13", 13, "ReduceProd", {"x": a}, {"y": a.prod(axis=1)}, attrs={"axes": [1], "keepdims": 0})
single("reducemax_op13", 13, "ReduceMax", {"x": a}, {"y": a.max(axis=(0, 1))}, attrs={"axes": [0, 1], "keepdims": 0})
single("reducemin_op13", 13, "ReduceMin", {"x": a}, {"y": a.min(keepdims=True)})
sl = np32(4, 5, 6)
single("slice_op7", 7, "Slice", {"x": sl}, {"y": sl[1:3, :, -4:-1]}, attrs={"starts": [1, -4], "ends": [3, -1], "axes": [0, 2]})
single("slice_op13_steps", 13, "Slice", {"x": sl}, {"y": sl[:, ::-2, 1:1000:3]},
       inits={"starts": np.array([-1, 1]), "ends": np.array([-1000, 1000]), "axes": np.array([1, 2]), "steps": np.array([-2, 3])})
single("pad_op7", 7, "Pad", {"x": c3}, {"y": np.pad(c3, ((1, 0), (0, 2)), constant_values=1.5)},
       attrs={"pads": [1, 0, 0, 2], "value": 1.5})
single("pad_op11_reflect", 11, "Pad", {"x": c3}, {"y": np.pad(c3, ((0, 0), (2, 1)), mode="reflect")},
       attrs={"mode": "reflect"}, inits={"pads": np.array([0, 2, 0, 1])})
single("pad_op13_edge", 13, "Pad", {"x": c3}, {"y": np.pad(c3, ((1, 1), (0, 1)), mode="edge")},
       attrs={"mode": "edge"}, inits={"pads": np.array([1, 0, 1, 1])})


def softmax_np(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


flat = a.reshape(2, 12)
single("softmax_op11_coerce", 11, "Softmax", {"x": a}, {"y": softmax_np(flat, 1).reshape(2, 3, 4)}, attrs={"axis": 1})
single("softmax_op13_axis", 13, "Softmax", {"x": a}, {"y": softmax_np(a, 1)}, attrs={"axis": 1})
single("logsoftmax_op9", 9, "LogSoftmax", {"x": a}, {"y": np.log(softmax_np(a.reshape(6, 4), 1)).reshape(2, 3, 4)}, attrs={"axis": 2})
tk = np32(3, 5)
order = np.argsort(-tk, axis=1, kind="stable")[:, :2]
single("topk_op7", 7, "TopK", {"x": tk}, {"v": np.take_along_axis(tk, order, 1), "i": order}, attrs={"k": 2, "axis": 1})
order = np.argsort(tk, axis=0, kind="stable")[:2]
single("topk_op11_smallest", 11, "TopK", {"x": tk}, {"v": np.take_along_axis(tk, order, 0), "i": order},
       attrs={"axis": 0, "largest": 0}, inits={"k": np.array([2])})
am = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], np.float32)
single("argmax_op12_last", 12, "ArgMax", {"x": am}, {"y": np.array([[2], [3]])}, attrs={"axis": 1, "select_last_index": 1})
single("argmin_op11", 11, "ArgMin", {"x": am}, {"y": np.argmin(am, axis=0)}, attrs={"axis": 0, "keepdims": 0})
cs = np32(2, 4)
single("cumsum_op11_excl_rev", 11, "CumSum", {"x": cs},
       {"y": np.flip(np.cumsum(np.flip(cs, 1), 1) - np.flip(cs, 1), 1).copy()},
       attrs={"exclusive": 1, "reverse": 1}, inits={"axis": np.array(1)})
up = np32(1, 2, 2, 3)
single("upsample_op9", 9, "Upsample", {"x": up}, {"y": up.repeat(2, axis=2).repeat(3, axis=3)},
       inits={"scales": np.array([1, 1, 2, 3], np.float32)})
single("upsample_op7", 7, "Upsample", {"x": up}, {"y": up.repeat(2, axis=2).repeat(2, axis=3)},
       attrs={"scales": [1.0, 1.0, 2.0, 2.0]})
# half_pixel + round_prefer_floor (ONNX defaults), downsampling 4 → 2: x_orig = 2j + 0.5 rounds down.
dn = np32(1, 1, 4, 4)
single("resize_op13_nearest_default", 13, "Resize", {"x": dn}, {"y": dn[:, :, ::2, ::2]},
       attrs={"_inputs": ["x", "", "scales"]}, inits={"scales": np.array([1, 1, 0.5, 0.5], np.float32)})


def linear_resize(x, out, ctm):
    """Reference separable linear resize of the last two axes."""
    def axis(n_in, n_out):
        W = np.zeros((n_out, n_in))
        for j in range(n_out):
            if ctm == "align_corners":
                s = 0 if n_out == 1 else j * (n_in - 1) / (n_out - 1)
            elif ctm == "asymmetric":
                s = j * n_in / n_out
            else:
                s = (j + 0.5) * n_in / n_out - 0.5
            s = min(max(s, 0), n_in - 1)
            lo = int(math.floor(s))
            hi = min(lo + 1, n_in - 1)
            W[j, lo] += 1 - (s - lo)
            W[j, hi] += s - lo
        return W
    Wh, Ww = axis(x.shape[2], out[0]), axis(x.shape[3], out[1])
    return np.einsum("ph,nchw,qw->ncpq", Wh, x.astype(np.float64), Ww).astype(np.float32)


single("resize_op13_linear_sizes", 13, "Resize", {"x": up}, {"y": linear_resize(up, (3, 5), "half_pixel")},
       attrs={"_inputs": ["x", "", "", "sizes"], "mode": "linear"}, inits={"sizes": np.array([1, 2, 3, 5])})
single("resize_op11_asymmetric", 11, "Resize", {"x": up}, {"y": linear_resize(up, (4, 6), "asymmetric")},
       attrs={"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
       inits={"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)})
single("resize_op10", 10, "Resize", {"x": up}, {"y": up.repeat(2, axis=2).repeat(2, axis=3)},
       inits={"scales": np.array([1, 1, 2, 2], np.float32)})
gx = np32(2, 4, 3)
gm = gx.reshape(2, 2, 6)
gnorm = ((gm - gm.mean(-1, keepdims=True)) / np.sqrt(gm.var(-1, keepdims=True) + 1e-5)).reshape(2, 4, 3)
gscale, gbias = np.array([0.5, 2.0], np.float32), np.array([0.1, -0.2], np.float32)
single("groupnorm_op18", 18, "GroupNormalization", {"x": gx},
       {"y": gnorm * np.repeat(gscale, 2)[None, :, None] + np.repeat(gbias, 2)[None, :, None]},
       attrs={"num_groups": 2}, inits={"scale": gscale, "bias": gbias}, check=False)
lx = np32(2, 3, 4)
lm = lx.reshape(2, 12)
lnorm = ((lm - lm.mean(-1, keepdims=True)) / np.sqrt(lm.var(-1, keepdims=True) + 1e-3)).reshape(2, 3, 4)
lscale = np32(4, lo=0.5, hi=1.5)
single("layernorm_op17_axis1", 17, "LayerNormalization", {"x": lx}, {"y": lnorm * lscale},
       attrs={"axis": 1, "epsilon": 1e-3}, inits={"scale": lscale})
ex1 = np32(3, 1)
single("expand_op13", 13, "Expand", {"x": ex1}, {"y": np.broadcast_to(ex1, (2, 3, 4)).copy()}, inits={"shape": np.array([2, 1, 4])})
single("tile_op13", 13, "Tile", {"x": c3}, {"y": np.tile(c3, (2, 1))}, inits={"repeats": np.array([2, 1])})
single("range_op11", 11, "Range", {}, {"y": np.arange(2.0, 7.0, 1.5).astype(np.float32)},
       inits={"start": np.array(2.0, np.float32), "limit": np.array(7.0, np.float32), "delta": np.array(1.5, np.float32)})
single("constantofshape_op9", 9, "ConstantOfShape", {}, {"y": np.full((2, 3), 7, np.int64)},
       attrs={"value": numpy_helper.from_array(np.array([7], np.int64))}, inits={"shape": np.array([2, 3])})
single("constant_op13", 13, "Constant", {}, {"y": c3}, attrs={"value": numpy_helper.from_array(c3)})
single("constant_op13_ints", 13, "Constant", {}, {"y": np.array([3, 1, 4])}, attrs={"value_ints": [3, 1, 4]})
cond = np.array([[True, False, True, False]] * 3)
wb = np32(4)
single("where_op9", 9, "Where", {"c": cond, "a": c3, "b": wb}, {"y": np.where(cond, c3, wb)})
single("cast_op13", 13, "Cast", {"x": c3 * 3}, {"y": (c3 * 3).astype(np.int64)}, attrs={"to": TensorProto.INT64})
single("cast_op9_bool", 9, "Cast", {"x": np.array([0.0, 0.5, -2.0], np.float32)}, {"y": np.array([False, True, True])},
       attrs={"to": TensorProto.BOOL})
single("equal_op11", 11, "Equal", {"a": np.array([1, 2, 3]), "b": np.array([1, 0, 3])}, {"y": np.array([True, False, True])})
single("less_op9", 9, "Less", {"a": c3, "b": wb}, {"y": c3 < wb})
single("greater_op13", 13, "Greater", {"a": c3, "b": wb}, {"y": c3 > wb})
bx, by = np.array([True, False, True, False]), np.array([True, True, False, False])
single("not_op7", 7, "Not", {"x": bx}, {"y": ~bx})
single("and_op7", 7, "And", {"a": bx, "b": by}, {"y": bx & by})
single("or_op7", 7, "Or", {"a": bx, "b": by}, {"y": bx | by})
single("hardsigmoid_op7", 7, "HardSigmoid", {"x": a * 4}, {"y": np.clip(a * 4 * 0.2 + 0.5, 0, 1)})
single("hardswish_op14", 14, "HardSwish", {"x": a * 4}, {"y": a * 4 * np.clip(a * 4 / 6 + 0.5, 0, 1)})
single("leakyrelu_op7", 7, "LeakyRelu", {"x": a}, {"y": np.where(a > 0, a, 0.01 * a)})
single("elu_op7", 7, "Elu", {"x": a}, {"y": np.where(a > 0, a, 0.7 * (np.exp(a) - 1))}, attrs={"alpha": 0.7})
single("selu_op7_custom", 7, "Selu", {"x": a}, {"y": 1.5 * np.where(a > 0, a, 2.0 * (np.exp(a) - 1))},
       attrs={"alpha": 2.0, "gamma": 1.5})
single("softplus_op7", 7, "Softplus", {"x": a * 3}, {"y": np.log1p(np.exp(a * 3))})
erf = np.vectorize(math.erf)
single("gelu_op20", 20, "Gelu", {"x": a}, {"y": (0.5 * a * (1 + erf(a / math.sqrt(2)))).astype(np.float32)}, check=False)
ga, gb, gc = np32(3, 2), np32(4, 3), np32(1, 4)
single("gemm_op13_trans", 13, "Gemm", {"a": ga, "b": gb}, {"y": 0.5 * ga.T @ gb.T + 2 * gc},
       attrs={"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, inits={"c": gc})
single("gemm_op7", 7, "Gemm", {"a": gb, "b": ga}, {"y": gb @ ga + 1}, inits={"c": np.array(1.0, np.float32)})
ee, ef = np32(2, 3, 4), np32(2, 4, 5)
single("einsum_op12_batch", 12, "Einsum", {"a": ee, "b": ef}, {"y": np.einsum("bij,bjk->bik", ee, ef)},
       attrs={"equation": "bij,bjk->bik"})
single("einsum_op12_implicit", 12, "Einsum", {"a": ee}, {"y": np.einsum("...ij", ee)}, attrs={"equation": "...ij"})
single("einsum_op12_outer_sum", 12, "Einsum", {"a": ee, "b": ef}, {"y": np.einsum("bij,bkl->ik", ee, ef)},
       attrs={"equation": "bij, bkl -> ik"})
gi = np.array([[0, 2], [1, 0]])
single("gather_op13_neg", 13, "Gather", {"x": c3}, {"y": c3[:, [-1, 0]]}, attrs={"axis": 1},
       inits={"i": np.array([-1, 0])})
single("gatherelements_op11", 11, "GatherElements", {"x": c3[:2, :3], "i": gi}, {"y": np.take_along_axis(c3[:2, :3], gi, 1)},
       attrs={"axis": 1})
upd = np32(2, 2)
se = c3[:2, :3].copy()
for r in range(2):
    for k in range(2):
        se[r, gi[r, k]] = upd[r, k]
single("scatterelements_op11", 11, "ScatterElements", {"x": c3[:2, :3], "i": gi, "u": upd}, {"y": se}, attrs={"axis": 1})
sa = c3[:2, :3].copy()
gi2 = np.array([[0, 0], [1, 1]])
for r in range(2):
    for k in range(2):
        sa[r, gi2[r, k]] += upd[r, k]
single("scatterelements_op16_add", 16, "ScatterElements", {"x": c3[:2, :3], "i": gi2, "u": upd}, {"y": sa},
       attrs={"axis": 1, "reduction": "add"})
single("shape_op15_slice", 15, "Shape", {"x": a}, {"y": np.array([3, 4])}, attrs={"start": 1})
single("size_op13", 13, "Size", {"x": a}, {"y": np.array(24)})
single("flatten_op13_axis0", 13, "Flatten", {"x": a}, {"y": a.reshape(1, 24)}, attrs={"axis": 0})
single("transpose_op13_default", 13, "Transpose", {"x": a}, {"y": a.transpose(2, 1, 0)})
single("reshape_op13_zero", 13, "Reshape", {"x": a}, {"y": a.reshape(2, 12)}, inits={"shape": np.array([0, -1])})
cb = np32(1, 4)
single("concat_op11", 11, "Concat", {"a": c3, "b": cb}, {"y": np.concatenate([c3, cb], 0)}, attrs={"axis": -2})
single("pow_op13", 13, "Pow", {"x": np.abs(c3) + 0.1, "e": wb}, {"y": (np.abs(c3) + 0.1) ** wb})
single("div_op13_int", 13, "Div", {"a": np.array([7, -7, 6]), "b": np.array([2, 2, -4])}, {"y": np.array([3, -3, -1])})
ix = np32(2, 3, 4)
iscale, ibias = np32(3, lo=0.5, hi=1.5), np32(3)
inorm = (ix - ix.mean(-1, keepdims=True)) / np.sqrt(ix.var(-1, keepdims=True) + 1e-5) * iscale[:, None] + ibias[:, None]
single("instancenorm_op7_1d", 7, "InstanceNormalization", {"x": ix}, {"y": inorm}, inits={"s": iscale, "b": ibias})

# external data: the MLP with its weights in a side file.
ext = onnx.load(os.path.join(HERE, "models", "mlp_op13.onnx"))
onnx.external_data_helper.convert_model_to_external_data(ext, all_tensors_to_one_file=True,
                                                         location="mlp_external.weights", size_threshold=0)
os.makedirs(os.path.join(HERE, "external"), exist_ok=True)
onnx.save(ext, os.path.join(HERE, "external", "mlp_external.onnx"))
CASES["mlp_external"] = {k: v for k, v in CASES["mlp_op13"].items()}

out = {c: {k: t2j(v) for k, v in ts.items()} for c, ts in CASES.items()}
with open(os.path.join(HERE, "onnx.json"), "w") as f:
    json.dump(out, f, separators=(",", ":"), sort_keys=True)
    f.write("\n")
print("wrote onnx.json,", len(out), "cases")
print("skipped exports:", *SKIPPED, sep="\n  ")

"""Writes the fixtures of nn's sequence layers (rnn.go, attention.go,
transformer.go, positional.go, swiglu.go).

Run from nn/testdata with Debian's interpreter:

    /usr/bin/python3 gen_seq.py

PyTorch 1.13 modules (LSTM, GRU, MultiheadAttention, Transformer*) give the
outputs and the parameter gradients of loss = Σ_k Σ output_k · w_k, with
fixed random weights w_k stored as "w.<output>". Each case stores the
module's state dict as "param.<name>", its inputs, its outputs and
"grad.<name>" for every parameter (and "grad.<input>" for float inputs).
Everything runs in eval mode (dropout off) with gradients enabled, so
PyTorch takes its reference paths, not its fused inference kernels.

Rotary encoding, SwiGLU and the sinusoidal positional encoding are not
PyTorch 1.13 modules: their references are computed here with NumPy in
float64 from the defining equations.
"""
import sys

import json  # noqa: E402
import os  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tensor/testdata"))
from fixtures import t2j  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402


def short(f):
    """Writes float32 values with 9 significant digits, which identify a
    float32 exactly, to keep the files small."""
    if f["dtype"] == "float32":
        f["data"] = [float("%.9g" % v) if isinstance(v, float) else v for v in f["data"]]
    return f


def dump(name, cases):
    """Writes cases ({case: {tensor name: tensor}}) to nn/testdata/name.json
    (fixtures.dump writes next to fixtures.py, in tensor/testdata)."""
    out = {c: {k: short(t2j(v)) for k, v in ts.items()} for c, ts in cases.items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("wrote", path, len(out), "cases", os.path.getsize(path), "bytes")


def record(module, inputs, run, grad_inputs=()):
    """Runs run(module, **inputs) -> {name: output}, then backpropagates
    Σ output·w with random w and returns the fixture case."""
    module.eval()
    case = {}
    for k, v in module.state_dict().items():
        case["param." + k] = v.clone()
    for k, v in inputs.items():
        if v is None:
            continue
        case[k] = v.clone()
        if k in grad_inputs:
            v.requires_grad_(True)
    outs = run(module, **inputs)
    loss = 0
    for k, o in outs.items():
        w = torch.rand(o.shape, dtype=o.dtype) * 2 - 1
        case["w." + k] = w
        case[k] = o.detach().clone()
        loss = loss + (o * w).sum()
    loss.backward()
    for k, p in module.named_parameters():
        case["grad." + k] = p.grad.clone()
    for k in grad_inputs:
        case["grad." + k] = inputs[k].grad.clone()
    return case


# ---------------------------------------------------------------- RNNs


def lstm_run(m, x, h0=None, c0=None):
    state = None if h0 is None else (h0, c0)
    out, (hn, cn) = m(x, state)
    return {"out": out, "hn": hn, "cn": cn}


def gru_run(m, x, h0=None):
    out, hn = m(x, h0)
    return {"out": out, "hn": hn}


def rnn_cases():
    cases = {}
    # name: (class, input, hidden, kwargs, input shape, with initial state)
    specs = {
        "lstm_basic": (torch.nn.LSTM, 3, 4, {}, (5, 2, 3), True),
        "lstm_bidirectional_2layer": (torch.nn.LSTM, 3, 4, {"num_layers": 2, "bidirectional": True}, (4, 2, 3), False),
        "lstm_batch_first_2layer": (torch.nn.LSTM, 3, 4, {"num_layers": 2, "batch_first": True}, (2, 5, 3), True),
        "lstm_unbatched_bidirectional": (torch.nn.LSTM, 3, 4, {"bidirectional": True}, (4, 3), True),
        "lstm_no_bias": (torch.nn.LSTM, 3, 4, {"bias": False}, (3, 2, 3), False),
        "lstm_deep_bidirectional": (torch.nn.LSTM, 2, 3,
                                    {"num_layers": 3, "bidirectional": True, "batch_first": True}, (2, 6, 2), True),
        "gru_basic": (torch.nn.GRU, 3, 4, {}, (5, 2, 3), True),
        "gru_bidirectional_2layer": (torch.nn.GRU, 3, 4, {"num_layers": 2, "bidirectional": True}, (4, 2, 3), True),
        "gru_batch_first_bidirectional": (torch.nn.GRU, 3, 4, {"batch_first": True, "bidirectional": True},
                                          (2, 4, 3), False),
        "gru_unbatched_2layer": (torch.nn.GRU, 3, 4, {"num_layers": 2}, (5, 3), True),
        "gru_no_bias": (torch.nn.GRU, 3, 4, {"bias": False}, (3, 2, 3), False),
    }
    for i, (name, (cls, inp, hid, kw, xshape, with_state)) in enumerate(specs.items()):
        torch.manual_seed(100 + i)
        m = cls(inp, hid, **kw)
        x = torch.randn(xshape)
        dirs = 2 if kw.get("bidirectional") else 1
        layers = kw.get("num_layers", 1)
        inputs = {"x": x}
        if with_state:
            sshape = (layers * dirs, hid) if len(xshape) == 2 else (layers * dirs, xshape[0 if kw.get("batch_first") else 1], hid)
            inputs["h0"] = torch.randn(sshape)
            if cls is torch.nn.LSTM:
                inputs["c0"] = torch.randn(sshape)
        grads = tuple(k for k in inputs)
        run = lstm_run if cls is torch.nn.LSTM else gru_run
        cases[name] = record(m, inputs, run, grads)
    return cases


# ----------------------------------------------------------- attention


def mha_run(need_weights=True, average=True, causal=False):
    def run(m, x=None, q=None, k=None, v=None, attn_mask=None, key_padding_mask=None):
        if x is not None:
            q = k = v = x
        elif v is None:
            v = k
        if causal:
            seq = 1 if m.batch_first and q.dim() == 3 else 0
            L, S = q.shape[seq], k.shape[seq]
            attn_mask = torch.ones(L, S, dtype=torch.bool).triu(1 + S - L)
        out, w = m(q, k, v, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                   need_weights=need_weights, average_attn_weights=average)
        res = {"out": out}
        if need_weights:
            res["weights"] = w
        return res
    return run


def padding(n, s, pads):
    """A [n, s] bool key padding mask with the last pads[i] keys of
    sequence i masked."""
    m = torch.zeros(n, s, dtype=torch.bool)
    for i, p in enumerate(pads):
        if p:
            m[i, s - p:] = True
    return m


def mha_cases():
    cases = {}
    E, H = 8, 2

    torch.manual_seed(200)
    m = torch.nn.MultiheadAttention(E, H)
    cases["mha_self"] = record(m, {"x": torch.randn(4, 3, E)}, mha_run(), ("x",))

    torch.manual_seed(201)
    m = torch.nn.MultiheadAttention(E, H, batch_first=True)
    cases["mha_cross_batch_first_per_head"] = record(
        m, {"q": torch.randn(2, 3, E), "k": torch.randn(2, 5, E)}, mha_run(average=False), ("q", "k"))

    torch.manual_seed(202)
    m = torch.nn.MultiheadAttention(E, H)
    L, S, N = 3, 5, 2
    am = torch.rand(L, S) < 0.3
    am[:, 0] = False  # every query keeps a key
    cases["mha_bool_masks"] = record(
        m, {"q": torch.randn(L, N, E), "k": torch.randn(S, N, E), "v": torch.randn(S, N, E),
            "attn_mask": am, "key_padding_mask": padding(N, S, [0, 2])},
        mha_run(), ("q", "k", "v"))

    torch.manual_seed(203)
    m = torch.nn.MultiheadAttention(E, 4, batch_first=True)
    L, S, N = 3, 4, 2
    cases["mha_float_mask_per_head"] = record(
        m, {"q": torch.randn(N, L, E), "k": torch.randn(N, S, E), "v": torch.randn(N, S, E),
            "attn_mask": torch.randn(N * 4, L, S)},
        mha_run(need_weights=False), ("q", "k", "v"))

    torch.manual_seed(204)
    m = torch.nn.MultiheadAttention(E, H)
    cases["mha_unbatched_padding"] = record(
        m, {"q": torch.randn(3, E), "k": torch.randn(5, E), "key_padding_mask": padding(1, 5, [2])[0]},
        mha_run(), ("q", "k"))

    torch.manual_seed(205)
    m = torch.nn.MultiheadAttention(E, H, bias=False)
    cases["mha_no_bias"] = record(m, {"x": torch.randn(4, 2, E)}, mha_run(), ("x",))

    torch.manual_seed(206)
    m = torch.nn.MultiheadAttention(E, H, batch_first=True)
    cases["mha_causal_padding"] = record(
        m, {"x": torch.randn(2, 5, E), "key_padding_mask": padding(2, 5, [1, 0])},
        mha_run(need_weights=False, causal=True), ("x",))
    return cases


# --------------------------------------------------------- transformers


def scramble(m, seed):
    """Gives every parameter its own random values, so that cloned layers
    differ and layer norms are not the identity."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.rand(p.shape, generator=g) - 0.5)


def causal(n):
    return torch.ones(n, n, dtype=torch.bool).triu(1)


def encoder_run(m, src, src_mask=None, src_key_padding_mask=None):
    if isinstance(m, torch.nn.TransformerEncoder):
        return {"out": m(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask)}
    return {"out": m(src, src_mask=src_mask, src_key_padding_mask=src_key_padding_mask)}


def decoder_run(m, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_causal=False):
    if tgt_causal:
        tgt_mask = causal(tgt.shape[1 if m_batch_first(m) and tgt.dim() == 3 else 0])
    return {"out": m(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                     tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask)}


def m_batch_first(m):
    layer = m.layers[0] if hasattr(m, "layers") else m
    return layer.self_attn.batch_first


def transformer_cases():
    cases = {}
    E, H, F = 8, 2, 12

    torch.manual_seed(300)
    m = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=F)
    scramble(m, 1)
    cases["encoder_layer_post_norm"] = record(
        m, {"src": torch.randn(5, 2, E), "src_key_padding_mask": padding(2, 5, [0, 2])}, encoder_run, ("src",))

    torch.manual_seed(301)
    m = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=F, activation="gelu", batch_first=True, norm_first=True,
                                         layer_norm_eps=1e-6)
    scramble(m, 2)
    cases["encoder_layer_pre_norm_gelu_batch_first"] = record(
        m, {"src": torch.randn(2, 4, E), "src_mask": torch.randn(4, 4)}, encoder_run, ("src",))

    torch.manual_seed(302)
    m = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=F)
    scramble(m, 3)
    cases["encoder_layer_unbatched_causal"] = record(
        m, {"src": torch.randn(4, E), "src_mask": causal(4)}, encoder_run, ("src",))

    torch.manual_seed(303)
    layer = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=F)
    m = torch.nn.TransformerEncoder(layer, 3, norm=torch.nn.LayerNorm(E))
    scramble(m, 4)
    cases["encoder_stack_norm"] = record(
        m, {"src": torch.randn(5, 2, E), "src_mask": causal(5), "src_key_padding_mask": padding(2, 5, [1, 0])},
        encoder_run, ("src",))

    torch.manual_seed(304)
    m = torch.nn.TransformerDecoderLayer(E, H, dim_feedforward=F)
    scramble(m, 5)
    cases["decoder_layer_post_norm"] = record(
        m, {"tgt": torch.randn(4, 2, E), "memory": torch.randn(5, 2, E), "tgt_mask": causal(4),
            "memory_key_padding_mask": padding(2, 5, [2, 0])}, decoder_run, ("tgt", "memory"))

    torch.manual_seed(305)
    m = torch.nn.TransformerDecoderLayer(E, H, dim_feedforward=F, activation="gelu", batch_first=True, norm_first=True)
    scramble(m, 6)
    mm = torch.rand(3, 5) < 0.3
    mm[:, 0] = False
    cases["decoder_layer_pre_norm_gelu_batch_first"] = record(
        m, {"tgt": torch.randn(2, 3, E), "memory": torch.randn(2, 5, E), "tgt_mask": torch.randn(2 * H, 3, 3),
            "memory_mask": mm, "tgt_key_padding_mask": padding(2, 3, [0, 1])}, decoder_run, ("tgt", "memory"))

    torch.manual_seed(306)
    layer = torch.nn.TransformerDecoderLayer(E, H, dim_feedforward=F, batch_first=True)
    m = torch.nn.TransformerDecoder(layer, 2, norm=torch.nn.LayerNorm(E))
    scramble(m, 7)
    cases["decoder_stack_causal_norm"] = record(
        m, {"tgt": torch.randn(2, 4, E), "memory": torch.randn(2, 3, E)},
        lambda m, **kw: decoder_run(m, tgt_causal=True, **kw), ("tgt", "memory"))
    return cases


# ------------------------------------------------- NumPy references


def rope_np(x, start, base, half_split, sign=1.0):
    """Rotary encoding from its definition: feature pairs (a, b) at
    position m rotated by m·θ_i, θ_i = base^(−2i/D); pairs (2i, 2i+1) or,
    half split, (i, i + D/2). sign=−1 rotates back (the gradient)."""
    x = x.astype(np.float64)
    T, D = x.shape[-2], x.shape[-1]
    theta = base ** (-2.0 * np.arange(D // 2) / D)
    ang = sign * np.outer(np.arange(start, start + T), theta)  # [T, D/2]
    c, s = np.cos(ang), np.sin(ang)
    if half_split:
        a, b = x[..., : D // 2], x[..., D // 2:]
    else:
        a, b = x[..., 0::2], x[..., 1::2]
    ra, rb = a * c - b * s, a * s + b * c
    out = np.empty_like(x)
    if half_split:
        out[..., : D // 2], out[..., D // 2:] = ra, rb
    else:
        out[..., 0::2], out[..., 1::2] = ra, rb
    return out


def positional_np(T, D, start):
    pe = np.zeros((T, D))
    pos = np.arange(start, start + T)[:, None]
    div = np.exp(np.arange(0, D, 2) * (-np.log(10000.0) / D))
    pe[:, 0::2] = np.sin(pos * div)
    pe[:, 1::2] = np.cos(pos * div)
    return pe


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


def swiglu_np(x, w1, w2, w3, b1=None, b2=None, b3=None, wout=None):
    """SwiGLU forward and, for loss Σ out·wout, its gradients."""
    x = x.astype(np.float64)
    w1, w2, w3 = (w.astype(np.float64) for w in (w1, w2, w3))
    a = x @ w1.T + (0 if b1 is None else b1)
    b = x @ w3.T + (0 if b3 is None else b3)
    sa = a * sigmoid(a)
    h = sa * b
    out = h @ w2.T + (0 if b2 is None else b2)
    gy = wout.astype(np.float64)
    gh = gy @ w2
    ga = gh * b * sigmoid(a) * (1 + a * (1 - sigmoid(a)))
    gb = gh * sa
    flat = lambda t: t.reshape(-1, t.shape[-1])  # noqa: E731
    grads = {
        "grad.w1.weight": flat(ga).T @ flat(x), "grad.w2.weight": flat(gy).T @ flat(h),
        "grad.w3.weight": flat(gb).T @ flat(x), "grad.x": ga @ w1 + gb @ w3,
    }
    if b1 is not None:
        grads.update({"grad.w1.bias": flat(ga).sum(0), "grad.w2.bias": flat(gy).sum(0), "grad.w3.bias": flat(gb).sum(0)})
    return out, grads


def numpy_cases():
    rng = np.random.default_rng(400)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    w = lambda *shape: (rng.random(shape) * 2 - 1).astype(np.float32)  # noqa: E731
    cases = {}
    for name, shape, start, base, half in [
        ("rope_interleaved", (2, 3, 5, 8), 0, 10000.0, False),
        ("rope_interleaved_offset_base", (4, 6), 7, 500.0, False),
        ("rope_half_split", (2, 3, 5, 8), 0, 10000.0, True),
        ("rope_half_split_offset", (1, 2, 3, 6), 11, 10000.0, True),
    ]:
        x, wo = f32(*shape), w(*shape)
        cases[name] = {"x": x, "out": rope_np(x, start, base, half), "w.out": wo,
                       "grad.x": rope_np(wo, start, base, half, sign=-1.0)}
    for name, shape, start, batch_first in [
        ("positional_seq_first", (6, 2, 8), 0, False),
        ("positional_batch_first_offset", (2, 5, 8), 4990, True),
        ("positional_unbatched", (3, 4), 2, False),
    ]:
        x, wo = f32(*shape), w(*shape)
        T = shape[1] if batch_first else shape[0]
        pe = positional_np(T, shape[-1], start)
        if len(shape) == 3 and not batch_first:
            pe = pe[:, None, :]
        cases[name] = {"x": x, "out": x.astype(np.float64) + pe, "w.out": wo, "grad.x": wo.astype(np.float64)}
    for name, bias in [("swiglu", False), ("swiglu_bias", True)]:
        dim, hid = 6, 10
        x = f32(2, 3, dim)
        p = {"w1.weight": w(hid, dim) * 0.5, "w2.weight": w(dim, hid) * 0.5, "w3.weight": w(hid, dim) * 0.5}
        if bias:
            p.update({"w1.bias": w(hid), "w2.bias": w(dim), "w3.bias": w(hid)})
        wo = w(2, 3, dim)
        out, grads = swiglu_np(x, p["w1.weight"], p["w2.weight"], p["w3.weight"], p.get("w1.bias"), p.get("w2.bias"),
                               p.get("w3.bias"), wo)
        c = {"param." + k: v for k, v in p.items()}
        c.update({"x": x, "out": out, "w.out": wo})
        c.update(grads)
        cases[name] = c
    return cases


if __name__ == "__main__":
    dump("seq_rnn", rnn_cases())
    dump("seq_attention", mha_cases())
    tc = transformer_cases()
    dump("seq_encoder", {k: v for k, v in tc.items() if k.startswith("encoder")})
    dump("seq_decoder", {k: v for k, v in tc.items() if k.startswith("decoder")})
    dump("seq_numpy", numpy_cases())

"""Writes testdata/signal.json: PyTorch 1.13 reference values for Kiln's
FFTs (tensor/fft.go), STFT and ISTFT (tensor/stft.go), GridSample and
AffineGrid (tensor/gridsample.go).

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_signal.py

Complex tensors are stored as torch.view_as_real gives them (a trailing
dimension of size 2), the layout Kiln uses. Each case holds its inputs (x,
grid, theta, window), its output "out", a weight "w" of out's shape and the
gradients grad_<input> of sum(out·w), all in float64. Every value comes from
PyTorch itself; nothing is computed with NumPy.
"""
import numpy as np
import torch
import torch.nn.functional as F

from fixtures import dump

rng = np.random.default_rng(0)
cases = {}


def rnd(*shape, lo=-1.0, hi=1.0):
    """Uniform float64 values with three decimals (short JSON)."""
    return torch.tensor(np.round(rng.uniform(lo, hi, size=shape), 3), dtype=torch.float64)


def short(x):
    """Rounds a result to 1e-9 (short JSON; tests allow 1e-6)."""
    return torch.round(x.detach() * 1e9) / 1e9


def case(name, fn, inputs, grads=True):
    """Runs fn on inputs (a dict of float64 tensors), records out, w and the
    gradients of sum(out·w) with respect to every input."""
    ins = {k: v.clone().requires_grad_(grads) for k, v in inputs.items()}
    out = fn(**ins)
    w = rnd(*out.shape)
    c = dict(inputs)
    c["out"] = short(out)
    c["w"] = w
    if grads and out.numel() > 0:
        (out * w).sum().backward()
        for k, v in ins.items():
            c["grad_" + k] = short(v.grad) if v.grad is not None else torch.zeros_like(v)
    cases[name] = c


def cplx(x):
    return torch.view_as_complex(x)


def real(z):
    return torch.view_as_real(z)


# FFT and IFFT over every length the issue names, batched, along dim -1.
for n in [1, 2, 5, 7, 12, 17, 64, 97, 100, 1000]:
    b = 3 if n <= 100 else 1
    case(f"fft n{n}", lambda x: real(torch.fft.fft(cplx(x), dim=-1)), {"x": rnd(b, n, 2)})
    case(f"ifft n{n}", lambda x: real(torch.fft.ifft(cplx(x), dim=-1)), {"x": rnd(b, n, 2)})
    case(f"rfft n{n}", lambda x: real(torch.fft.rfft(x, dim=-1)), {"x": rnd(b, n)})
    if n > 1:
        m = n // 2 + 1
        case(f"irfft n{n}", lambda x, n=n: torch.fft.irfft(cplx(x), n=n, dim=-1), {"x": rnd(b, m, 2)})

# Options: dim 0, negative dims, n (padding and truncation), norms.
case("fft dim 0", lambda x: real(torch.fft.fft(cplx(x), dim=0)), {"x": rnd(6, 3, 2)})
case("fft dim 1 of 3", lambda x: real(torch.fft.fft(cplx(x), dim=1)), {"x": rnd(2, 5, 3, 2)})
case("fft pad n", lambda x: real(torch.fft.fft(cplx(x), n=8, dim=-1)), {"x": rnd(2, 5, 2)})
case("fft truncate n", lambda x: real(torch.fft.fft(cplx(x), n=3, dim=-1)), {"x": rnd(2, 5, 2)})
case("fft norm forward", lambda x: real(torch.fft.fft(cplx(x), dim=-1, norm="forward")), {"x": rnd(2, 6, 2)})
case("fft norm ortho", lambda x: real(torch.fft.fft(cplx(x), dim=-1, norm="ortho")), {"x": rnd(2, 6, 2)})
case("ifft norm ortho", lambda x: real(torch.fft.ifft(cplx(x), dim=0, norm="ortho")), {"x": rnd(7, 2, 2)})
case("ifft norm forward pad", lambda x: real(torch.fft.ifft(cplx(x), n=9, dim=-1, norm="forward")), {"x": rnd(2, 6, 2)})
case("rfft dim 0", lambda x: real(torch.fft.rfft(x, dim=0)), {"x": rnd(9, 2)})
case("rfft pad odd n", lambda x: real(torch.fft.rfft(x, n=11, dim=-1)), {"x": rnd(2, 6)})
case("rfft truncate ortho", lambda x: real(torch.fft.rfft(x, n=4, dim=-1, norm="ortho")), {"x": rnd(2, 7)})
case("irfft default n", lambda x: torch.fft.irfft(cplx(x), dim=-1), {"x": rnd(2, 5, 2)})
case("irfft odd n", lambda x: torch.fft.irfft(cplx(x), n=9, dim=-1), {"x": rnd(2, 5, 2)})
case("irfft n beyond input", lambda x: torch.fft.irfft(cplx(x), n=12, dim=-1), {"x": rnd(2, 4, 2)})
case("irfft n below input", lambda x: torch.fft.irfft(cplx(x), n=4, dim=-1, norm="forward"), {"x": rnd(2, 6, 2)})
case("irfft dim 0 ortho", lambda x: torch.fft.irfft(cplx(x), n=6, dim=0, norm="ortho"), {"x": rnd(4, 3, 2)})
case("fft2", lambda x: real(torch.fft.fft2(cplx(x))), {"x": rnd(2, 4, 5, 2)})
case("ifft2 ortho", lambda x: real(torch.fft.ifft2(cplx(x), norm="ortho")), {"x": rnd(3, 6, 2)})
case("fftn all dims", lambda x: real(torch.fft.fftn(cplx(x))), {"x": rnd(3, 4, 2, 2)})
case("fft empty batch", lambda x: real(torch.fft.fft(cplx(x), dim=-1)), {"x": torch.zeros(0, 5, 2, dtype=torch.float64)}, grads=False)

# STFT and ISTFT.
hann16 = torch.hann_window(16, dtype=torch.float64)
hann12 = torch.hann_window(12, dtype=torch.float64)


def stft(**kw):
    def f(x, window):
        return real(torch.stft(x, window=window, return_complex=True, **kw))
    return f


case("stft center reflect", stft(n_fft=16, hop_length=4), {"x": rnd(64), "window": hann16})
case("stft batched no center", stft(n_fft=16, hop_length=5, center=False), {"x": rnd(2, 50), "window": hann16})
case("stft short window normalized", stft(n_fft=16, hop_length=3, win_length=12, normalized=True),
     {"x": rnd(2, 40), "window": hann12})
case("stft two-sided", stft(n_fft=8, hop_length=2, onesided=False), {"x": rnd(30), "window": torch.hann_window(8, dtype=torch.float64)})
case("stft constant pad", stft(n_fft=10, hop_length=4, pad_mode="constant"), {"x": rnd(33), "window": torch.hann_window(10, dtype=torch.float64)})
case("stft odd n_fft", stft(n_fft=9, hop_length=3), {"x": rnd(2, 31), "window": torch.hann_window(9, dtype=torch.float64)})


def istft(**kw):
    def f(x, window):
        return torch.istft(cplx(x), window=window, **kw)
    return f


spec = real(torch.stft(rnd(64), 16, hop_length=4, window=hann16, return_complex=True))
case("istft center", istft(n_fft=16, hop_length=4), {"x": spec, "window": hann16})
spec2 = real(torch.stft(rnd(2, 50), 16, hop_length=4, window=hann16, return_complex=True))
case("istft batched length", istft(n_fft=16, hop_length=4, length=47), {"x": spec2, "window": hann16})
case("istft length beyond", istft(n_fft=16, hop_length=4, length=70), {"x": spec, "window": hann16})
spec3 = real(torch.stft(rnd(40), 16, hop_length=3, win_length=12, window=hann12, normalized=True, return_complex=True))
case("istft short window normalized", istft(n_fft=16, hop_length=3, win_length=12, normalized=True), {"x": spec3, "window": hann12})
# Without centring a Hann window has no overlap at the ends: lift it.
lifted = hann16 + 0.1
spec4 = real(torch.stft(rnd(48), 16, hop_length=4, window=lifted, center=False, return_complex=True))
case("istft no center", istft(n_fft=16, hop_length=4, center=False), {"x": spec4, "window": lifted})

# GridSample: every mode, padding mode and alignment. Grids reach past
# [-1, 1] so that every padding rule is used.
for mode in ["bilinear", "nearest", "bicubic"]:
    for padding in ["zeros", "border", "reflection"]:
        for align in [False, True]:
            name = f"grid_sample {mode} {padding}" + (" align" if align else "")
            case(name, lambda x, grid, mode=mode, padding=padding, align=align:
                 F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align),
                 {"x": rnd(2, 3, 5, 6), "grid": rnd(2, 4, 7, 2, lo=-1.3, hi=1.3)})
case("grid_sample bilinear far outside", lambda x, grid: F.grid_sample(x, grid, padding_mode="reflection", align_corners=False),
     {"x": rnd(1, 2, 4, 3), "grid": rnd(1, 3, 5, 2, lo=-4.0, hi=4.0)})
case("grid_sample size one input", lambda x, grid: F.grid_sample(x, grid, padding_mode="border", align_corners=True),
     {"x": rnd(1, 2, 1, 4), "grid": rnd(1, 2, 3, 2, lo=-1.2, hi=1.2)})

# AffineGrid.
for align in [False, True]:
    case("affine_grid" + (" align" if align else ""),
         lambda theta, align=align: F.affine_grid(theta, [2, 3, 4, 5], align_corners=align), {"theta": rnd(2, 2, 3)})
case("affine_grid then grid_sample", lambda x, theta: F.grid_sample(x, F.affine_grid(theta, [2, 3, 6, 4], align_corners=False),
                                                                   align_corners=False),
     {"x": rnd(2, 3, 5, 5), "theta": rnd(2, 2, 3, lo=-0.8, hi=0.8)})

dump("signal", cases)

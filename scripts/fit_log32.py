#!/usr/bin/env python3
"""Fit log32P, the polynomial of Kiln's float32 log kernel (AVX2).

P(f) ~ (log(1+f) - f)/f^2 on [sqrt(1/2) - 1, sqrt(2) - 1], degree 8, fitted
by reweighted least squares to the relative error of f + f^2*P(f) against
log(1+f). The coefficients are rounded to float32 one at a time from the
lowest, the higher ones refitted after each rounding. Prints them as Go hex
literals (backends/cpu/asm/gen/transcendental_log32.go, log32P) and the
fit's maximum relative error (2^-27.8).

    /usr/bin/python3 scripts/fit_log32.py
"""
import numpy as np

DEGREE = 8
f = np.linspace(np.sqrt(0.5) - 1, np.sqrt(2) - 1, 400001)
f = f[np.abs(f) > 1e-7]
y = np.log1p(f)
target = (y - f) / f**2
weight = np.abs(f**2 / y)  # an error in P, relative to log(1+f)
V = np.vander(f, DEGREE + 1, increasing=True)


def fit(fixed):
    """Fits the coefficients after those in fixed (minimax by IRLS)."""
    rest = target - V[:, :len(fixed)] @ np.array(fixed, dtype=np.float64)
    A = V[:, len(fixed):]
    wt = np.ones_like(f)
    best = None
    for _ in range(80):
        c, *_ = np.linalg.lstsq(A * (weight * wt)[:, None], rest * weight * wt, rcond=None)
        e = np.abs((A @ c - rest) * weight)
        if best is None or e.max() < best[1]:
            best = (c, e.max())
        wt = wt * (e / e.max()) ** 0.4 + 1e-12
        wt /= wt.max()
    return list(fixed) + list(best[0])


coeffs = []
for i in range(DEGREE + 1):
    coeffs.append(float(np.float32(fit(coeffs)[i])))
err = np.max(np.abs((V @ np.array(coeffs) - target) * weight))
print("max relative error 2^%.2f" % np.log2(err))


def go_hex(c):
    """c as a Go hex float literal without trailing zeros."""
    mant, exp = float(c).hex().split("p")
    return mant.rstrip("0").rstrip(".") + "p" + exp


print(", ".join(go_hex(c) for c in coeffs))

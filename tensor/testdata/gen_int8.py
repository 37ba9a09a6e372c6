"""Writes testdata/int8.json: PyTorch 1.13 reference values for Kiln's int8
and int16 element types (casts, wrapping arithmetic, floor division and
remainder, bitwise ops and shifts, comparisons, reductions, type promotion
with other dtypes, and gathers of int8 data).

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_int8.py

Each case "<op>_<dtype>" holds its inputs (a, b, index) and the expected
output (out; values and indices for max_dim). int8_test.go maps <op> to the
Kiln call. Inputs avoid what PyTorch leaves undefined: division by zero,
MIN // -1, shift counts outside [0, bits) and float casts out of range.
"""
import torch

from fixtures import dump

cases = {}
I8, I16 = torch.int8, torch.int16


def t(v, dt):
    return torch.tensor(v, dtype=dt)


for dt in (I8, I16):
    name = str(dt).replace("torch.", "")
    lo, hi = (-128, 127) if dt == I8 else (-32768, 32767)
    # Casts: floats truncate toward zero; int64 wraps by two's complement.
    a = t([1.7, -1.7, 2.5, -2.5, 0.9, -0.9, 0.0, 100.99, -100.99, hi + 0.5, lo - 0.5], torch.float32)
    cases["cast_float_" + name] = {"a": a, "out": a.to(dt)}
    a = t([200, -200, 255, 256, 300, -129, 65535, 40000, -40000, 2**40 + 5, -(2**33) - 3], torch.int64)
    cases["cast_int64_" + name] = {"a": a, "out": a.to(dt)}
    a = t([-7, -1, 0, 3, lo, hi], dt)
    cases["cast_float32_from_" + name] = {"a": a, "out": a.to(torch.float32)}
    # Wrapping arithmetic.
    a = t([hi, lo, hi, lo, 100, -100, 7, -7, 0, hi - 1], dt)
    b = t([1, -1, hi, lo, 100, 100, -3, -3, lo, 2], dt)
    cases["add_" + name] = {"a": a, "b": b, "out": a + b}
    cases["sub_" + name] = {"a": a, "b": b, "out": a - b}
    cases["mul_" + name] = {"a": a, "b": b, "out": a * b}
    cases["neg_" + name] = {"a": a, "out": -a}
    cases["abs_" + name] = {"a": a, "out": a.abs()}
    # Floor division and remainder with negative operands.
    a = t([7, -7, 7, -7, 0, hi, lo, -1, 5, lo], dt)
    b = t([2, 2, -2, -2, 3, -1, 3, 4, -7, 2], dt)
    cases["floordiv_" + name] = {"a": a, "b": b, "out": torch.div(a, b, rounding_mode="floor")}
    cases["remainder_" + name] = {"a": a, "b": b, "out": torch.remainder(a, b)}
    # Bitwise ops and shifts.
    a = t([0, -1, 5, -6, hi, lo, 0x35, -0x35], dt)
    b = t([-1, 0, 3, 3, lo, hi, 0x0F, 0x1C], dt)
    cases["and_" + name] = {"a": a, "b": b, "out": a & b}
    cases["or_" + name] = {"a": a, "b": b, "out": a | b}
    cases["xor_" + name] = {"a": a, "b": b, "out": a ^ b}
    cases["not_" + name] = {"a": a, "out": ~a}
    bits = 8 if dt == I8 else 16
    a = t([1, 1, -1, 3, hi, lo, -5, 0x15], dt)
    s = t([0, bits - 1, 1, bits - 2, 1, 1, 2, 3], dt)
    cases["shl_" + name] = {"a": a, "b": s, "out": a << s}
    cases["shr_" + name] = {"a": a, "b": s, "out": a >> s}
    # Comparisons.
    a = t([lo, -1, 0, 1, hi, 5], dt)
    b = t([lo, 0, 0, -1, hi - 1, 5], dt)
    cases["eq_" + name] = {"a": a, "b": b, "out": a == b}
    cases["lt_" + name] = {"a": a, "b": b, "out": a < b}
    cases["ge_" + name] = {"a": a, "b": b, "out": a >= b}
    # Reductions: sums go to int64 (no wrap); max/min/argmax keep the dtype.
    a = t([[hi, hi, hi, 1], [lo, lo, -3, 2], [5, -9, hi, lo]], dt)
    cases["sum_" + name] = {"a": a, "out": a.sum()}
    cases["sum_dim1_" + name] = {"a": a, "out": a.sum(1)}
    cases["max_" + name] = {"a": a, "out": a.max()}
    cases["min_" + name] = {"a": a, "out": a.min()}
    cases["argmax_dim1_" + name] = {"a": a, "out": a.argmax(1)}
    v, i = a.max(0)
    cases["max_dim0_" + name] = {"a": a, "values": v, "indices": i}
    # Indexing of int8/int16 data.
    idx = t([[0, 2, 1, 0], [2, 2, 0, 1]], torch.int64)
    cases["gather_" + name] = {"a": a, "index": idx, "out": torch.gather(a, 0, idx)}
    idx = t([2, 0, 2], torch.int64)
    cases["index_select_" + name] = {"a": a, "index": idx, "out": torch.index_select(a, 0, idx)}

# Promotion with other dtypes: result dtype and values.
a8 = t([-128, -1, 0, 1, 127], I8)
a16 = t([-32768, -300, 0, 300, 32767], I16)
u8 = t([255, 200, 0, 1, 128], torch.uint8)
i32 = t([100000, -5, 0, 7, -100000], torch.int32)
f32 = t([0.5, -0.25, 1.5, -2.0, 3.75], torch.float32)
bl = t([True, False, True, False, True], torch.bool)
cases["promote_int8_uint8"] = {"a": a8, "b": u8, "out": a8 + u8}
cases["promote_int8_int16"] = {"a": a8, "b": a16, "out": a8 + a16}
cases["promote_int16_uint8"] = {"a": a16, "b": u8, "out": a16 + u8}
cases["promote_int16_int32"] = {"a": a16, "b": i32, "out": a16 + i32}
cases["promote_int8_int32"] = {"a": a8, "b": i32, "out": a8 + i32}
cases["promote_int8_float32"] = {"a": a8, "b": f32, "out": a8 + f32}
cases["promote_int16_float32"] = {"a": a16, "b": f32, "out": a16 + f32}
cases["promote_int8_bool"] = {"a": a8, "b": bl, "out": a8 + bl}
cases["promote_int16_bool"] = {"a": a16, "b": bl, "out": a16 + bl}
# Python scalars keep the tensor's integer dtype (and wrap) or lift to float.
cases["scalar_add_int_int8"] = {"a": a8, "out": a8 + 1}
cases["scalar_mul_int_int16"] = {"a": a16, "out": a16 * 3}
cases["scalar_add_float_int8"] = {"a": a8, "out": a8 + 0.5}

dump("int8", cases)

#!/usr/bin/env python3
# gen_segment_amd64.py writes the segment kernels (see segment.go):
# segment_amd64.s (AVX-512) and segment_avx2_amd64.s (AVX2, for CPUs
# without AVX-512). Run it from this directory after changing the op table,
# and keep the table's order equal to segOp's in segment.go (it prints it).
# Both kernels run each op as the same IEEE operation, with the same
# operand as the first source, as the CPU backend's kernel for it (never a
# fused multiply-add), so both give the unfused results bit for bit.
import os

def prefetchw(disp):
    # PREFETCHW disp32(DX)(R13*1), which the Go assembler does not know:
    # REX.X, 0F 0D /1, ModRM mod=10 reg=1 rm=SIB, SIB index=R13 base=DX
    b = [0x42, 0x0F, 0x0D, 0x8C, 0x2A] + list(disp.to_bytes(4, "little"))
    return "; ".join(f"BYTE ${x:#04x}" for x in b)

def avx512_ops():
    # 8 ZMM accumulators: the block is 128 elements
    R = 8
    def rep(f): return "; ".join(f(i) for i in range(R))
    ops = [
     ("LOAD",  rep(lambda i: f"VMOVUPS {64*i}(DX), Z{i}")),
     ("STORE", rep(lambda i: f"VMOVUPS Z{i}, {64*i}(DX)")),
    ]
    for name, ins in [("ADD","VADDPS"),("SUB","VSUBPS"),("MUL","VMULPS"),("DIV","VDIVPS")]:
        ops.append((name+"V", rep(lambda i: f"{ins} {64*i}(DX), Z{i}, Z{i}")))
        ops.append((name+"VR", rep(lambda i: f"VMOVUPS {64*i}(DX), Z{12+i}") + "; " + rep(lambda i: f"{ins} Z{i}, Z{12+i}, Z{i}")))
    def vs(ins): return "VBROADCASTSS 16(SI), Z8; " + rep(lambda i: f"{ins} Z8, Z{i}, Z{i}")
    def sv(ins): return "VBROADCASTSS 16(SI), Z8; " + rep(lambda i: f"{ins} Z{i}, Z8, Z{i}")
    ops += [("ADDS", vs("VADDPS")), ("SUBS", vs("VSUBPS")), ("SUBSR", sv("VSUBPS")), ("MULS", vs("VMULPS")), ("DIVS", vs("VDIVPS")), ("DIVSR", sv("VDIVPS"))]
    def d(ins, rev):
        # widen each accumulator register into two float64 registers, combine, round back
        parts = ["VBROADCASTSD 16(SI), Z8"]
        for i in range(R):
            lo, hi = 12 + 2*(i % 8), 13 + 2*(i % 8)
            parts.append(f"VEXTRACTF64X4 $1, Z{i}, Y{hi}")
            parts.append(f"VCVTPS2PD Y{i}, Z{lo}")
            parts.append(f"VCVTPS2PD Y{hi}, Z{hi}")
            if rev:
                parts.append(f"{ins} Z{lo}, Z8, Z{lo}")
                parts.append(f"{ins} Z{hi}, Z8, Z{hi}")
            else:
                parts.append(f"{ins} Z8, Z{lo}, Z{lo}")
                parts.append(f"{ins} Z8, Z{hi}, Z{hi}")
            parts.append(f"VCVTPD2PS Z{lo}, Y{lo}")
            parts.append(f"VCVTPD2PS Z{hi}, Y{hi}")
            parts.append(f"VINSERTF64X4 $1, Y{hi}, Z{lo}, Z{i}")
        return "; ".join(parts)
    ops += [("ADDD", d("VADDPD",0)), ("SUBD", d("VSUBPD",0)), ("SUBDR", d("VSUBPD",1)), ("MULD", d("VMULPD",0)), ("DIVD", d("VDIVPD",0)), ("DIVDR", d("VDIVPD",1))]
    ops += [
     ("NEG", rep(lambda i: f"VPXORD Z28, Z{i}, Z{i}")),
     ("ABS", rep(lambda i: f"VPANDD Z29, Z{i}, Z{i}")),
     ("SQUARE", rep(lambda i: f"VMULPS Z{i}, Z{i}, Z{i}")),
     ("STORENT", rep(lambda i: f"VMOVNTPS Z{i}, {64*i}(DX)")),
     ("RELU", rep(lambda i: f"VMAXPS Z{i}, Z30, Z{i}") + "; " + rep(lambda i: f"VADDPS Z30, Z{i}, Z{i}")),
     ("PREFETCH", rep(lambda i: f"PREFETCHT0 {64*i}(DX)(R13*1)")),
     ("PREFETCHW", rep(lambda i: prefetchw(64*i))),
    ]
    return ops

def avx2_ops():
    # 8 YMM accumulators (Y0-Y7): a pass is 64 elements, half a block.
    # Y8 a scalar, Y9 the sign bit, Y10 the magnitude mask, Y11 zero,
    # Y12-Y15 operands or float64 halves, used in turn so that a load
    # need not wait for the op before it to be done with its register.
    R = 8
    def rep(f): return "; ".join(f(i) for i in range(R))
    def tmp(i): return 12 + i % 4
    ops = [
     ("LOAD",  rep(lambda i: f"VMOVUPS {32*i}(DX), Y{i}")),
     ("STORE", rep(lambda i: f"VMOVUPS Y{i}, {32*i}(DX)")),
    ]
    for name, ins in [("ADD","VADDPS"),("SUB","VSUBPS"),("MUL","VMULPS"),("DIV","VDIVPS")]:
        ops.append((name+"V", rep(lambda i: f"{ins} {32*i}(DX), Y{i}, Y{i}")))
        ops.append((name+"VR", rep(lambda i: f"VMOVUPS {32*i}(DX), Y{tmp(i)}; {ins} Y{i}, Y{tmp(i)}, Y{i}")))
    def vs(ins): return "VBROADCASTSS 16(SI), Y8; " + rep(lambda i: f"{ins} Y8, Y{i}, Y{i}")
    def sv(ins): return "VBROADCASTSS 16(SI), Y8; " + rep(lambda i: f"{ins} Y{i}, Y8, Y{i}")
    ops += [("ADDS", vs("VADDPS")), ("SUBS", vs("VSUBPS")), ("SUBSR", sv("VSUBPS")), ("MULS", vs("VMULPS")), ("DIVS", vs("VDIVPS")), ("DIVSR", sv("VDIVPS"))]
    def d(ins, rev):
        # widen each accumulator register into two float64 registers, combine, round back
        parts = ["VBROADCASTSD 16(SI), Y8"]
        for i in range(R):
            lo, hi = 12 + 2*(i % 2), 13 + 2*(i % 2)
            parts.append(f"VEXTRACTF128 $1, Y{i}, X{hi}")
            parts.append(f"VCVTPS2PD X{i}, Y{lo}")
            parts.append(f"VCVTPS2PD X{hi}, Y{hi}")
            if rev:
                parts.append(f"{ins} Y{lo}, Y8, Y{lo}")
                parts.append(f"{ins} Y{hi}, Y8, Y{hi}")
            else:
                parts.append(f"{ins} Y8, Y{lo}, Y{lo}")
                parts.append(f"{ins} Y8, Y{hi}, Y{hi}")
            parts.append(f"VCVTPD2PSY Y{lo}, X{lo}")
            parts.append(f"VCVTPD2PSY Y{hi}, X{hi}")
            parts.append(f"VINSERTF128 $1, X{hi}, Y{lo}, Y{i}")
        return "; ".join(parts)
    ops += [("ADDD", d("VADDPD",0)), ("SUBD", d("VSUBPD",0)), ("SUBDR", d("VSUBPD",1)), ("MULD", d("VMULPD",0)), ("DIVD", d("VDIVPD",0)), ("DIVDR", d("VDIVPD",1))]
    ops += [
     ("NEG", rep(lambda i: f"VPXOR Y9, Y{i}, Y{i}")),
     ("ABS", rep(lambda i: f"VPAND Y10, Y{i}, Y{i}")),
     ("SQUARE", rep(lambda i: f"VMULPS Y{i}, Y{i}, Y{i}")),
     ("STORENT", rep(lambda i: f"VMOVNTPS Y{i}, {32*i}(DX)")),
     ("RELU", rep(lambda i: f"VMAXPS Y{i}, Y11, Y{i}") + "; " + rep(lambda i: f"VADDPS Y11, Y{i}, Y{i}")),
     ("PREFETCH", "; ".join(f"PREFETCHT0 {64*i}(DX)(R13*1)" for i in range(4))),
     ("PREFETCHW", "; ".join(prefetchw(64*i) for i in range(4))),
    ]
    return ops

def emit(out, ops):
    w = out.append
    def tree(lo, hi, label):
        w(f"{label}:")
        if hi - lo == 1:
            w(f"\tJMP op_{ops[lo][0]}" if lo < len(ops) else "\tJMP next")
            return
        mid = (lo + hi) // 2
        w(f"\tCMPQ AX, ${mid}")
        w(f"\tJAE t{mid}_{hi}")
        tree(lo, mid, f"t{lo}_{mid}")
        tree(mid, hi, f"t{mid}_{hi}")
    tree(0, 32, "t0_32")
    for name, body in ops:
        w(f"\nop_{name}:")
        for part in body.split("; "):
            w("\t" + part)
        w("\tJMP next")

def avx512():
    R = 8
    ops = avx512_ops()
    out = []
    w = out.append
    w(f"""//go:build !purego

#include "textflag.h"

// Code generated by gen_segment_amd64.py; DO NOT EDIT.

// The segment kernel of segment_amd64.go (the script's op table and segOp
// in segment.go must agree): a run of float32
// element-wise ops evaluated in AVX-512 registers, {16*R} elements ({R}
// registers, the accumulator) at a time, the value one op hands to the
// next kept in the accumulator instead of being stored and loaded. Each op
// is the same IEEE operation as the CPU backend's kernel for it, with the
// same operand as the first source (which decides the NaN that comes out
// when both are NaN), so the results are bit for bit the unfused ones.
//
// Registers: SI the instruction, CX instructions left, R8 the block's byte
// offset, R9 the program, R10 its length, R12 the bytes to do, DX the
// instruction's operand for this block, R13 how far ahead PREFETCH
// reaches (bytes); Z0-Z{R-1} the accumulator, Z8 a
// scalar, Z12-Z27 an operand or float64 halves, Z28 the sign bit, Z29 the
// magnitude mask, Z30 zero. Non-temporal stores are not fenced here, once
// per tile, which would wait for each tile's stores to reach memory: the
// caller runs storeFence when a worker is done.

// func segmentF32(prog *segInst, nprog int, n int, ahead int)
TEXT ·segmentF32(SB), NOSPLIT, $0-32
	MOVQ prog+0(FP), R9
	MOVQ nprog+8(FP), R10
	MOVQ n+16(FP), R12
	MOVQ ahead+24(FP), R13
	SHLQ $2, R12
	XORQ R8, R8
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z28
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z29
	VPXORD Z30, Z30, Z30
	TESTQ R10, R10
	JZ done

block:
	CMPQ R8, R12
	JAE done
	MOVQ R9, SI
	MOVQ R10, CX

inst:
	MOVQ 0(SI), AX
	MOVQ 8(SI), DX
	ADDQ R8, DX
""")
    emit(out, ops)
    w(f"""
next:
	ADDQ $32, SI
	DECQ CX
	JNZ inst
	ADDQ ${64*R}, R8
	JMP block

done:
	VZEROUPPER
	RET

// func storeFence()
TEXT ·storeFence(SB), NOSPLIT, $0-0
	SFENCE
	RET
""")
    return out, ops

def avx2():
    ops = avx2_ops()
    out = []
    w = out.append
    w("""//go:build !purego

#include "textflag.h"

// Code generated by gen_segment_amd64.py; DO NOT EDIT.

// The AVX2 segment kernel of segment_amd64.go, for CPUs without AVX-512:
// the AVX-512 kernel's program (segment_amd64.s) run in YMM registers, 64
// elements (8 registers, the accumulator) at a time, so a block of 128 is
// two passes over the program. Each op is the same IEEE operation as the
// CPU backend's kernel for it, with the same operand as the first source
// (which decides the NaN that comes out when both are NaN), and no fused
// multiply-add, so the results are bit for bit the unfused ones.
//
// Registers: SI the instruction, CX instructions left, R8 the pass's byte
// offset, R9 the program, R10 its length, R12 the bytes to do, DX the
// instruction's operand for this pass, R13 how far ahead PREFETCH
// reaches (bytes); Y0-Y7 the accumulator, Y8 a scalar, Y9 the sign bit,
// Y10 the magnitude mask, Y11 zero, Y12-Y15 an operand or float64 halves.
// Non-temporal stores are not fenced here: the caller runs storeFence when
// a worker is done.

// func segmentF32AVX2(prog *segInst, nprog int, n int, ahead int)
TEXT ·segmentF32AVX2(SB), NOSPLIT, $0-32
	MOVQ prog+0(FP), R9
	MOVQ nprog+8(FP), R10
	MOVQ n+16(FP), R12
	MOVQ ahead+24(FP), R13
	SHLQ $2, R12
	XORQ R8, R8
	MOVL $0x80000000, AX
	MOVQ AX, X9
	VPBROADCASTD X9, Y9
	MOVL $0x7fffffff, AX
	MOVQ AX, X10
	VPBROADCASTD X10, Y10
	VPXOR Y11, Y11, Y11
	TESTQ R10, R10
	JZ done

block:
	CMPQ R8, R12
	JAE done
	MOVQ R9, SI
	MOVQ R10, CX

inst:
	MOVQ 0(SI), AX
	MOVQ 8(SI), DX
	ADDQ R8, DX
""")
    emit(out, ops)
    w("""
next:
	ADDQ $32, SI
	DECQ CX
	JNZ inst
	ADDQ $256, R8
	JMP block

done:
	VZEROUPPER
	RET
""")
    return out, ops

here = os.path.dirname(os.path.abspath(__file__))
out512, ops512 = avx512()
out2, ops2 = avx2()
assert [n for n, _ in ops512] == [n for n, _ in ops2]
open(os.path.join(here, "segment_amd64.s"), "w").write("\n".join(out512))
open(os.path.join(here, "segment_avx2_amd64.s"), "w").write("\n".join(out2))
print(", ".join(f"{i} {n}" for i,(n,_) in enumerate(ops512)))

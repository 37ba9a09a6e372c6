#version 460
// Reduce: out[o] = x[o, r_0] ∘ x[o, r_1] ∘ … over the reduced elements r in
// row-major order of the reduced dimensions. constant_id 0 is the dtype,
// 1 the op (backends.ReduceOp: sum, prod, max, min), 2 the mode:
//   0: one thread per output, elements combined strictly in order;
//   1: one workgroup per output: thread t combines elements t, t+256, …
//      in order, then the 256 partial results combine in a fixed tree;
//   2: few outputs with very many elements, first pass: the reduced range
//      is cut into segments of SEG elements, one workgroup per (output,
//      segment) reduces it as in mode 1 into scratch[o·S + s] (double or
//      int64 bits);
//   3: second pass: one thread per output combines its S segment results
//      in segment order.
// The mode is chosen from the shapes alone, so results never depend on the
// device or the launch.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int DT = 0;
layout(constant_id = 1) const int OP = 0;
layout(constant_id = 2) const int MODE = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o;  // out
  View x;  // x with out's shape, reduced strides 0
  View r;  // the reduced dimensions of x, offset 0
  int64_t K; int64_t R;
  int64_t S; int64_t SEG; uint64_t scratch;  // modes 2 and 3
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

const bool INT = DT == DT_I64 || DT == DT_I32 || DT == DT_I16 || DT == DT_I8 || DT == DT_U8 || DT == DT_BOOL;
shared double partD[256];
shared int64_t partI[256];

void main() {
  ArgsRef g = pc.args;
  int64_t K = g.K, R = g.R;
  if (MODE == 0) {
    for (int64_t o = int64_t(gl_GlobalInvocationID.x); o < K; o += int64_t(gl_NumWorkGroups.x) * 256) {
      int64_t base = elemOffset(g.x, o);
      if (INT) {
        int64_t a = identityI(OP);
        for (int64_t j = 0; j < R; j++) a = combineI(OP, a, loadI(g.x.addr, DT, base + elemOffset(g.r, j)));
        storeI(g.o.addr, DT, elemOffset(g.o, o), a);
      } else {
        double a = identityD(OP);
        for (int64_t j = 0; j < R; j++) a = combineD(OP, a, loadD(g.x.addr, DT, base + elemOffset(g.r, j)));
        storeD(g.o.addr, DT, elemOffset(g.o, o), a);
      }
    }
    return;
  }
  if (MODE == 3) {
    for (int64_t o = int64_t(gl_GlobalInvocationID.x); o < K; o += int64_t(gl_NumWorkGroups.x) * 256) {
      if (INT) {
        int64_t a = identityI(OP);
        for (int64_t s = 0; s < g.S; s++) a = combineI(OP, a, loadI(g.scratch, DT_I64, o * g.S + s));
        storeI(g.o.addr, DT, elemOffset(g.o, o), a);
      } else {
        double a = identityD(OP);
        for (int64_t s = 0; s < g.S; s++) a = combineD(OP, a, loadD(g.scratch, DT_F64, o * g.S + s));
        storeD(g.o.addr, DT, elemOffset(g.o, o), a);
      }
    }
    return;
  }
  uint t = gl_LocalInvocationID.x;
  int64_t tasks = MODE == 2 ? K * g.S : K;
  for (int64_t task = int64_t(gl_WorkGroupID.x); task < tasks; task += int64_t(gl_NumWorkGroups.x)) {
    int64_t o = task, lo = 0, hi = R;
    if (MODE == 2) {
      o = task / g.S;
      lo = (task % g.S) * g.SEG;
      hi = min(lo + g.SEG, R);
    }
    int64_t base = elemOffset(g.x, o);
    if (INT) {
      int64_t a = identityI(OP);
      for (int64_t j = lo + int64_t(t); j < hi; j += 256) a = combineI(OP, a, loadI(g.x.addr, DT, base + elemOffset(g.r, j)));
      partI[t] = a;
    } else {
      double a = identityD(OP);
      for (int64_t j = lo + int64_t(t); j < hi; j += 256) a = combineD(OP, a, loadD(g.x.addr, DT, base + elemOffset(g.r, j)));
      partD[t] = a;
    }
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
      if (t < s) {
        if (INT) partI[t] = combineI(OP, partI[t], partI[t + s]);
        else partD[t] = combineD(OP, partD[t], partD[t + s]);
      }
      barrier();
    }
    if (t == 0u) {
      if (MODE == 2) {
        if (INT) storeI(g.scratch, DT_I64, task, partI[0]);
        else storeD(g.scratch, DT_F64, task, partD[0]);
      } else {
        if (INT) storeI(g.o.addr, DT, elemOffset(g.o, o), partI[0]);
        else storeD(g.o.addr, DT, elemOffset(g.o, o), partD[0]);
      }
    }
    barrier();
  }
}

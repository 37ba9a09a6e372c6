#version 460
// ArgReduce: the index of the first maximum (constant_id 1 = 0) or minimum
// (1) along a line, NaN counting as both and the first NaN winning, as on
// the CPU. Values compare as double (exact for every dtype but int64 beyond
// 2^53, as the CPU's float64 comparison). constant_id 2 selects one thread
// per output (0) or, for long lines, one workgroup per output (1): each
// invocation finds the first best of elements t, t+256, …, and the 256
// candidates combine in a fixed tree that prefers NaN, then the better
// value, then the lower index, which is exactly the sequential answer.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int DT = 0;
layout(constant_id = 1) const int ISMIN = 0;
layout(constant_id = 2) const int GROUP = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o;  // out (Int64)
  View x;  // x with out's shape, axis stride 0
  int64_t n; int64_t st; int64_t K;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

shared double partV[256];
shared int64_t partK[256];

// wins reports whether candidate (v, k) beats (bv, bk).
bool wins(double v, int64_t k, double bv, int64_t bk) {
  bool vn = isNaND(v), bn = isNaND(bv);
  if (vn || bn) return vn && (!bn || k < bk);
  if (v == bv) return k < bk;
  return ISMIN == 0 ? v > bv : v < bv;
}

void main() {
  ArgsRef g = pc.args;
  if (GROUP != 0) {
    uint t = gl_LocalInvocationID.x;
    for (int64_t o = int64_t(gl_WorkGroupID.x); o < g.K; o += int64_t(gl_NumWorkGroups.x)) {
      int64_t base = elemOffset(g.x, o);
      double best = 0.0lf;
      int64_t bi = -1;
      for (int64_t k = int64_t(t); k < g.n; k += 256) {
        double v = loadD(g.x.addr, DT, base + k * g.st);
        if (bi < 0 || wins(v, k, best, bi)) { best = v; bi = k; }
        if (isNaND(best)) break;
      }
      partV[t] = best;
      partK[t] = bi;
      barrier();
      for (uint s = 128u; s > 0u; s >>= 1) {
        if (t < s && partK[t + s] >= 0 && (partK[t] < 0 || wins(partV[t + s], partK[t + s], partV[t], partK[t]))) {
          partV[t] = partV[t + s];
          partK[t] = partK[t + s];
        }
        barrier();
      }
      if (t == 0u) storeI(g.o.addr, DT_I64, elemOffset(g.o, o), partK[0]);
      barrier();
    }
    return;
  }
  for (int64_t o = int64_t(gl_GlobalInvocationID.x); o < g.K; o += int64_t(gl_NumWorkGroups.x) * 256) {
    int64_t base = elemOffset(g.x, o);
    double best = loadD(g.x.addr, DT, base);
    int64_t bi = 0;
    if (!isNaND(best)) {
      for (int64_t k = 1; k < g.n; k++) {
        double v = loadD(g.x.addr, DT, base + k * g.st);
        if (isNaND(v)) { bi = k; break; }
        if (ISMIN == 0 ? v > best : v < best) { best = v; bi = k; }
      }
    }
    storeI(g.o.addr, DT_I64, elemOffset(g.o, o), bi);
  }
}

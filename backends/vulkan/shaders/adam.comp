#version 460
// AdamStep (backends.AdamFusion) for contiguous Float32 (constant_id 0 = 0)
// or Float64 (1) views: every intermediate rounded exactly as the CPU's
// fused kernel and the composition of element-wise primitives round it (an
// operation with a float64 scalar computed in double and rounded to the
// dtype; one between two tensors in the dtype), `precise` so that nothing
// is fused. constant_id 1: maximize, 2: first step (no moments yet),
// 3: moves the parameter.
#include "common.glsl"
layout(constant_id = 0) const int DT = 0;
layout(constant_id = 1) const int MAXIMIZE = 0;
layout(constant_id = 2) const int FIRST = 0;
layout(constant_id = 3) const int MOVES = 1;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View outP; View outM; View outV; View p; View g; View m; View v;
  double decay; double wd; double b1; double b2; double c1; double c2; double inv; double eps;
  int64_t n;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

void stepF(ArgsRef a, int64_t i) {
  precise float pi = loadF(a.p.addr, DT, a.p.offset + i);
  precise float gi = loadF(a.g.addr, DT, a.g.offset + i);
  if (MAXIMIZE != 0) gi = -gi;
  if (a.decay != 1.0lf) pi = float(double(pi) * a.decay);
  if (a.wd != 0.0lf) gi = gi + float(double(pi) * a.wd);
  precise float gm = float(double(gi) * a.c1);
  precise float gg = gi * gi;
  precise float gs = float(double(gg) * a.c2);
  precise float mi = gm, vi = gs;
  if (FIRST == 0) {
    mi = float(loadD(a.m.addr, DT, a.m.offset + i) * a.b1) + gm;
    vi = float(loadD(a.v.addr, DT, a.v.offset + i) * a.b2) + gs;
  }
  storeF(a.outM.addr, DT, a.outM.offset + i, mi);
  storeF(a.outV.addr, DT, a.outV.offset + i, vi);
  if (MOVES != 0) {
    precise float root = float(sqrt(double(vi)));
    precise float scaled = float(double(root) * a.inv);
    precise float denom = float(double(scaled) + a.eps);
    precise float q = mi / denom;
    precise float np = pi + q;
    storeF(a.outP.addr, DT, a.outP.offset + i, np);
  }
}

void stepD(ArgsRef a, int64_t i) {
  precise double pi = loadD(a.p.addr, DT, a.p.offset + i);
  precise double gi = loadD(a.g.addr, DT, a.g.offset + i);
  if (MAXIMIZE != 0) gi = -gi;
  if (a.decay != 1.0lf) pi = pi * a.decay;
  if (a.wd != 0.0lf) gi = gi + pi * a.wd;
  precise double gm = gi * a.c1;
  precise double gg = gi * gi;
  precise double gs = gg * a.c2;
  precise double mi = gm, vi = gs;
  if (FIRST == 0) {
    precise double mb = loadD(a.m.addr, DT, a.m.offset + i) * a.b1;
    precise double vb = loadD(a.v.addr, DT, a.v.offset + i) * a.b2;
    mi = mb + gm;
    vi = vb + gs;
  }
  storeD(a.outM.addr, DT, a.outM.offset + i, mi);
  storeD(a.outV.addr, DT, a.outV.offset + i, vi);
  if (MOVES != 0) {
    precise double root = sqrt(vi);
    precise double scaled = root * a.inv;
    precise double denom = scaled + a.eps;
    precise double q = mi / denom;
    precise double np = pi + q;
    storeD(a.outP.addr, DT, a.outP.offset + i, np);
  }
}

void main() {
  ArgsRef a = pc.args;
  for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < a.n; i += int64_t(gl_NumWorkGroups.x) * 256) {
    if (DT == DT_F32) stepF(a, i);
    else stepD(a, i);
  }
}

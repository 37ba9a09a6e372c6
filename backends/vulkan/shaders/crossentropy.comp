#version 460
// Cross-entropy of class-index targets over the rows of logits x [N, C]
// (backends.CrossEntropyFusion), each mode agreeing bit for bit with the
// composition package tensor runs on this device:
//   0: forward, Float32, one workgroup of 256 per row: the row maximum,
//      s = x − max, exp(s) (GLSL exp, as unary.comp's Exp), their sum in
//      double in Reduce's order for [N, C] over axis 1 (constant_id 1: 0,
//      one thread in order, as reduceByThread; 1, 256 strided partial sums
//      and the fixed tree), log (unary.comp's Log) and s − log z; then
//      nll = −logp[t] and weight = 1, or both 0 where t = ignore;
//   1: backward, Float32, one invocation per element: exp(logp)·a, then
//      + (−a) at the target (column 0 for an ignored row), a = coef·weight;
//   2: forward, Float64, after the log-softmax was composed from the
//      primitives (GLSL has no double exp): the picked entries only;
//   3: backward, Float64, after dx = exp(logp) was composed: dx·a and the
//      target's −a.
// A target outside [0, C) that is not ignore is error 1 (forward modes).
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const int TREE = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View logp; View nll; View weight; View x; View target; View coef; View dx;  // contiguous; unused ones repeat another
  int64_t N; int64_t C; int64_t ignore; int64_t perRow;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

shared double part[256];

// logF is unary.comp's Log for float.
float logF(float x) {
  if (isnan(x) || x < 0.0) return uintBitsToFloat(0x7fc00000u);
  if (x == 0.0) return uintBitsToFloat(0xff800000u);
  if (isinf(x)) return x;
  return log(x);
}

// pick writes row i's loss and weight from its log-probabilities (mode 2).
void pick(ArgsRef g, int64_t i, int dt) {
  int64_t t = loadI(g.target.addr, DT_I64, g.target.offset + i);
  double nl = 0.0lf, w = 0.0lf;
  if (t != g.ignore) {
    if (t < 0 || t >= g.C) {
      reportError(pc.err, 1u, t);
    } else {
      nl = -loadD(g.logp.addr, dt, g.logp.offset + i * g.C + t);
      w = 1.0lf;
    }
  }
  storeD(g.nll.addr, dt, g.nll.offset + i, nl);
  storeD(g.weight.addr, dt, g.weight.offset + i, w);
}

// expShifted is exp(x[j] − m) for the element at xe, as the composition
// computes it: the subtraction rounded to float, then Exp.
float expShifted(ArgsRef g, int64_t xe, float m) {
  precise float s = loadF(g.x.addr, DT_F32, xe) - m;
  return exp(s);
}

// rowSum sums the row's exp(x − m) into part[0] in Reduce's order (each
// invocation recomputes its terms from x, so no invocation reads what
// another wrote to memory).
void rowSum(ArgsRef g, int64_t xb, float m, uint t) {
  if (TREE == 0) {
    if (t == 0u) {
      double a = 0.0lf;
      for (int64_t j = 0; j < g.C; j++) a = a + double(expShifted(g, xb + j, m));
      part[0] = a;
    }
    barrier();
    return;
  }
  double a = 0.0lf;
  for (int64_t j = int64_t(t); j < g.C; j += 256) a = a + double(expShifted(g, xb + j, m));
  part[t] = a;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (t < s) part[t] = part[t] + part[t + s];
    barrier();
  }
}

void forward(ArgsRef g) {
  uint t = gl_LocalInvocationID.x;
  for (int64_t i = int64_t(gl_WorkGroupID.x); i < g.N; i += int64_t(gl_NumWorkGroups.x)) {
    int64_t xb = g.x.offset + i * g.C, lb = g.logp.offset + i * g.C;
    double m = identityD(OP_MAX);
    for (int64_t j = int64_t(t); j < g.C; j += 256) m = combineD(OP_MAX, m, loadD(g.x.addr, DT_F32, xb + j));
    part[t] = m;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
      if (t < s) part[t] = combineD(OP_MAX, part[t], part[t + s]);
      barrier();
    }
    float mf = float(part[0]);
    barrier();
    rowSum(g, xb, mf, t);
    float lz = logF(float(part[0]));
    barrier();
    for (int64_t j = int64_t(t); j < g.C; j += 256) {
      precise float s = loadF(g.x.addr, DT_F32, xb + j) - mf;
      precise float l = s - lz;
      storeF(g.logp.addr, DT_F32, lb + j, l);
    }
    if (t == 0u) {
      // the target's entry, recomputed rather than read back from logp
      int64_t tg = loadI(g.target.addr, DT_I64, g.target.offset + i);
      float nl = 0.0, w = 0.0;
      if (tg != g.ignore) {
        if (tg < 0 || tg >= g.C) {
          reportError(pc.err, 1u, tg);
        } else {
          precise float s = loadF(g.x.addr, DT_F32, xb + tg) - mf;
          precise float l = s - lz;
          nl = -l;
          w = 1.0;
        }
      }
      storeF(g.nll.addr, DT_F32, g.nll.offset + i, nl);
      storeF(g.weight.addr, DT_F32, g.weight.offset + i, w);
    }
  }
}

void backward(ArgsRef g) {
  int dt = MODE == 1 ? DT_F32 : DT_F64;
  GRID_STRIDE(e, g.N * g.C) {
    int64_t i = e / g.C, c = e - i * g.C;
    int64_t t = loadI(g.target.addr, DT_I64, g.target.offset + i);
    if (t == g.ignore || t < 0 || t >= g.C) t = 0;
    int64_t ci = g.perRow != 0 ? i : 0;
    if (MODE == 1) {
      precise float a = loadF(g.coef.addr, DT_F32, g.coef.offset + ci) * loadF(g.weight.addr, DT_F32, g.weight.offset + i);
      precise float d = exp(loadF(g.logp.addr, DT_F32, g.logp.offset + e)) * a;
      if (c == t) d = d + (-a);
      storeF(g.dx.addr, DT_F32, g.dx.offset + e, d);
    } else {
      precise double a = loadD(g.coef.addr, DT_F64, g.coef.offset + ci) * loadD(g.weight.addr, DT_F64, g.weight.offset + i);
      precise double d = loadD(g.dx.addr, DT_F64, g.dx.offset + e) * a;
      if (c == t) d = d + (-a);
      storeD(g.dx.addr, DT_F64, g.dx.offset + e, d);
    }
  }
}

void main() {
  ArgsRef g = pc.args;
  if (MODE == 0) {
    forward(g);
  } else if (MODE == 2) {
    GRID_STRIDE(i, g.N) pick(g, i, DT_F64);
  } else {
    backward(g);
  }
}

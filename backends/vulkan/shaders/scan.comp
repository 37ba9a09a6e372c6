#version 460
// Scan: the inclusive cumulative sum (constant_id 1 = 0) or product (1)
// along a line, one thread per line, accumulated in double for floats
// (each output rounded from the running double) and exactly in int64 for
// integers, as on the CPU.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int DT = 0;
layout(constant_id = 1) const int OP = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o;  // out with the line axis of size 1
  View x;  // x likewise
  int64_t n; int64_t ost; int64_t xst; int64_t lines;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

const bool INT = DT == DT_I64 || DT == DT_I32 || DT == DT_I16 || DT == DT_I8 || DT == DT_U8 || DT == DT_BOOL;

void main() {
  ArgsRef g = pc.args;
  for (int64_t l = int64_t(gl_GlobalInvocationID.x); l < g.lines; l += int64_t(gl_NumWorkGroups.x) * 256) {
    int64_t xb = elemOffset(g.x, l), ob = elemOffset(g.o, l);
    if (INT) {
      int64_t a = identityI(OP);
      for (int64_t k = 0; k < g.n; k++) {
        a = combineI(OP, a, loadI(g.x.addr, DT, xb + k * g.xst));
        storeI(g.o.addr, DT, ob + k * g.ost, a);
      }
    } else {
      double a = identityD(OP);
      for (int64_t k = 0; k < g.n; k++) {
        a = combineD(OP, a, loadD(g.x.addr, DT, xb + k * g.xst));
        storeD(g.o.addr, DT, ob + k * g.ost, a);
      }
    }
  }
}

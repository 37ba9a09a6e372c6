#version 460
// Gather: out[…i…] = x[…index[…i…]…] along axis, one thread per element of
// out. A negative index counts from the end; one still out of range is
// error 1 (its value the detail) and leaves the element unwritten.
// constant_id 0 is out's dtype, 1 x's.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int ODT = 0;
layout(constant_id = 1) const int XDT = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o; View x; View index;
  int64_t axis; int64_t n;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

void main() {
  ArgsRef g = pc.args;
  int64_t size = g.x.shape[int(g.axis)];
  int nd = int(g.o.rank);
  for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < g.n; i += int64_t(gl_NumWorkGroups.x) * 256) {
    int64_t k = loadI(g.index.addr, DT_I64, elemOffset(g.index, i));
    int64_t kk = k < 0 ? k + size : k;
    if (kk < 0 || kk >= size) {
      reportError(pc.err, 1u, k);
      continue;
    }
    int64_t rem = i, xo = g.x.offset, oo = g.o.offset;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t c = rem % g.o.shape[d];
      rem /= g.o.shape[d];
      oo += c * g.o.strides[d];
      xo += (d == int(g.axis) ? kk : c) * g.x.strides[d];
    }
    if (isIntDT(ODT) && isIntDT(XDT)) storeI(g.o.addr, ODT, oo, loadI(g.x.addr, XDT, xo));
    else storeD(g.o.addr, ODT, oo, loadD(g.x.addr, XDT, xo));
  }
}

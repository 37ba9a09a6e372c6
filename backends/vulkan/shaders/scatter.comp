#version 460
// Scatter: out[…index[…i…]…] = src[…i…] (or += with constant_id 2 = 1)
// along axis. One thread per line of index along axis walks the line in
// order, so duplicate indices resolve (last write wins, or accumulate) in
// the CPU's row-major order of src, and no two threads touch one element of
// out. Accumulation rounds to out's dtype at every step (float adds for
// Float32, double rounded to Float16/BFloat16, exact int64 for integers).
// A negative index counts from the end; one still out of range is error 1.
// constant_id 0 is out's dtype, 1 src's.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int ODT = 0;
layout(constant_id = 1) const int SDT = 0;
layout(constant_id = 2) const int ADD = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o; View index; View src;
  int64_t axis; int64_t lines;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

void main() {
  ArgsRef g = pc.args;
  int ax = int(g.axis);
  int nd = int(g.index.rank);
  int64_t len = g.index.shape[ax], size = g.o.shape[ax];
  for (int64_t l = int64_t(gl_GlobalInvocationID.x); l < g.lines; l += int64_t(gl_NumWorkGroups.x) * 256) {
    int64_t rem = l, io = g.index.offset, so = g.src.offset, oo = g.o.offset;
    for (int d = nd - 1; d >= 0; d--) {
      if (d == ax) continue;
      int64_t c = rem % g.index.shape[d];
      rem /= g.index.shape[d];
      io += c * g.index.strides[d];
      so += c * g.src.strides[d];
      oo += c * g.o.strides[d];
    }
    for (int64_t j = 0; j < len; j++) {
      int64_t k = loadI(g.index.addr, DT_I64, io + j * g.index.strides[ax]);
      int64_t kk = k < 0 ? k + size : k;
      if (kk < 0 || kk >= size) {
        reportError(pc.err, 1u, k);
        continue;
      }
      int64_t p = oo + kk * g.o.strides[ax], s = so + j * g.src.strides[ax];
      if (isIntDT(ODT) && isIntDT(SDT)) {
        int64_t v = loadI(g.src.addr, SDT, s);
        if (ADD != 0) v += loadI(g.o.addr, ODT, p);
        storeI(g.o.addr, ODT, p, v);
      } else if (ADD != 0 && ODT == DT_F32 && SDT == DT_F32) {
        storeF(g.o.addr, ODT, p, loadF(g.o.addr, ODT, p) + loadF(g.src.addr, SDT, s));
      } else {
        double v = loadD(g.src.addr, SDT, s);
        if (ADD != 0) v += loadD(g.o.addr, ODT, p);
        storeD(g.o.addr, ODT, p, v);
      }
    }
  }
}

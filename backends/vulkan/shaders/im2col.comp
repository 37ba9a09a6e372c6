#version 460
// Im2Col: out [N, C·KH·KW, OH·OW] from x [N, C, H, W], one thread per
// element of out; positions in the padding read the pad value.
// constant_id 0 is the dtype.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int DT = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o; View x;
  int64_t N, C, H, W, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW;
  double pad; int64_t n;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

void main() {
  ArgsRef g = pc.args;
  for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < g.n; i += int64_t(gl_NumWorkGroups.x) * 256) {
    int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, kw = (i / (g.OW * g.OH)) % g.KW;
    int64_t kh = (i / (g.OW * g.OH * g.KW)) % g.KH, c = (i / (g.OW * g.OH * g.KW * g.KH)) % g.C;
    int64_t b = i / (g.OW * g.OH * g.KW * g.KH * g.C);
    int64_t y = oh * g.SH - g.PT + kh * g.DH, x0 = ow * g.SW - g.PL + kw * g.DW;
    int64_t oo = g.o.offset + b * g.o.strides[0] + ((c * g.KH + kh) * g.KW + kw) * g.o.strides[1] + (oh * g.OW + ow) * g.o.strides[2];
    if (y < 0 || y >= g.H || x0 < 0 || x0 >= g.W) {
      storeD(g.o.addr, DT, oo, g.pad);
    } else {
      int64_t xo = g.x.offset + b * g.x.strides[0] + c * g.x.strides[1] + y * g.x.strides[2] + x0 * g.x.strides[3];
      if (isIntDT(DT)) storeI(g.o.addr, DT, oo, loadI(g.x.addr, DT, xo));
      else storeD(g.o.addr, DT, oo, loadD(g.x.addr, DT, xo));
    }
  }
}

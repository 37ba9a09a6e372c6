#version 460
// Col2Im: out [N, C, H, W] from cols [N, C·KH·KW, OH·OW], one thread per
// element of out summing every window that covers it in the CPU's order
// (window row, then window column), rounding to out's dtype after every
// addition (float adds for Float32). No atomics, so results are exact
// and reproducible. constant_id 0 is the dtype.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int DT = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o; View cols;
  int64_t N, C, H, W, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW;
  int64_t n;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

void main() {
  ArgsRef g = pc.args;
  for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < g.n; i += int64_t(gl_NumWorkGroups.x) * 256) {
    int64_t x0 = i % g.W, y = (i / g.W) % g.H, c = (i / (g.W * g.H)) % g.C, b = i / (g.W * g.H * g.C);
    int64_t oo = g.o.offset + b * g.o.strides[0] + c * g.o.strides[1] + y * g.o.strides[2] + x0 * g.o.strides[3];
    int64_t cb = g.cols.offset + b * g.cols.strides[0];
    float rf = 0.0;
    double rd = 0.0;
    int64_t ri = 0;
    for (int64_t kh = 0; kh < g.KH; kh++) {
      int64_t ty = y + g.PT - kh * g.DH;
      if (ty < 0 || ty % g.SH != 0 || ty / g.SH >= g.OH) continue;
      for (int64_t kw = 0; kw < g.KW; kw++) {
        int64_t tx = x0 + g.PL - kw * g.DW;
        if (tx < 0 || tx % g.SW != 0 || tx / g.SW >= g.OW) continue;
        int64_t row = (c * g.KH + kh) * g.KW + kw, col = (ty / g.SH) * g.OW + tx / g.SW;
        int64_t e = cb + row * g.cols.strides[1] + col * g.cols.strides[2];
        if (DT == DT_F32) rf += loadF(g.cols.addr, DT, e);
        else if (isIntDT(DT)) ri += loadI(g.cols.addr, DT, e);
        else if (DT == DT_F64) rd += loadD(g.cols.addr, DT, e);
        else { // round to the half type after every addition, as the CPU does
          storeD(g.o.addr, DT, oo, rd + loadD(g.cols.addr, DT, e));
          rd = loadD(g.o.addr, DT, oo);
        }
      }
    }
    if (DT == DT_F32) storeF(g.o.addr, DT, oo, rf);
    else if (isIntDT(DT)) storeI(g.o.addr, DT, oo, ri);
    else storeD(g.o.addr, DT, oo, rd);
  }
}

#version 460
// Random: element i of out (row-major) is backends.RandomValue(kind, seed,
// counter+i, p0, p1), bit for bit: Philox4x32-10, 53-bit uniforms, and for
// Normal the Box–Muller transform with Go's own math.Log and math.Cos
// algorithms computed in double (`precise`, so no operation is fused or
// reordered). constant_id 0 is out's dtype, 1 the kind (backends.RandomKind).
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int DT = 0;
layout(constant_id = 1) const int KIND = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o;
  uint64_t seed; uint64_t counter; double p0; double p1; int64_t n;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

// The constants of Go's math.Log and math.Cos, from their bits.
#define LN2HI (packDouble2x32(uvec2(0xfee00000u, 0x3fe62e42u))) // 0.6931471803691238
#define LN2LO (packDouble2x32(uvec2(0x35793c76u, 0x3dea39efu))) // 1.9082149292705877e-10
#define L1 (packDouble2x32(uvec2(0x55555593u, 0x3fe55555u))) // 0.6666666666666735
#define L2 (packDouble2x32(uvec2(0x9997fa04u, 0x3fd99999u))) // 0.3999999999940942
#define L3 (packDouble2x32(uvec2(0x94229359u, 0x3fd24924u))) // 0.2857142874366239
#define L4 (packDouble2x32(uvec2(0x1d8e78afu, 0x3fcc71c5u))) // 0.22222198432149784
#define L5 (packDouble2x32(uvec2(0x96cb03deu, 0x3fc74664u))) // 0.1818357216161805
#define L6 (packDouble2x32(uvec2(0xd078c69fu, 0x3fc39a09u))) // 0.15313837699209373
#define L7 (packDouble2x32(uvec2(0xdf3e5244u, 0x3fc2f112u))) // 0.14798198605116586
#define SQRT2_2 (packDouble2x32(uvec2(0x667f3bcdu, 0x3fe6a09eu))) // 0.7071067811865476
#define PI4A (packDouble2x32(uvec2(0x40000000u, 0x3fe921fbu))) // 0.7853981256484985
#define PI4B (packDouble2x32(uvec2(0x00000000u, 0x3e64442du))) // 3.774894707930798e-08
#define PI4C (packDouble2x32(uvec2(0x98cc5170u, 0x3ce84698u))) // 2.6951514290790595e-15
#define FOUR_PI (packDouble2x32(uvec2(0x6dc9c883u, 0x3ff45f30u))) // 1.2732395447351628
#define TWO_PI (packDouble2x32(uvec2(0x54442d18u, 0x401921fbu))) // 6.283185307179586
#define S0 (packDouble2x32(uvec2(0x1fd19ccdu, 0x3de5d8fdu))) // 1.5896230157654656e-10
#define S1 (packDouble2x32(uvec2(0xa9291f5du, 0xbe5ae5e5u))) // -2.5050747762857807e-08
#define S2 (packDouble2x32(uvec2(0x567d48a1u, 0x3ec71de3u))) // 2.7557313621385722e-06
#define S3 (packDouble2x32(uvec2(0x19bfdf03u, 0xbf2a01a0u))) // -0.0001984126982958954
#define S4 (packDouble2x32(uvec2(0x1110f7d0u, 0x3f811111u))) // 0.008333333333322118
#define S5 (packDouble2x32(uvec2(0x55555548u, 0xbfc55555u))) // -0.1666666666666663
#define C0 (packDouble2x32(uvec2(0xa0861a9bu, 0xbda8fa49u))) // -1.1358536521387682e-11
#define C1 (packDouble2x32(uvec2(0x7b4e3f05u, 0x3e21ee9du))) // 2.087570084197473e-09
#define C2 (packDouble2x32(uvec2(0x7eac4bc6u, 0xbe927e4fu))) // -2.755731417929674e-07
#define C3 (packDouble2x32(uvec2(0x19c844f5u, 0x3efa01a0u))) // 2.4801587288851704e-05
#define C4 (packDouble2x32(uvec2(0x16c14f91u, 0xbf56c16cu))) // -0.0013888888888873056
#define C5 (packDouble2x32(uvec2(0x5555554bu, 0x3fa55555u))) // 0.041666666666666595

uvec4 philox(uvec4 c, uvec2 k) {
  for (int r = 0; r < 10; r++) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

double uniform53(uint hi, uint lo) {
  uint64_t v = (uint64_t(hi) << 21) ^ (uint64_t(lo >> 11) & 0x1ffffffffffffful);
  return double(v) * packDouble2x32(uvec2(0u, 0x3ca00000u)); // 2^-53, exact
}

// goLog is Go's math.Log for finite x > 0.
double goLog(double x) {
  uvec2 b = unpackDouble2x32(x);
  int e = int((b.y >> 20) & 0x7ffu);
  precise double f1;
  int ki;
  if (e == 0) { // subnormal: scale by 2^52 first
    precise double xs = x * packDouble2x32(uvec2(0u, 0x43300000u));
    b = unpackDouble2x32(xs);
    e = int((b.y >> 20) & 0x7ffu) - 52;
  }
  f1 = packDouble2x32(uvec2(b.x, (b.y & 0x800fffffu) | 0x3fe00000u));
  ki = e - 1022;
  if (f1 < SQRT2_2) {
    f1 = f1 * 2.0lf;
    ki--;
  }
  precise double f = f1 - 1.0lf;
  precise double k = double(ki);
  precise double s = f / (2.0lf + f);
  precise double s2 = s * s;
  precise double s4 = s2 * s2;
  precise double t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
  precise double t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
  precise double R = t1 + t2;
  precise double hfsq = 0.5lf * f * f;
  precise double r = k * LN2HI - ((hfsq - (s * (hfsq + R) + k * LN2LO)) - f);
  return r;
}

// goCos is Go's math.Cos for finite 0 ≤ x < 2^29.
double goCos(double x) {
  precise double xx = abs(x);
  precise double t = xx * FOUR_PI;
  uint64_t j = uint64_t(t);
  precise double y = double(j);
  if ((j & 1ul) == 1ul) {
    j++;
    y = y + 1.0lf;
  }
  j &= 7ul;
  precise double z = ((xx - y * PI4A) - y * PI4B) - y * PI4C;
  bool sign = false;
  if (j > 3ul) {
    j -= 4ul;
    sign = !sign;
  }
  if (j > 1ul) sign = !sign;
  precise double zz = z * z;
  precise double r;
  if (j == 1ul || j == 2ul) {
    r = z + z * zz * ((((((S0 * zz) + S1) * zz + S2) * zz + S3) * zz + S4) * zz + S5);
  } else {
    r = 1.0lf - 0.5lf * zz + zz * zz * ((((((C0 * zz) + C1) * zz + C2) * zz + C3) * zz + C4) * zz + C5);
  }
  return sign ? -r : r;
}

void main() {
  ArgsRef g = pc.args;
  uvec2 key = uvec2(uint(g.seed), uint(g.seed >> 32));
  double p0 = g.p0, p1 = g.p1;
  for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < g.n; i += int64_t(gl_NumWorkGroups.x) * 256) {
    uint64_t pos = g.counter + uint64_t(i);
    uvec4 r = philox(uvec4(uint(pos), uint(pos >> 32), 0x4b494c4eu, 0u), key);
    precise double u = uniform53(r.x, r.y);
    precise double v;
    if (KIND == 0) {
      v = p0 + (p1 - p0) * u;
    } else if (KIND == 1) {
      precise double u1 = 1.0lf - u;
      precise double u2 = uniform53(r.z, r.w);
      precise double m = -2.0lf * goLog(u1);
      v = p0 + p1 * sqrt(m) * goCos(TWO_PI * u2);
    } else if (KIND == 2) {
      v = u < p0 ? 1.0lf : 0.0lf;
    } else {
      precise double span = p1 - p0;
      v = p0 + floor(u * span);
    }
    int64_t e = elemOffset(g.o, i);
    if (isIntDT(DT)) storeI(g.o.addr, DT, e, int64_t(v));
    else storeD(g.o.addr, DT, e, v);
  }
}

#version 460
// matmul_subgroup: the GEMM of Float32, Float16 and BFloat16 (constant_id
// 0 = dtype) with subgroup shuffles in place of shared memory, for devices
// that report basic and shuffle subgroup operations in compute shaders
// (ops_matmul.go chooses it at run time).
//
// Each subgroup of S invocations computes an 8×S tile of one matrix of the
// batch (a grid-stride loop over tiles, every subgroup of a 128-wide
// workgroup on its own tile), one column per invocation and eight rows in
// registers. Stepping through K S at a time, invocation l loads A[r][k0+l]
// for the tile's rows; then for each k of the step every invocation loads
// its B[k][col] and takes A[r][k] from invocation k - k0 with
// subgroupShuffle. Each output sums its K products in order, in float32,
// and rounds once to the output dtype, exactly as matmul.comp does.
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 128) in;
layout(constant_id = 0) const int DT = 0;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o; View a; View b;
  int64_t M; int64_t N; int64_t K; int64_t batch;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

const int RM = 8; // rows per subgroup tile

void main() {
  ArgsRef g = pc.args;
  int64_t M = g.M, N = g.N, K = g.K;
  int nd = int(g.o.rank);
  int64_t S = int64_t(gl_SubgroupSize);
  int64_t lane = int64_t(gl_SubgroupInvocationID);
  int64_t ars = g.a.strides[nd - 2], acs = g.a.strides[nd - 1];
  int64_t brs = g.b.strides[nd - 2], bcs = g.b.strides[nd - 1];
  int64_t ors = g.o.strides[nd - 2], ocs = g.o.strides[nd - 1];
  int64_t tilesM = (M + RM - 1) / RM, tilesN = (N + S - 1) / S;
  int64_t tiles = tilesM * tilesN * g.batch;
  int64_t step = int64_t(gl_NumWorkGroups.x) * int64_t(gl_NumSubgroups);
  // t is the same for every invocation of a subgroup: the shuffles below
  // run in uniform control flow.
  for (int64_t t = int64_t(gl_WorkGroupID.x) * int64_t(gl_NumSubgroups) + int64_t(gl_SubgroupID); t < tiles; t += step) {
    int64_t tn = t % tilesN, rest = t / tilesN;
    int64_t tm = rest % tilesM, z = rest / tilesM;
    int64_t rem = z, ao = g.a.offset, bo = g.b.offset, oo = g.o.offset;
    for (int d = nd - 3; d >= 0; d--) {
      int64_t c = rem % g.o.shape[d];
      rem /= g.o.shape[d];
      ao += c * g.a.strides[d];
      bo += c * g.b.strides[d];
      oo += c * g.o.strides[d];
    }
    int64_t row0 = tm * RM, col = tn * S + lane;
    float acc[RM];
    [[unroll]] for (int i = 0; i < RM; i++) acc[i] = 0.0;
    for (int64_t k0 = 0; k0 < K; k0 += S) {
      float av[RM];
      int64_t gk = k0 + lane;
      [[unroll]] for (int i = 0; i < RM; i++) {
        int64_t gm = row0 + i;
        av[i] = (gm < M && gk < K) ? loadF(g.a.addr, DT, ao + gm * ars + gk * acs) : 0.0;
      }
      uint kn = uint(min(S, K - k0));
      for (uint kk = 0u; kk < kn; kk++) {
        float bv = col < N ? loadF(g.b.addr, DT, bo + (k0 + int64_t(kk)) * brs + col * bcs) : 0.0;
        [[unroll]] for (int i = 0; i < RM; i++) acc[i] += subgroupShuffle(av[i], kk) * bv;
      }
    }
    if (col < N) {
      [[unroll]] for (int i = 0; i < RM; i++) {
        int64_t gm = row0 + i;
        if (gm < M) storeF(g.o.addr, DT, oo + gm * ors + col * ocs, acc[i]);
      }
    }
  }
}

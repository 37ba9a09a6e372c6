// Tiled GEMM shared by matmul.comp (float accumulation), matmul_f64.comp
// (double) and matmul_int.comp (int64). The including file defines ACC (the
// accumulator type), LOAD(addr, e) and STORE(addr, e, v) before including.
//
// Each workgroup of 16×16 threads computes 64×64 tiles of the matrices of
// the batch (a grid-stride loop over tiles and batch), each thread a 4×4
// block (rows ty + 16·i, columns tx + 16·j), stepping through K 16 at a
// time through shared memory. Every output sums
// its K products in order, so results never depend on the launch.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 16, local_size_y = 16) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View o; View a; View b;
  int64_t M; int64_t N; int64_t K; int64_t batch;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

const int BM = 64;
const int BN = 64;
const int BK = 16;

shared ACC As[BK][BM + 1];
shared ACC Bs[BK][BN + 1];

void main() {
  ArgsRef g = pc.args;
  int64_t M = g.M, N = g.N, K = g.K;
  int nd = int(g.o.rank);
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int tid = ty * 16 + tx;
  int64_t ars = g.a.strides[nd - 2], acs = g.a.strides[nd - 1];
  int64_t brs = g.b.strides[nd - 2], bcs = g.b.strides[nd - 1];
  int64_t ors = g.o.strides[nd - 2], ocs = g.o.strides[nd - 1];
  int64_t tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
  // Grid-stride over tiles and batch, so that launches stay within the
  // device's workgroup-count limits however large the product.
  for (int64_t z = int64_t(gl_WorkGroupID.z); z < g.batch; z += int64_t(gl_NumWorkGroups.z))
  for (int64_t ty0 = int64_t(gl_WorkGroupID.y); ty0 < tilesM; ty0 += int64_t(gl_NumWorkGroups.y))
  for (int64_t tx0 = int64_t(gl_WorkGroupID.x); tx0 < tilesN; tx0 += int64_t(gl_NumWorkGroups.x)) {
    int64_t row0 = ty0 * BM, col0 = tx0 * BN;
    int64_t rem = z, ao = g.a.offset, bo = g.b.offset, oo = g.o.offset;
    for (int d = nd - 3; d >= 0; d--) {
      int64_t c = rem % g.o.shape[d];
      rem /= g.o.shape[d];
      ao += c * g.a.strides[d];
      bo += c * g.b.strides[d];
      oo += c * g.o.strides[d];
    }
    ACC acc[4][4];
    [[unroll]] for (int i = 0; i < 4; i++)
      [[unroll]] for (int j = 0; j < 4; j++) acc[i][j] = ACC(0);
    for (int64_t k0 = 0; k0 < K; k0 += BK) {
      // A tile: 64 rows × 16 k; thread loads k = tid % 16, rows tid / 16 + 16·r.
      [[unroll]] for (int r = 0; r < 4; r++) {
        int lk = tid % BK, lm = tid / BK + 16 * r;
        int64_t gm = row0 + lm, gk = k0 + lk;
        As[lk][lm] = (gm < M && gk < K) ? LOAD(g.a.addr, ao + gm * ars + gk * acs) : ACC(0);
      }
      // B tile: 16 k × 64 columns; thread loads column tid % 64, k tid / 64 + 4·r.
      [[unroll]] for (int r = 0; r < 4; r++) {
        int ln = tid % BN, lk = tid / BN + 4 * r;
        int64_t gn = col0 + ln, gk = k0 + lk;
        Bs[lk][ln] = (gn < N && gk < K) ? LOAD(g.b.addr, bo + gk * brs + gn * bcs) : ACC(0);
      }
      barrier();
      int kn = int(min(int64_t(BK), K - k0));
      for (int k = 0; k < kn; k++) {
        ACC av[4], bv[4];
        [[unroll]] for (int i = 0; i < 4; i++) av[i] = As[k][ty + 16 * i];
        [[unroll]] for (int j = 0; j < 4; j++) bv[j] = Bs[k][tx + 16 * j];
        [[unroll]] for (int i = 0; i < 4; i++)
          [[unroll]] for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];
      }
      barrier();
    }
    [[unroll]] for (int i = 0; i < 4; i++) {
      int64_t gm = row0 + ty + 16 * i;
      if (gm >= M) continue;
      [[unroll]] for (int j = 0; j < 4; j++) {
        int64_t gn = col0 + tx + 16 * j;
        if (gn < N) STORE(g.o.addr, oo + gm * ors + gn * ocs, acc[i][j]);
      }
    }
  }
}

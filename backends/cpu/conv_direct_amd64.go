//go:build !purego

package cpu

// convDirectUsable: the direct convolution's AVX2 kernels run on this CPU.
var convDirectUsable = hasAVX2

// convDirectKernels: the direct convolution (and with it the tap path,
// useConvTaps) is chosen here: on AVX2 machines, and on those whose AVX-512
// runs at AVX2's FMA rate (avx512HalfWidth). On a Zen 4, ResNet-18's and
// the MNIST CNN's convolutions ran 0.82-2.9x the GEMM path's speed on
// these paths (the weight gradients 1.4-2.9x; BenchmarkResNetConvs,
// paths gemm and new). Machines with full-width AVX-512 keep their GEMM
// and dot-tile paths (not measured against these: no such machine was at
// hand); tests set convDirectForce to run the direct path there too.
var convDirectKernels = convDirectUsable && (!hasAVX512 || avx512HalfWidth)

// convTile6x16AVX2 computes a 6×16 tile of a direct convolution's output
// (conv_direct_amd64.s): for i < 6 and j < 16,
// y[i·ldy + j] (= 0 first, or as it is with accum) += Σ_p a[6p + i] · x[off[p]/4 + j]
// over p < k in order, one fused multiply-add each, where off holds byte
// offsets. All 16 columns of all 6 rows are written.
//
//go:noescape
func convTile6x16AVX2(k int, a *float32, x *float32, off *int, y *float32, ldy int, accum bool)

// convTile4x24AVX2 is convTile6x16AVX2 for a 4×24 tile (a[4p + i]): no
// rows wasted on output channel counts that are multiples of 4 but not 6.
//
//go:noescape
func convTile4x24AVX2(k int, a *float32, x *float32, off *int, y *float32, ldy int, accum bool)

// convDot3x4AVX2 computes the dot products of three rows a_i and four
// rows b_j over ns samples of n floats each (n a multiple of 8), the
// samples sa and sb elements apart (conv_direct_amd64.s): in 8 lanes
// acc_m[l] = Σ_s Σ_t a_i[s·sa + 8t + l] · b_j[s·sb + 8t + l] (m = 3j + i),
// one fused multiply-add each in order of s, then t, and then
// sums[m] = ((acc_m[0] + acc_m[1]) + (acc_m[2] + acc_m[3])) +
// ((acc_m[4] + acc_m[5]) + (acc_m[6] + acc_m[7])).
//
//go:noescape
func convDot3x4AVX2(n, ns, sa, sb int, a0, a1, a2, b0, b1, b2, b3 *float32, sums *[12]float32)

// copyRowsAVX2 copies rows rows of n ≥ 8 floats from src (rows srcStride
// apart) to dst (rows dstStride apart), 8 at a time, the last 8 of a row
// overlapping the ones before (conv_direct_amd64.s). The rows must not
// overlap.
//
//go:noescape
func copyRowsAVX2(dst *float32, dstStride int, src *float32, srcStride int, rows, n int)

//go:build !purego

package cpu

// The sigmoid, SiLU and exp kernels in float32 with sixteen lanes an
// iteration (asm/gen/transcendental_act32.go's act32PairKernelsAVX2): two
// blocks of eight interleaved, each block one latency-bound dependent
// chain, the pair filling the core. Each equals the template's eight-lane
// kernel bit for bit: the pairs kernel does the blocks of sixteen whose
// inputs it covers, the eight-lane one the rest (pairedF32,
// pairedGradF32).
var (
	sigmoidF32AVX2Paired     = pairedF32(16, sigmoidF32AVX2Pairs, sigmoidF32AVX2)
	siluF32AVX2Paired        = pairedF32(16, siluF32AVX2Pairs, siluF32AVX2)
	sigmoidGradF32AVX2Paired = pairedGradF32(16, sigmoidGradF32AVX2Pairs, sigmoidGradF32AVX2)
	expGradF32AVX2Paired     = pairedGradF32(16, expGradF32AVX2Pairs, expGradF32AVX2)
	tanhGradF32AVX2Paired    = pairedGradF32(16, tanhGradF32AVX2Pairs, tanhGradF32AVX2)
)

// The AVX-512 float32 kernels (asm/gen/transcendental_avx512f32.go) with
// thirty-two lanes an iteration, two zmm vectors interleaved, and the
// template's kernel (one vector an iteration, with the fix-up path and
// the masked tail) for the blocks with special lanes and the last n mod
// 32: the same bits. SiLU's backward counts x < -84.5 among the special
// lanes, and a huge finite g not (asm/gen/transcendental_silu32.go).
var (
	sigmoidF32AVX512Paired     = pairedF32(32, sigmoidF32AVX512Pairs, sigmoidF32AVX512)
	siluF32AVX512Paired        = pairedF32(32, siluF32AVX512Pairs, siluF32AVX512)
	geluF32AVX512Paired        = pairedF32(32, geluF32AVX512Pairs, geluF32AVX512)
	sigmoidGradF32AVX512Paired = pairedGradF32(32, sigmoidGradF32AVX512Pairs, sigmoidGradF32AVX512)
	tanhGradF32AVX512Paired    = pairedGradF32(32, tanhGradF32AVX512Pairs, tanhGradF32AVX512)
	geluGradF32AVX512Paired    = pairedGradF32(32, geluGradF32AVX512Pairs, geluGradF32AVX512)
	siluGradF32AVX512Paired    = pairedGradF32(32, siluGradF32AVX512Pairs, siluGradF32AVX512)
)

// geluF32AVX512Table is GELU's AVX-512 forward kernel: the table of
// polynomials (gelu_table.go) where |x| ≤ 3 and the erfc-based body
// (within 1.34 ulp everywhere) in the other finite lanes, thirty-two lanes
// an iteration, and geluF32AVX512Paired on the blocks of 32 with ±Inf or
// NaN and the last n mod 32, which gives the table's result in the lanes
// with |x| ≤ 3 too: each element's result depends on its value alone.
// On 16M standard normal values, one Zen 4 core: 1.56 Gelem/s, against
// 1.11 for geluF32AVX512Paired alone (BenchmarkActivation, interleaved).
var geluF32AVX512Table = pairedF32(32, geluTableF32AVX512Pairs, geluF32AVX512Paired)

// geluGradF32AVX512Table is GELU's AVX-512 backward kernel: the table of
// polynomials of GELU's derivative (gelu_table.go) where |x| ≤ 3 and the
// erfc-based body in the other lanes, thirty-two lanes an iteration, and
// geluGradF32AVX512Paired on the blocks of 32 with x ±Inf or NaN or
// |grad| ≥ 2^64 and the last n mod 32, which gives the table's result in
// the lanes with |x| ≤ 3 and |grad| < 2^64 too: each element's result
// depends on its own x and grad alone.
var geluGradF32AVX512Table = pairedGradF32(32, geluGradTableF32AVX512Pairs, geluGradF32AVX512Paired)

func init() { geluTableInUse = hasTranscendental }

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
	sigmoidF32AVX2Paired     = pairedF32(sigmoidF32AVX2Pairs, sigmoidF32AVX2)
	siluF32AVX2Paired        = pairedF32(siluF32AVX2Pairs, siluF32AVX2)
	sigmoidGradF32AVX2Paired = pairedGradF32(sigmoidGradF32AVX2Pairs, sigmoidGradF32AVX2)
	expGradF32AVX2Paired     = pairedGradF32(expGradF32AVX2Pairs, expGradF32AVX2)
	tanhGradF32AVX2Paired    = pairedGradF32(tanhGradF32AVX2Pairs, tanhGradF32AVX2)
)

// Package cpu is Kiln's pure-Go CPU backend, always compiled in. It
// registers itself as the "cpu" device kind; package tensor reaches it
// through tensor.CPU(). The package example drives it directly: allocate
// buffers, describe them with backends.View, call kernels, Read the result.
//
// # Parallelism and determinism
//
// Kernels run on the calling goroutine plus a pool of Workers()-1
// persistent helper goroutines (pool.go); no goroutine is started per call.
// Work is cut into chunks whose boundaries depend only on the sizes
// involved, never on the number of workers, and every reduction combines
// its partial results in a fixed order, so results are bit-identical
// whatever SetWorkers says (the tests check 1, 2 and 3 workers). Helpers
// take work only when idle, so kernels called from several goroutines, or
// from inside another kernel, never wait on each other.
//
// # Numbers
//
// Element-wise ops agree exactly with the definitions in package backends
// (backends.UnaryOps, backends.BinaryOps), which compute in float64 and round
// once to the output dtype. Float32 kernels use float32 arithmetic only
// where that gives the same bits (+, -, ×, ÷, square root, min, max,
// comparisons); everything else is computed in float64 and rounded. Float16
// and BFloat16 are stored in two bytes and computed in float32 or float64.
// Integer arithmetic is exact in int64 for the ops with an integer form.
//
// Reductions accumulate floats in float64 and integers in int64; reduce.go
// documents the order of operations. Max and Min propagate NaN and order
// -0 below +0. Matmul multiplies float32 (and widened float16/bfloat16) in
// float32 and float64 in float64, summing in blocks of 256 along K in a
// fixed order; see gemm.go.
//
// # Matmul
//
// Matmul is a cache-blocked GEMM that packs panels of both operands
// (reading transposed or strided views in place) and runs a register-blocked
// micro-kernel written in portable Go (gemm_micro.go). The micro-kernels are
// chosen through variables (kernelF32, kernelF64), so faster ones, such as
// generated assembly, can be swapped in at init. The scalar Go kernels reach
// about 8.5 GFLOP/s per core on a Zen 5 core (17 on two); building with
// GOAMD64=v3 lets the compiler fuse multiply-adds, selects a wider kernel
// (gemm_amd64v3.go) and gives about a quarter more, with different but
// equally deterministic rounding.
//
// # What it does not do
//
// It has no SIMD or assembly kernels yet, does not fuse operations, and
// keeps no caching allocator: Alloc is a Go allocation and Free drops it.
package cpu

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
// float32 and float64 in float64, summing in blocks along K (their size set
// from the L1 cache) in a fixed order; see gemm.go. The assembly kernels
// fuse multiply-adds, so their results differ within rounding from the
// portable ones (and so between machines that choose differently), never
// with the number of workers.
//
// # Matmul
//
// Matmul is a cache-blocked GEMM (gemm.go) that packs panels of both
// operands (reading transposed or strided views in place; operands whose
// rows run along K are packed with an AVX 8×8 transpose), with block sizes
// from the caches that CPUID reports (blocking.go), and runs a
// register-blocked micro-kernel on them. On amd64 the micro-kernels are
// assembly generated with avo (asm/gen, `make asm`): 8×32 float32 and 14×16
// float64 with AVX-512, 6×16 and 6×8 with AVX2+FMA, chosen at run time from
// the CPU's features (kernels_select_amd64.go), writing edge tiles with
// masked stores. The portable Go kernels (gemm_micro.go) run elsewhere and
// with -tags purego. Each GEMM step is one parallel job (packing tasks, then
// tiles of C) whose step state and buffers come from pools, so a warm call
// allocates nothing. Vector × matrix and matrix × vector products skip the
// packing and use AVX2 axpy and dot kernels.
//
// # Element-wise kernels
//
// Float arithmetic (+, -, ×, ÷) over contiguous views, or a contiguous view
// and a scalar, runs in large parallel chunks (ew_fast.go) with AVX2
// kernels that write outputs larger than the caches with non-temporal
// stores (ew_amd64.go); strided and broadcast rows of the general driver
// use the same kernels, as do float32 relu, neg, abs and square. The
// results are the same bits as the Go loops.
//
// # Threads
//
// New(0) and SetWorkers(0) use KILN_CPU_THREADS when it holds a positive
// number, else GOMAXPROCS.
//
// # What it does not do
//
// It does not fuse operations (bias + activation, softmax) and keeps no
// caching allocator: Alloc is a Go allocation and Free drops it.
// Convolutions reach it as Im2Col/Col2Im plus Matmul; there is no direct
// convolution kernel yet.
package cpu

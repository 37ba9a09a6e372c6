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
// The exception is the transcendental activations on Float32, Float16 and
// BFloat16 (exp, log, tanh, erf, sigmoid, SiLU, GELU and its tanh form, and
// their backward g·f'(x)), which have their own kernels (transcendental.go),
// all within 2 ulp of the exact value (the documented bound, which the
// tests enforce). Most compute in float64 with approximations far more
// accurate than float32 and round once: within about 0.52 ulp, so within
// one ulp of the definition rounded, and usually equal to it. Some vector
// kernels compute in float32 instead, 1.1 to 2.4 times as fast, each with
// its maximum error measured over every float32 input (exp and tanh
// forward; on AVX2 also GELU, sigmoid, GELU-tanh's and SiLU's forward,
// exp's and tanh's backward: 0.94 to 1.92 ulp; log's forward: 0.78 ulp;
// on AVX-512 GELU, sigmoid, SiLU's forward and tanh's backward, with the
// AVX2 kernels' steps and bits, but for GELU's forward and backward where
// |x| ≤ 3: there from tables of polynomials, gelu_table.go, within 1.39
// and 0.94 ulp).
// Float64 keeps the definitions.
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
// rows run along K are packed with an AVX 8×8 transpose; with AVX-512 a
// float32 A stored by rows, or the transpose of one (a weight gradient's
// gᵀ), is not packed but read in place by an 8×32 kernel where the
// product has at most 512 columns), with block sizes
// from the caches that CPUID reports (blocking.go), and runs a
// register-blocked micro-kernel on them. On amd64 the micro-kernels are
// assembly generated with avo (asm/gen, `make asm`): 8×32 float32 and 14×16
// float64 with AVX-512, 6×16 and 6×8 with AVX2+FMA, chosen at run time from
// the CPU's features (kernels_select_amd64.go), writing edge tiles with
// masked stores. With AVX2 the panels of 6 rows of A and 16 columns of B
// are packed by assembly loops (pack_amd64.s) and K is blocked to fill
// half of L1 (AVX-512 blocking is unchanged), and a Linear layer's bias is
// added by the micro-kernel in registers on the last K-block. The portable Go kernels (gemm_micro.go) run elsewhere and
// with -tags purego. Each GEMM step is one parallel job (packing tasks, then
// tiles of C) whose step state and buffers come from pools, so a warm call
// allocates nothing. Vector × matrix and matrix × vector products skip the
// packing and use AVX2 axpy and dot kernels. Bfloat16 products (autocast,
// gemm_bf16.go) run VDPBF16PS kernels where the CPU has AVX-512 BF16; with
// only AVX2 and FMA, the float32 kernel multiplies panels rounded to
// bfloat16 precision (the same bits as the portable bfloat16 kernel for
// the same K-blocks), at about the float32 GEMM's speed.
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
// The transcendental activations run AVX-512 kernels where the CPU has
// AVX-512 (F and DQ) and BMI2: sixteen floats an iteration, evaluated in
// float64 lanes (asm/gen/transcendental.go), the backward fused into one
// pass over x and g. CPUs with AVX2 and FMA but no AVX-512 run the same
// algorithms eight floats an iteration in four-double YMM lanes
// (asm/gen/transcendental_avx2.go), with the same error bounds, but for
// the kernels computed in float32, eight lanes a vector (sixteen an
// iteration for GELU's, GELU-tanh's, sigmoid's and SiLU's forward, and
// sigmoid's, exp's and tanh's backward). Elsewhere
// and with -tags purego, Go loops over the math package, as accurate and
// about as fast as the definitions.
//
// # Fused kernels
//
// Besides the primitives it implements the optional fused interfaces of
// package backends that package tensor looks for: max pooling,
// convolution, cross-entropy and Adam (fused_*.go), and for transformers
// (backends/fusion_transformer.go) scaled dot-product attention
// (attention.go: FlashAttention-style tiles of 64 queries by 64 keys with
// an online softmax, operands packed once per task for the GEMM
// micro-kernels — with AVX-512 or AVX2 the probability tiles, Q, dO, and V
// or K where they fill whole panels multiplied where they lie, by kernels
// that read A by rows or by columns (8×32 generated with the GEMM's, 6×16
// in attention_gemm_amd64.s), and the diagonal tiles' products trimmed to
// what the causal mask leaves —, causal tiles skipped,
// the backward pass recomputing each tile from the saved log-sum-exp), layer and RMS normalisation (norm.go),
// embedding lookups and gradients by whole rows (embedding.go), a
// multi-tensor Adam step over every parameter in one parallel job
// (adam_multi.go; for float32 parameters, whose scalars tensor rounds to
// float32 values, an AVX2 kernel that runs the whole update in float32 and
// still gives the composed ops' bits, fused_adam_amd64.go) and a matrix
// product with a bias added to each tile as
// the GEMM finishes it (linear.go). Their float32 row passes (exponential,
// maximum and dS of attention; statistics, output and gradients of a
// normalised row) are hand-written AVX-512 (attention_amd64.s,
// norm_amd64.s) where the CPU has it, the same steps in AVX2 where it has
// only that (attention_avx2_amd64.s, norm_avx2_amd64.s), Go loops
// elsewhere and with -tags purego.
// MatmulBiasAct (linear.go) follows the product with a bias by an activation: each
// block of rows of the result goes through the activation's row kernel, the
// one Unary runs, as soon as the block's last tile is complete.
//
// Convolutions unfold a chunk of samples and multiply (fused_conv.go); on
// CPUs with AVX2 but no AVX-512, float32 layers whose channel counts fill
// the tiles run a direct kernel instead (conv_direct.go; strided ones
// through phase planes for the forward pass and the weight gradient; on
// small maps the input gradient in row passes that skip the padding's
// zero rows, conv_direct_rows.go), and the 2×2 max pooling has an AVX2
// kernel (fused_pool_amd64.s). Conv2dBias adds a layer's bias as the
// direct path copies each output plane out (in one pass after on the
// other paths). Like every kernel they do not depend on
// the number of workers:
// partial sums (the parameters' gradients of a norm, attention's dQ when
// the keys of one problem are split into groups) are cut by the sizes and
// added in order.
//
// # Threads
//
// New(0) and SetWorkers(0) use KILN_CPU_THREADS when it holds a positive
// number, else GOMAXPROCS. A kernel uses at most min(GOMAXPROCS, the
// cgroup CPU quota) workers, whatever the Backend has. Work is cut into
// chunks by size alone and claimed from a shared counter, so a worker the
// operating system descheduled holds up only the chunk it is running; idle
// workers spin for a bounded, measured time and then sleep; a sleeping
// worker is woken only for a job at least twice as long as a wake-up has
// lately taken (beside a busy process, a helper woken for a short job
// arrives after the work is gone); a helper that the operating system
// puts on its caller's core while another core is free of other
// processes leaves the job to the caller (it would only take turns with
// it); and each call
// site measures whether sharing pays (pool.go, sched_tuner.go) and runs
// serially while it does not, so that on a crowded machine a 2-worker
// Backend is not slower than a 1-worker one. Results never depend on the
// number of workers or on that choice.
//
// # What it does not do
//
// It does not fuse arbitrary chains of operations (bias + activation, a
// softmax outside attention and cross-entropy) and keeps no caching
// allocator: Alloc is a Go allocation and Free drops it.
package cpu

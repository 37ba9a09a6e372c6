// Package fusion is a decorator backend that fuses chains of element-wise
// operations, as Burn's Fusion<B> does: wrapped around any
// backends.Backend, it records element-wise kernels (Unary, UnaryGrad,
// Binary, BinaryScalar, Where, Fill, Copy), and reductions of what they
// compute (see Reduction tails below), instead of running them, and at
// the next sync point runs the whole group as one tiled pass: the group's
// index space is cut into cache-sized tiles, and for each tile every
// recorded op runs on that tile (the wrapped backend's own kernels on
// sub-views restricted to the tile, or, for runs of float32 arithmetic,
// one compiled register program), tiles in parallel. A buffer that a
// group writes and that is freed before the group runs (an intermediate
// of a composed GELU, say) is never written to memory: each tile keeps it
// in a small scratch buffer, which is where the speed comes from — an
// eight-op chain over a large tensor reads its input and writes its output
// once instead of eight times.
//
// Sync points are Read and Sync, a Write to a buffer the group touches, a
// kernel that is not element-wise (nor a reduction tail) and touches a
// buffer of the group, an op that touches a reduction tail's result, any
// optional fused kernel (convolution, attention, Adam, …), an op whose
// size or layout does not match the group's, a recorded op that would read
// a buffer of the group through a different view than the one it was
// written through (that read would cross tiles), and a limit of MaxOps ops
// per group.
//
// Results equal the unfused ones bit for bit: each element goes through
// the same kernels of the wrapped backend in the same order, only over
// smaller ranges, and the wrapped backends' element-wise kernels do not
// depend on how a range is split (the CPU's results do not depend on its
// thread count for the same reason). The register programs of segments
// (below) perform each op's IEEE operation as the CPU's kernel does, one
// rounding per op, with no contraction into fused multiply-adds. There is
// no reassociation.
//
// Reduction tails: a Reduce (Sum, Prod, Max or Min) of a Float32 or
// Float64 buffer that the pending group writes joins the group when it
// reduces trailing axes (every kept axis longer than one comes before
// every reduced axis longer than one) or all axes, its input and output
// are contiguous, and the wrapped backend is the CPU's (it serves
// TileKernels and TileRunner). Those are the reductions of softmax
// denominators, norms' statistics and loss means, and the ones whose
// elements are contiguous in the group's index space: each output's
// reduced elements are one run of consecutive elements, so a tile holds
// whole runs or a piece of one, and the group's tiles are cut at the runs'
// boundaries (dimensions are not merged across the boundary between kept
// and reduced ones). The reduction runs inside the pass, after the ops
// recorded before it, on the tile's values (from its scratch where the
// input is kept in tiles), so that an intermediate that only feeds it —
// the square in sum((x−y)²) — is never written to memory. Its result is
// complete only after the pass: an op that then touches it runs the group
// first, except element-wise ops over fewer elements than the group that
// touch only reductions' results or buffers the group does not touch (the
// division of a mean), which wait in the group's epilogue and run after
// it, so the intermediates a program frees after taking a mean are still
// kept in tiles (Stats.Reductions, Stats.Epilogue). A reduction over
// leading axes (a bias gradient), of another dtype, of a buffer the group
// only reads, over an empty axis or on another wrapped backend (the strict
// backend, CUDA) is forwarded unfused after the group, as before.
//
// Reduction tails keep the CPU backend's order of operations
// (backends/cpu/reduce.go), so their results are its bits, on any tile
// size and thread count: each output's run (or, for fewer than 64 outputs
// of more than 32768 elements each, each 32768-element segment of it) is
// reduced in order by one worker — a run that crosses tiles is carried
// from one tile to the next, the tiles of a run being a unit that one
// worker runs in order — with the CPU kernel's accumulators: for a float32
// Sum on CPUs with AVX2 and FMA3, sixteen float64 lanes (element i of the
// run to lane i mod 16) over the longest prefix of whole groups of
// sixteen, added as ((l0+l4)+(l8+l12)) per column then (c0+c2)+(c1+c3);
// then, as for every other Sum and Prod, four interleaved float64
// accumulators over whole groups of four and the first for the rest,
// combined as (a0∘a1)∘(a2∘a3); segments' results are combined in segment
// order. Max and Min propagate NaN and order −0 below +0, which makes them
// independent of order. No reduction is reassociated, so no difference
// needs bounding (TestReductionTailsMatchCPU checks the bits).
// BenchmarkFusionSumSquaredDiff measures sum((x−y)²) over 16M float32
// values fused against unfused.
//
// Scheduling: on a wrapped backend with a parallel runtime (TileRunner;
// the CPU's pool, backends/cpu ParallelTiles) a group's tiles (or units)
// run on it in chunks of about 64 Ki elements, so fused groups share the
// CPU backend's helpers and its tuner (which runs a job serially where
// sharing does not pay) and its dynamic chunks cope with a core the
// operating system takes away; elsewhere they run on goroutines of this
// package.
//
// Use it through package tensor: tensor.CPU().Fused() or
// tensor.ParseDevice("cpu+fused").
//
//	fb := fusion.New(cpu.New(0))
//	buf, _ := fb.Alloc(backends.Float32, 4)
//	x := backends.Contiguous(buf, backends.Float32, 4)
//	fb.Fill(x, 2)                                 // recorded
//	fb.BinaryScalar(backends.Mul, x, x, 3, false) // recorded
//	_ = fb.Sync()                                 // runs both as one pass
//
// Buffers are allocated lazily: Alloc returns a handle, and the wrapped
// backend's memory is taken when the buffer is first used outside a
// group's tiles, so an intermediate kept in tiles never gets any (a
// failure to allocate is then the sticky error of the next Read or Sync,
// not Alloc's). On a CPU wrapped backend the handles expose HostBytes, so
// package tensor still reads results in place.
//
// Performance: a group is planned once per structure (its ops, their
// parameters and views, which buffers they share and which are freed) and
// the plan kept, so a training loop that records the same groups every
// step only binds its buffers (Stats.Compiled counts the plans made). On
// a wrapped backend that implements TileKernels (the CPU does), each
// float32 op of a group whose views are contiguous in every tile (or, for
// Binary, a broadcast element) runs straight through the backend's vector
// kernels on the tile's slices, with no per-call checks, allocation or
// thread hand-off. Runs of consecutive arithmetic ops (add, subtract,
// multiply, divide by tensors, broadcast elements or scalars, float32 or
// through float64; negate, abs, square, ReLU; copy) go further on CPUs
// with AVX-512 or AVX2: they are compiled into one flat program of register
// instructions (a segment) and run over each tile 128 elements at a time,
// the value one op hands the next kept in vector registers; only values
// read again later are stored, to the tile's scratch. A segment also
// prefetches the next tile's inputs (and, for outputs below 32 MiB, its
// output lines for writing), so that memory is read while the tile's other
// steps, such as a tanh kernel, compute. Each segment instruction is the
// IEEE operation the CPU's kernel for that op performs with the same first
// operand (which NaN comes out when both are NaN), so the bits do not
// change (Stats.SegmentOps counts these ops). Tiles of DefaultTile
// elements spread over GOMAXPROCS goroutines (at least 64 Ki elements a
// goroutine), in runs of consecutive tiles, and a group's large outputs
// are written with non-temporal stores. Any other op (other dtypes,
// strided views, Where, Fill, predicates, ops the backend computes in
// float64) runs the wrapped backend's method on the tile's views, with
// that method's per-call cost (a few microseconds on the CPU).
// BenchmarkFusionGeluTanh and BenchmarkFusionSwish measure fused against
// unfused and against the backend's hand-written kernels: a fused group
// saves the memory traffic of its intermediates and, in segments, most of
// their loads and stores, not their arithmetic; a composed GELU also pays
// for the CPU's tanh kernel, which costs about as much as its whole GELU
// kernel.
//
// On a wrapped backend that implements backends.GroupCompiler (the CUDA
// backend), a group without reduction tails is handed over as one
// backends.ElementwiseGroup and runs as one kernel compiled for its
// structure, its intermediates in registers (Stats.Kernels counts them);
// when the backend refuses a group, it runs tile by tile.
//
// What it does not do: fuse reductions other than the tails above (a sum
// over leading axes runs after the group, reading its input from memory),
// fuse the ops that read a reduction's result back at the group's size (a
// softmax's division runs in the next group), or change errors' timing beyond the stream
// semantics of backends.Backend (a refused view is reported at the next
// sync; a group may have run its other tiles' work by then). The wrapped
// backend must implement every optional fused interface this package
// forwards; a call the wrapped backend lacks is recorded as a sticky
// error, as the strict backend does.
package fusion

// Package fusion is a decorator backend that fuses chains of element-wise
// operations, as Burn's Fusion<B> does: wrapped around any
// backends.Backend, it records element-wise kernels (Unary, UnaryGrad,
// Binary, BinaryScalar, Where, Fill, Copy) instead of running them, and at
// the next sync point runs the whole group as one tiled pass: the group's
// index space is cut into cache-sized tiles, and for each tile every
// recorded op runs on that tile (the wrapped backend's own kernels on
// sub-views restricted to the tile), tiles in parallel. A buffer that a
// group writes and that is freed before the group runs (an intermediate
// of a composed GELU, say) is never written to memory: each tile keeps it
// in a small scratch buffer, which is where the speed comes from — an
// eight-op chain over a large tensor reads its input and writes its output
// once instead of eight times.
//
// Sync points are Read and Sync, a Write to a buffer the group touches, a
// kernel that is not element-wise and touches a buffer of the group, any
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
// thread count for the same reason). There is no reassociation.
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
// Performance: a wrapped backend that implements TileKernels (the CPU
// does) runs each float32 op of a group whose views are contiguous in
// every tile (or, for Binary, a broadcast element) straight through its
// vector kernels on the tile's slices: no per-call checks, allocation or
// thread hand-off, the tiles spread over GOMAXPROCS goroutines, and the
// group's large outputs written with non-temporal stores. The results
// are bit for bit the wrapped backend's own (the same kernels, and for a
// scalar not exact in float32 the same float64 rounding). Any other op
// (other dtypes, strided views, Where, Fill, predicates, ops the backend
// computes in float64) runs the wrapped backend's method on the tile's
// views, with that method's per-call cost (a few microseconds on the
// CPU). Stats.TileKernelOps counts the ops of the first kind.
// BenchmarkFusionGeluTanh and BenchmarkFusionSwish measure fused against
// unfused and against the backend's hand-written kernels: a fused group
// saves the memory traffic of its intermediates, not their arithmetic,
// so it stays slower than a hand-written one-pass kernel by about the
// arithmetic of its ops.
//
// What it does not do: fuse reductions (a sum over the group's output runs
// after the group, reading it from memory), compile kernels (on CUDA the
// group would run as one launch per op per tile, slower than unfused:
// wrap the CPU only), or change errors' timing beyond the stream
// semantics of backends.Backend (a refused view is reported at the next
// sync; a group may have run its other tiles' work by then). The wrapped
// backend must implement every optional fused interface this package
// forwards; a call the wrapped backend lacks is recorded as a sticky
// error, as the strict backend does.
package fusion

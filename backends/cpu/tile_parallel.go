package cpu

// ParallelTiles runs fn over [0, n) in chunks of grain indices (the last
// may be shorter) on the backend's worker pool (pool.go), the runtime its
// own kernels use: the calling goroutine runs chunks too, idle helpers
// claim the others one at a time from a shared counter, so a helper that
// the operating system deschedules holds up at most the chunk it is in,
// and a tuner runs the call serially where sharing measures slower (a job
// too small for a hand-off, helpers that do not get a core). At most
// min(GOMAXPROCS, the CPU quota) goroutines run chunks at once.
//
// It is the entry point for a decorator that runs its own tiles on this
// backend's buffers, such as package fusion's fused groups: fn is called
// with disjoint ranges that cover [0, n) exactly once, possibly on several
// goroutines at once, and chunk boundaries depend only on n and grain,
// never on the number of workers, so a caller that combines per-chunk
// results in chunk order gets the same answer on any thread count. It
// returns when every chunk has run. A panic in fn is re-raised on the
// caller once the chunks already running have finished; chunks not yet
// started are skipped. n ≤ 0 does nothing; grain below 1 is taken as 1.
func (b *Backend) ParallelTiles(n, grain int, fn func(lo, hi int)) {
	b.parallelAt(codeOf(fn), n, grain, fn)
}

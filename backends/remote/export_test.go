package remote

// WireCounts returns the calls queued, frames and bytes sent and the waits
// (round trips) of c so far, for the benchmarks.
func WireCounts(c *Backend) (calls, frames, bytes, waits int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.frames, c.sentBytes, c.waits.Load()
}

package fusion

// runCompiled runs the pending group as one kernel that the inner backend
// compiles for it, where the inner backend can, and reports whether it
// did; otherwise the group runs tile by tile (execute). Called with b.mu
// held. No inner backend compiles groups yet.
func (b *Backend) runCompiled() bool { return false }

package tensor

// HostReads returns how many times tensor data on d has been copied to the
// host (host reads and holds), so the ops table can tell an op that stays
// on its device from one that computes on the host.
func HostReads(d Device) int64 { return d.st.hostReads.Load() }

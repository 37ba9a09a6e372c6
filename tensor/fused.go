package tensor

import (
	"sync"

	"github.com/kiln-ml/kiln/backends/fusion"
)

var (
	fusedMu sync.Mutex
	fusedOf = map[*deviceState]*deviceState{} // plain device → its fused twin
	isFused = map[*deviceState]bool{}
)

// Fused returns d's fused twin: the same physical device behind a
// fusion.Backend, which records element-wise operations and runs each
// chain of them as one tiled pass at the next sync point (a host read,
// Sync, an op that is not element-wise). Results are bit for bit those of
// d; autodiff, NoGrad and autocast views carry over. The twin is a device
// of its own (named d's name plus "+fused", as ParseDevice accepts it):
// tensors move between it and d with To like between any two devices. It
// returns d unchanged when d is already fused.
func (d Device) Fused() Device {
	d.check("Device.Fused")
	fusedMu.Lock()
	defer fusedMu.Unlock()
	if isFused[d.st] {
		return d
	}
	st, ok := fusedOf[d.st]
	if !ok {
		fb := fusion.New(d.st.backend)
		st = &deviceState{name: d.st.name + "+fused", info: fb.Info(), backend: fb}
		st.budget.Store(d.st.budget.Load())
		fusedOf[d.st], isFused[st] = st, true
	}
	d.st = st
	return d
}

// IsFused reports whether d is a fused device (see Fused).
func (d Device) IsFused() bool {
	d.check("Device.IsFused")
	fusedMu.Lock()
	defer fusedMu.Unlock()
	return isFused[d.st]
}

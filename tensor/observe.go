package tensor

import (
	"sync"
	"sync/atomic"

	"github.com/kiln-ml/kiln/autodiff"
)

// observers holds the callbacks of the ObserveNodes calls in progress, by
// goroutine, innermost last.
var observers struct {
	active atomic.Int64 // ObserveNodes calls in progress, any goroutine
	mu     sync.Mutex
	by     map[uint64][]func(*autodiff.Node)
}

// ObserveNodes runs fn and calls observe with each graph node that fn's
// goroutine records while it runs, in recording order, from inside the op
// that records it (so a stack trace taken in observe shows the code that
// called the op). Only ops that record a node are seen: on an autodiff
// device, ops with an input that requires gradients. Nodes recorded by
// other goroutines are not reported. Calls nest; an inner call's observe
// and every outer one see the node. It is how viz traces a forward pass;
// observe must not call tensor ops. A panic in fn ends the observation
// and continues.
func ObserveNodes(fn func(), observe func(n *autodiff.Node)) {
	gid := goroutineKey()
	observers.mu.Lock()
	if observers.by == nil {
		observers.by = map[uint64][]func(*autodiff.Node){}
	}
	observers.by[gid] = append(observers.by[gid], observe)
	observers.mu.Unlock()
	observers.active.Add(1)
	defer func() {
		observers.mu.Lock()
		s := observers.by[gid]
		if len(s) <= 1 {
			delete(observers.by, gid)
		} else {
			observers.by[gid] = s[:len(s)-1]
		}
		observers.mu.Unlock()
		observers.active.Add(-1)
	}()
	fn()
}

// Observing reports whether an ObserveNodes call is in progress, on any
// goroutine. Code that fuses the work of several modules into one call
// (nn.Sequential's Conv2d then ReLU) runs them one at a time while it
// does, so that a tracer sees each module's ops in that module's frames.
func Observing() bool { return observers.active.Load() != 0 }

// notifyObservers reports n to the ObserveNodes calls of the calling
// goroutine; it costs one atomic load when there are none.
func notifyObservers(n *autodiff.Node) {
	if observers.active.Load() == 0 {
		return
	}
	gid := goroutineKey()
	observers.mu.Lock()
	fs := append([]func(*autodiff.Node){}, observers.by[gid]...)
	observers.mu.Unlock()
	for _, f := range fs {
		f(n)
	}
}

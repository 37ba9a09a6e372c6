package tensor

import (
	"sync"
	"sync/atomic"
)

// scopeFrame collects the tensors created inside one Scope call.
type scopeFrame struct {
	parent   *scopeFrame
	tensors  []*Tensor
	gid      uint64
	detached bool // a NoScope frame: tensors created under it belong to no scope
}

var scopes struct {
	active atomic.Int64 // number of open frames, any goroutine
	mu     sync.Mutex
	top    map[uint64]*scopeFrame // innermost open frame per goroutine
}

// registerInScope adds t to the calling goroutine's innermost scope, if it
// has one that collects tensors, and reports whether it did.
func registerInScope(t *Tensor) bool {
	if scopes.active.Load() == 0 {
		return false
	}
	gid := goroutineKey()
	scopes.mu.Lock()
	defer scopes.mu.Unlock()
	f := scopes.top[gid]
	if f != nil && !f.detached {
		f.tensors = append(f.tensors, t)
		t.scope = f
		return true
	}
	return false
}

// Scope runs fn and then releases every tensor that fn created on the
// calling goroutine, except those marked with Keep. It is how a training
// step keeps memory flat: everything the step allocates (activations,
// gradients, temporaries) is freed when the step ends.
//
// Tensors created by other goroutines (a data loader's workers, say) are
// not affected. Scopes nest; Keep moves a tensor to the enclosing scope. If
// fn panics, its tensors are released and the panic continues.
func Scope(fn func()) { runFrame(&scopeFrame{}, fn) }

// NoScope runs fn so that the tensors it creates belong to no Scope, even
// when called inside one: they live until released. Models use it for the
// tensors they own (parameters moved to another device, say), which must
// outlive the step that happened to create them. Scopes opened inside fn
// work as usual.
func NoScope(fn func()) { runFrame(&scopeFrame{detached: true}, fn) }

func runFrame(f *scopeFrame, fn func()) {
	gid := goroutineKey()
	f.gid = gid
	scopes.mu.Lock()
	if scopes.top == nil {
		scopes.top = map[uint64]*scopeFrame{}
	}
	f.parent = scopes.top[gid]
	scopes.top[gid] = f
	scopes.mu.Unlock()
	scopes.active.Add(1)
	defer func() {
		scopes.mu.Lock()
		if f.parent != nil {
			scopes.top[gid] = f.parent
		} else {
			delete(scopes.top, gid)
		}
		tensors := f.tensors
		f.tensors = nil
		scopes.mu.Unlock()
		scopes.active.Add(-1)
		for _, t := range tensors {
			if t.scope == f {
				t.Release()
			}
		}
	}()
	fn()
}

// ScopeResult runs fn like Scope and keeps the tensor it returns.
func ScopeResult(fn func() *Tensor) *Tensor {
	var out *Tensor
	Scope(func() { out = fn().Keep() })
	return out
}

// Keep exempts t from release by the innermost Scope that holds it: t moves
// to the enclosing scope, or, outside any, stays until released. It returns t.
func (t *Tensor) Keep() *Tensor {
	scopes.mu.Lock()
	defer scopes.mu.Unlock()
	f := t.scope
	if f == nil {
		return t
	}
	t.scope = f.parent
	if f.parent != nil && f.parent.detached {
		t.scope = nil
	} else if f.parent != nil {
		f.parent.tensors = append(f.parent.tensors, t)
	}
	if t.scope == nil { // out of every scope: the collector takes over
		t.dropWhenCollected()
	}
	return t
}

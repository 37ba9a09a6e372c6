package onnx

import (
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Naming the module that ran an op. While Export traces, it installs a
// module-scope function in package tensor (tensor.SetModuleScopeFunc)
// that reads the goroutine's call stack at every recorded op and keeps the
// methods of the model's module types on it, outermost first, with their
// program counters: the op's frame chain, stored as the node's Scope.
// Package nn's module tree (nn.Modules) gives every module's dotted path
// and type, so the chain resolves to a path by descending from the model:
// each frame's type is the unique module of that type below the current
// one; several modules of one type (the layers of an encoder) are told
// apart by the parameters the ops of the same call read (the run of ops
// recorded next to this one within the same method call, found by the
// frame's program counter moving forward). Nothing is installed outside
// Export, so tracing costs nothing otherwise.

// scopeFrame is one method of a module type on an op's call stack.
type scopeFrame struct {
	typ string // "pkgpath.Type"
	pc  uintptr
}

// scopeTracker collects the frame chains of one trace.
type scopeTracker struct {
	types   map[string]bool // the model's module types
	modules []scopeModule
	mu      sync.Mutex
	chains  map[string][]scopeFrame
}

// scopeModule is one module of the model.
type scopeModule struct {
	path string
	typ  string
}

// exportScopeMu lets one trace at a time install its scope function.
var exportScopeMu sync.Mutex

// withModuleScopes runs fn with a scope function installed that records
// each op's frame chain, and returns the tracker that resolves them (nil
// for a nil model).
func withModuleScopes(model any, fn func()) *scopeTracker {
	if model == nil {
		fn()
		return nil
	}
	st := &scopeTracker{types: map[string]bool{}, chains: map[string][]scopeFrame{}}
	for _, m := range nn.Modules(model) {
		typ := typeKey(reflect.TypeOf(m.Module))
		st.types[typ] = true
		st.modules = append(st.modules, scopeModule{m.Name, typ})
	}
	exportScopeMu.Lock()
	defer exportScopeMu.Unlock()
	tensor.SetModuleScopeFunc(st.scope)
	defer tensor.SetModuleScopeFunc(nil)
	fn()
	return st
}

// typeKey names a module type as the runtime names its methods' receiver.
func typeKey(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() + "." + t.Name()
}

// receiverType is the receiver type of the method named fn
// ("pkg/path.(*Type).Method" or "pkg/path.Type.Method", and closures in
// them), "" for a plain function.
func receiverType(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	pkg, rest := fn[:slash+1+dot], fn[slash+1+dot+1:]
	typ, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	typ = strings.TrimSuffix(strings.TrimPrefix(typ, "(*"), ")")
	if i := strings.IndexByte(typ, '['); i >= 0 {
		typ = typ[:i]
	}
	return pkg + "." + typ
}

// scope is the function installed in package tensor: it returns a key
// for the chain of module methods on the stack.
func (st *scopeTracker) scope() string {
	var pcs [128]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var chain []scopeFrame
	for {
		f, more := frames.Next()
		if typ := receiverType(f.Function); typ != "" && st.types[typ] {
			chain = append(chain, scopeFrame{typ, f.PC})
		}
		if !more {
			break
		}
	}
	var key strings.Builder
	for i := len(chain) - 1; i >= 0; i-- {
		key.WriteString(chain[i].typ)
		key.WriteByte('@')
		key.WriteString(strconv.FormatUint(uint64(chain[i].pc), 16))
		key.WriteByte(';')
	}
	k := key.String()
	st.mu.Lock()
	if _, ok := st.chains[k]; !ok {
		outer := make([]scopeFrame, len(chain))
		for i, f := range chain {
			outer[len(chain)-1-i] = f
		}
		st.chains[k] = outer
	}
	st.mu.Unlock()
	return k
}

// below reports whether path is strictly inside parent.
func below(parent, path string) bool {
	return path != parent && (parent == "" || strings.HasPrefix(path, parent+"."))
}

// path resolves node n's frame chain to the dotted path of the module
// that ran it; ok is false where the chain is ambiguous past some point
// (the path is then the deepest module it resolves to, with the
// candidates listed).
func (st *scopeTracker) path(n *autodiff.Node, order []*autodiff.Node, paramOf func(*autodiff.Node) string) string {
	chain := st.chains[n.Scope]
	cur := "" // the model
	for i, f := range chain {
		var cands []string
		depth := -1
		for _, m := range st.modules {
			if m.typ != f.typ || !below(cur, m.path) {
				continue
			}
			d := strings.Count(m.path, ".")
			switch {
			case depth < 0 || d < depth:
				cands, depth = []string{m.path}, d
			case d == depth:
				cands = append(cands, m.path)
			}
		}
		switch {
		case len(cands) == 1:
			cur = cands[0]
		case len(cands) > 1:
			pick := st.disambiguate(n, i, chain, cands, order, paramOf)
			if pick == "" {
				return fmt.Sprintf("%s (one of %s)", cur, strings.Join(cands, ", "))
			}
			cur = pick
		}
		// No module of the frame's type below cur: a helper method of
		// cur's own type (or of a type it converts itself to), or a
		// module reached outside the tree; stay.
	}
	return cur
}

// disambiguate picks, among modules cands of one type, the one whose
// method call at chain[i] recorded n: the ops recorded next to n whose
// chains share n's through frame i, with frame i's program counter moving
// forward (a call starts again from its method's first op), read the
// parameters of only one candidate.
func (st *scopeTracker) disambiguate(n *autodiff.Node, i int, chain []scopeFrame, cands []string, order []*autodiff.Node, paramOf func(*autodiff.Node) string) string {
	pos := sort.Search(len(order), func(k int) bool { return order[k].ID >= n.ID })
	same := func(m *autodiff.Node) (uintptr, bool) {
		c := st.chains[m.Scope]
		if len(c) <= i {
			return 0, false
		}
		for j := 0; j < i; j++ {
			if c[j] != chain[j] {
				return 0, false
			}
		}
		if c[i].typ != chain[i].typ {
			return 0, false
		}
		return c[i].pc, true
	}
	hits := map[string]bool{}
	look := func(m *autodiff.Node) {
		for _, in := range m.Inputs {
			name := paramOf(in)
			for _, c := range cands {
				if name != "" && strings.HasPrefix(name, c+".") {
					hits[c] = true
				}
			}
		}
	}
	look(n)
	pc := chain[i].pc
	for k := pos - 1; k >= 0; k-- { // back while the counter does not grow
		p, ok := same(order[k])
		if !ok || p > pc {
			break
		}
		pc = p
		look(order[k])
	}
	pc = chain[i].pc
	for k := pos + 1; k < len(order); k++ { // on while it does not shrink
		p, ok := same(order[k])
		if !ok || p < pc {
			break
		}
		pc = p
		look(order[k])
	}
	if len(hits) != 1 {
		return ""
	}
	for c := range hits {
		return c
	}
	return ""
}

// missingOp is an op without an ONNX translation.
type missingOp struct {
	node  *autodiff.Node
	label string // the op's name and, where the translation said, why ("pad (circular)")
}

// missingError lists the ops without a translation, each with the module
// path that ran it where the trace had a model: `op "cumprod" in module
// "encoder.layers.1.mlp" has no ONNX form`.
func (tr *tracer) missingError() error {
	var ops []string
	for op, n := range tr.missing {
		ops = append(ops, fmt.Sprintf("%s (%d)", op, n))
	}
	sort.Strings(ops)
	summary := "no ONNX translation for ops: " + strings.Join(ops, ", ")
	if tr.scopes == nil {
		return fmt.Errorf("%w: %s", ErrExport, summary)
	}
	sort.Slice(tr.order, func(i, j int) bool { return tr.order[i].ID < tr.order[j].ID })
	paramOf := func(in *autodiff.Node) string {
		if t, ok := tr.leaves[in]; ok {
			return tr.named[t]
		}
		return ""
	}
	seen := map[string]bool{}
	var where []string
	for _, m := range tr.unwritten {
		path := tr.scopes.path(m.node, tr.order, paramOf)
		msg := fmt.Sprintf("op %q in module %q has no ONNX form", m.label, path)
		if path == "" {
			msg = fmt.Sprintf("op %q in the model's own Forward has no ONNX form", m.label)
		}
		if !seen[msg] {
			seen[msg] = true
			where = append(where, msg)
		}
	}
	return fmt.Errorf("%w: %s (%s)", ErrExport, strings.Join(where, "; "), summary)
}

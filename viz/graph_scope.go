package viz

// Which module ran each op of a traced forward pass.
//
// Kiln's modules are plain structs, so there is no hook around a module's
// Forward. The tracer instead takes the call stack of every op as it is
// recorded and keeps the frames that are methods of the model's module
// types (nn.(*Linear).Forward, (*MyBlock).Forward, their closures and
// helpers). From those stacks it rebuilds the tree of module invocations:
// consecutive ops whose stacks pass through the same call site of the same
// module type belong to one invocation, until that module's own position
// goes back to an earlier line (a loop in the caller called it again) or
// the very same op instruction records again. A call that reads the
// parameters of several modules of its type is split where their owner
// changes (calls made in a loop from one line look alike otherwise).
// Invocations are then matched to module paths of the model, top down:
// an invocation that reads parameters goes to the module that owns them;
// one that reads none (an activation, a pooling
// layer) goes to the first unused module of its type that lies, in the
// model's field order, between its matched neighbours. Ops that no
// compiled method of a module ran (a model declared in a notebook cell,
// whose methods the interpreter runs) belong to the module whose
// parameters they read, or to the model.

import (
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/nn"
)

// moduleIndex describes the modules of a model for attribution.
type moduleIndex struct {
	modules []GraphModule // tree order (preorder), the model first
	end     []int         // end[i]: index of the last module below modules[i]
	byPath  map[string]int
	byType  map[string][]int // Go type → module indices, in tree order
	owners  map[string]string
}

func newModuleIndex(s *nn.SummaryTree) *moduleIndex {
	ix := &moduleIndex{byPath: map[string]int{}, byType: map[string][]int{}, owners: map[string]string{}}
	var walk func(m *nn.ModuleSummary)
	walk = func(m *nn.ModuleSummary) {
		i := len(ix.modules)
		ix.modules = append(ix.modules, GraphModule{Path: m.Path, Name: m.Name, Type: m.Type, Params: m.Total()})
		ix.end = append(ix.end, i)
		ix.byPath[m.Path] = i
		ix.byType[m.Type] = append(ix.byType[m.Type], i)
		for _, p := range m.Params {
			ix.owners[p.Path] = m.Path
		}
		for _, c := range m.Modules {
			walk(c)
		}
		ix.end[i] = len(ix.modules) - 1
	}
	walk(s.Root)
	return ix
}

// owner returns the path of the module holding the parameter named name.
func (ix *moduleIndex) owner(name string) string {
	if p, ok := ix.owners[name]; ok {
		return p
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i]
	}
	return ""
}

// contains reports whether module j is module i or below it.
func (ix *moduleIndex) contains(i, j int) bool { return i <= j && j <= ix.end[i] }

// scopeLevel is the stretch of a call stack spent in one module type: one or
// more consecutive frames whose receiver is that type (Forward calling a
// helper method or closure of its own).
type scopeLevel struct {
	typ   string
	lines []int     // line of each frame, outermost first
	pcs   []uintptr // program counter of each frame
}

// invocation is one call of a module's methods during the pass.
type invocation struct {
	typ     string
	site    []uintptr // the caller's frames at the call
	lines   []int     // latest position in this module's frames
	pcs     []uintptr
	events  []scopeEvent // ops recorded directly here and calls of other modules, in order
	anchors []string
	path    string
}

// scopeEvent is an op recorded directly in an invocation (call nil) or a call
// of another module.
type scopeEvent struct {
	op   int
	call *invocation
}

// lastCall returns the invocation's latest event when it is a call.
func (inv *invocation) lastCall() *invocation {
	if n := len(inv.events); n > 0 {
		return inv.events[n-1].call
	}
	return nil
}

// lastIsOp reports whether the invocation's latest event is an op.
func (inv *invocation) lastIsOp() bool {
	n := len(inv.events)
	return n > 0 && inv.events[n-1].call == nil
}

var funcTypes sync.Map // function name → receiver type ("nn.Linear") or ""

// receiverType returns the package-qualified receiver type of a method
// named as runtime.Frame names functions
// ("github.com/kiln-ml/kiln/nn.(*Linear).Forward.func1" → "nn.Linear"),
// or "" for a function that is not a method.
func receiverType(fn string) string {
	if v, ok := funcTypes.Load(fn); ok {
		return v.(string)
	}
	s := fn[strings.LastIndexByte(fn, '/')+1:]
	t := ""
	if pkg, rest, ok := strings.Cut(s, "."); ok {
		if strings.HasPrefix(rest, "(*") {
			if i := strings.IndexByte(rest, ')'); i > 0 {
				t = pkg + "." + rest[2:i]
			}
		} else if name, _, ok := strings.Cut(rest, "."); ok {
			t = pkg + "." + name
		}
	}
	funcTypes.Store(fn, t)
	return t
}

// scopeLevels returns the module-type stretches of a recorded stack, outermost
// first, stopping at the tracer's own frames.
func scopeLevels(pcs []uintptr, ix *moduleIndex) []scopeLevel {
	frames := runtime.CallersFrames(pcs)
	var inner []scopeLevel // innermost first
	for {
		f, more := frames.Next()
		if f.Function == "github.com/kiln-ml/kiln/tensor.ObserveNodes" {
			break
		}
		if t := receiverType(f.Function); t != "" {
			if _, ok := ix.byType[t]; ok {
				if n := len(inner); n > 0 && inner[n-1].typ == t {
					inner[n-1].lines = append(inner[n-1].lines, f.Line)
					inner[n-1].pcs = append(inner[n-1].pcs, f.PC)
				} else {
					inner = append(inner, scopeLevel{typ: t, lines: []int{f.Line}, pcs: []uintptr{f.PC}})
				}
			}
		}
		if !more {
			break
		}
	}
	slices.Reverse(inner)
	for i := range inner {
		slices.Reverse(inner[i].lines)
		slices.Reverse(inner[i].pcs)
	}
	return inner
}

// positionBefore reports whether position lines in a module's frames comes
// before was: by the first line that differs; a position that extends
// the other is not before it. (Program counters do not order calls within
// a line: inlined calls report the position of their inlining mark.)
func positionBefore(lines, was []int) bool {
	for i := range min(len(lines), len(was)) {
		if lines[i] != was[i] {
			return lines[i] < was[i]
		}
	}
	return false
}

// attributeModules returns the module path of each recorded op.
func attributeModules(recs []tracedNode, ix *moduleIndex, params map[*autodiff.Node]string) []string {
	root := &invocation{}
	opAnchors := make([][]string, len(recs))
	rootType := ix.modules[0].Type
	for ri, r := range recs {
		for _, in := range r.node.Inputs {
			if name, ok := params[in]; ok {
				opAnchors[ri] = append(opAnchors[ri], ix.owner(name))
			}
		}
		lv := scopeLevels(r.pcs, ix)
		if len(lv) > 0 && lv[0].typ == rootType {
			lv = lv[1:] // the model's own methods are the root invocation
		}
		cur := root
		var parentPCs []uintptr
		for j, l := range lv {
			innermost := j == len(lv)-1
			// Continue the module's latest call unless this is another
			// call: from elsewhere, or back at an earlier position (a
			// loop in the caller called it again), or the same op
			// instruction recording again.
			c := cur.lastCall()
			cont := c != nil && c.typ == l.typ && slices.Equal(c.site, parentPCs) &&
				!positionBefore(l.lines, c.lines) && !(innermost && c.lastIsOp() && slices.Equal(l.pcs, c.pcs))
			if !cont {
				c = &invocation{typ: l.typ, site: parentPCs}
				cur.events = append(cur.events, scopeEvent{op: -1, call: c})
			}
			c.lines, c.pcs = l.lines, l.pcs
			cur, parentPCs = c, l.pcs
		}
		cur.events = append(cur.events, scopeEvent{op: ri})
	}
	collectAnchors(root, opAnchors)
	out := make([]string, len(recs))
	assignPaths(root, 0, ix, opAnchors, out)
	return out
}

// collectAnchors gathers the owners of the parameters read anywhere in
// inv's invocation subtree.
func collectAnchors(inv *invocation, opAnchors [][]string) []string {
	inv.anchors = nil
	for _, ev := range inv.events {
		if ev.call != nil {
			inv.anchors = append(inv.anchors, collectAnchors(ev.call, opAnchors)...)
		} else {
			inv.anchors = append(inv.anchors, opAnchors[ev.op]...)
		}
	}
	return inv.anchors
}

// bestCandidate returns the candidate module holding most of anchors, or
// -1 when none holds any.
func bestCandidate(ix *moduleIndex, cands []int, anchors []string) int {
	best, bestN := -1, 0
	for _, j := range cands {
		n := 0
		for _, a := range anchors {
			if pathWithin(a, ix.modules[j].Path) {
				n++
			}
		}
		if n > bestN {
			best, bestN = j, n
		}
	}
	return best
}

// splitByAnchors splits an invocation whose parameters belong to several
// modules of its type into one invocation per module, cutting where the
// parameters change owner: calls of a module that only delegates to
// another, made in a loop, look like one call from their stacks alone.
func splitByAnchors(c *invocation, ix *moduleIndex, cands []int, opAnchors [][]string) []*invocation {
	var parts []*invocation
	cur, curCand := &invocation{typ: c.typ}, -1
	for _, ev := range c.events {
		var k int
		if ev.call != nil {
			k = bestCandidate(ix, cands, ev.call.anchors)
		} else {
			k = bestCandidate(ix, cands, opAnchors[ev.op])
		}
		if k >= 0 && curCand >= 0 && k != curCand {
			parts = append(parts, cur)
			cur, curCand = &invocation{typ: c.typ}, -1
		}
		if k >= 0 {
			curCand = k
		}
		cur.events = append(cur.events, ev)
	}
	if len(parts) == 0 {
		return []*invocation{c}
	}
	parts = append(parts, cur)
	for _, p := range parts {
		collectAnchors(p, opAnchors)
	}
	return parts
}

// assignPaths gives inv (matched to module mi) and its invocation subtree
// their module paths, and each op directly in them its path in out.
func assignPaths(inv *invocation, mi int, ix *moduleIndex, opAnchors [][]string, out []string) {
	inv.path = ix.modules[mi].Path
	candidates := func(c *invocation) []int {
		var cs []int
		for _, j := range ix.byType[c.typ] {
			if j != mi && ix.contains(mi, j) {
				cs = append(cs, j)
			}
		}
		return cs
	}
	var children []*invocation
	for _, ev := range inv.events {
		if ev.call != nil {
			children = append(children, splitByAnchors(ev.call, ix, candidates(ev.call), opAnchors)...)
			continue
		}
		o := ev.op
		out[o] = inv.path
		if a := opAnchors[o]; len(a) > 0 {
			lca := a[0]
			for _, p := range a[1:] {
				lca = pathCommon(lca, p)
			}
			if pathWithin(lca, inv.path) {
				out[o] = lca
			}
		}
	}
	// Calls that read parameters go where those parameters are.
	assigned := make([]int, len(children)) // module index per call; -1 none yet
	used := map[int]bool{}
	for i, c := range children {
		assigned[i] = bestCandidate(ix, candidates(c), c.anchors)
		if assigned[i] >= 0 {
			used[assigned[i]] = true
		}
	}
	// The others, in order, to the first unused module of their type
	// between their matched neighbours.
	for i, c := range children {
		if assigned[i] >= 0 {
			continue
		}
		prev, next := mi, len(ix.modules)
		for k := i - 1; k >= 0; k-- {
			if assigned[k] >= 0 {
				prev = assigned[k]
				break
			}
		}
		for k := i + 1; k < len(children); k++ {
			if assigned[k] >= 0 {
				next = assigned[k]
				break
			}
		}
		cs := candidates(c)
		pick := -1
		for _, rule := range []func(j int) bool{
			func(j int) bool { return j > prev && j < next && !used[j] },
			func(j int) bool { return j > prev && !used[j] },
			func(j int) bool { return !used[j] },
			func(int) bool { return true },
		} {
			for _, j := range cs {
				if rule(j) {
					pick = j
					break
				}
			}
			if pick >= 0 {
				break
			}
		}
		if pick < 0 {
			pick = mi // no module of that type here: part of inv's module
		}
		assigned[i] = pick
		used[pick] = true
	}
	for i, c := range children {
		assignPaths(c, assigned[i], ix, opAnchors, out)
	}
}

// pathCommon returns the longest common dotted prefix of two module paths.
func pathCommon(a, b string) string {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	n := 0
	for n < len(as) && n < len(bs) && as[n] == bs[n] {
		n++
	}
	return strings.Join(as[:n], ".")
}

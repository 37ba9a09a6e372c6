package viz

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// NodeKind says what a node of a traced Graph stands for.
type NodeKind int

// The kinds of graph nodes.
const (
	OpNode     NodeKind = iota // an op the forward pass recorded
	InputNode                  // the traced input
	ParamNode                  // a parameter or buffer of the model
	ConstNode                  // another tensor the pass read (a mask, a table)
	OutputNode                 // the pass's result
	ModuleNode                 // a module collapsed into one node (Graph.Collapse)
)

// String names the kind: "op", "input", "param", "const", "output" or
// "module".
func (k NodeKind) String() string {
	switch k {
	case OpNode:
		return "op"
	case InputNode:
		return "input"
	case ParamNode:
		return "param"
	case ConstNode:
		return "const"
	case OutputNode:
		return "output"
	case ModuleNode:
		return "module"
	}
	return fmt.Sprintf("NodeKind(%d)", int(k))
}

// GraphNode is one node of a Graph: an op, or a tensor the ops read or
// produce.
type GraphNode struct {
	ID   int // index in Graph.Nodes
	Kind NodeKind
	// Op is the recorded op name ("conv2d", "linear") for an OpNode, the
	// module's type for a ModuleNode, and the kind's name otherwise.
	Op string
	// Name is the dotted parameter name ("Layers.0.Norm1.weight") of a
	// ParamNode and the module path of a ModuleNode; "" otherwise.
	Name  string
	Attrs map[string]any // the op's attributes as recorded; nil for other kinds
	// Module is the dotted path of the module the node belongs to (""
	// for the model itself): the module that ran the op, that owns the
	// parameter, or the parent of a collapsed module.
	Module string
	Shape  []int  // shape of the node's output tensor
	DType  string // dtype of the node's output tensor ("float32")
}

// GraphEdge is a tensor flowing from the node that produces it to an op
// that reads it.
type GraphEdge struct {
	From, To int // node IDs
	Shape    []int
	DType    string
}

// GraphModule describes one module of the traced model, for the boxes
// that group its nodes.
type GraphModule struct {
	Path   string // dotted path ("" for the model)
	Name   string // last path segment
	Type   string // Go type ("nn.Linear")
	Params int    // parameter elements in the module and below
}

// Graph is the computation graph of one forward pass: ops as nodes,
// tensors as edges, each node tagged with the module it belongs to. Trace
// and TraceFunc build it; Layout places it; SVG, HTML and MIME draw it.
type Graph struct {
	Nodes   []GraphNode
	Edges   []GraphEdge
	Modules []GraphModule // the model's modules in tree order, the model first
}

// ErrNotRecorded reports a forward pass that recorded no graph: nothing
// in it required gradients, so no op recorded a node.
var ErrNotRecorded = errors.New("the forward pass recorded no graph")

// Trace runs model.Forward once on input and returns the graph of the ops
// it recorded, each attributed to the module that ran it, with the
// model's parameters as named source nodes. The model is used as it is
// (call nn.Eval first to leave dropout out). Temporaries are released
// when Trace returns; the model is not changed.
//
// Recording needs an input that requires gradients: a floating-point
// input is traced through a view of it that does (the model may live on
// any device view), while integer inputs (token ids) need a model whose
// parameters require gradients (created on dev.Autodiff()). Trace
// returns an error wrapping ErrNotRecorded when nothing was recorded, and
// the *tensor.Error of a forward pass that fails.
func Trace(model nn.Module, input *tensor.Tensor) (*Graph, error) {
	if model == nil {
		return nil, errors.New("viz.Trace: nil model")
	}
	return trace("viz.Trace", model, model.Forward, input)
}

// TraceFunc is Trace for a forward pass written as a function: f runs on
// input, and model, which may be nil, supplies the parameter names and
// the modules that ops are attributed to. Use it for models whose Forward
// takes several inputs or returns several outputs:
//
//	g, err := viz.TraceFunc(attn, func(x *tensor.Tensor) *tensor.Tensor {
//		out, _ := attn.Forward(x, x, x)
//		return out
//	}, x)
func TraceFunc(model any, f func(x *tensor.Tensor) *tensor.Tensor, input *tensor.Tensor) (*Graph, error) {
	if f == nil {
		return nil, errors.New("viz.TraceFunc: nil function")
	}
	return trace("viz.TraceFunc", model, f, input)
}

// tracedNode is a node seen while tracing, with the call stack that made it.
type tracedNode struct {
	node *autodiff.Node
	pcs  []uintptr
}

func trace(op string, model any, f func(*tensor.Tensor) *tensor.Tensor, input *tensor.Tensor) (*Graph, error) {
	if input == nil {
		return nil, fmt.Errorf("%s: nil input", op)
	}
	var g *Graph
	var traceErr error
	err := tensor.Try(func() {
		tensor.Scope(func() {
			x := tracedInput(input)
			var recs []tracedNode
			var out *tensor.Tensor
			tensor.ObserveNodes(func() { out = f(x) }, func(n *autodiff.Node) {
				pcs := make([]uintptr, 64)
				k := runtime.Callers(3, pcs)
				recs = append(recs, tracedNode{node: n, pcs: pcs[:k]})
			})
			if out == nil || out.Node() == nil || len(recs) == 0 {
				traceErr = fmt.Errorf("%s: %w: make the input floating point, or the model's parameters require "+
					"gradients (create them on dev.Autodiff(), not on a NoGrad view)", op, ErrNotRecorded)
				return
			}
			g = buildGraph(model, x, out, recs)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if traceErr != nil {
		return nil, traceErr
	}
	return g, nil
}

// tracedInput returns a view of input that requires gradients, so every
// op that depends on it records, or input itself when it cannot (integer
// dtypes).
func tracedInput(input *tensor.Tensor) *tensor.Tensor {
	if !input.DType().IsFloat() {
		return input
	}
	dev := input.Device()
	var x *tensor.Tensor
	if dev == dev.NoGrad() {
		// A NoGrad view: a view of it would not record either, so copy.
		x = tensor.FromFloat64s(dev.Inner(), input.Float64s(), input.Shape()...).To(input.DType()).Detach()
	} else {
		x = input.Detach()
	}
	if !x.Device().IsAutodiff() {
		x = x.ToDevice(x.Device().Inner().Autodiff())
	}
	return x.RequireGrad()
}

// buildGraph turns the nodes recorded while tracing into a Graph.
func buildGraph(model any, input, out *tensor.Tensor, recs []tracedNode) *Graph {
	g := &Graph{}
	var mods *moduleIndex
	paramNames := map[*autodiff.Node]string{}
	if model != nil {
		mods = newModuleIndex(nn.Summary(model))
		for _, np := range append(nn.Params(model), nn.Buffers(model)...) {
			if np.Param.Tensor != nil && !np.Param.Released() {
				if n := np.Param.Node(); n != nil {
					if _, dup := paramNames[n]; !dup {
						paramNames[n] = np.Name
					}
				}
			}
		}
		g.Modules = mods.modules
	} else {
		g.Modules = []GraphModule{{Type: "func"}}
	}
	observed := make(map[*autodiff.Node]int, len(recs))
	for i, r := range recs {
		observed[r.node] = i
	}
	// Keep what the output depends on: ops recorded during the pass, and
	// the tensors they read as sources.
	var order []*autodiff.Node
	seen := map[*autodiff.Node]bool{}
	var visit func(n *autodiff.Node)
	visit = func(n *autodiff.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		if _, ok := observed[n]; ok {
			for _, in := range n.Inputs {
				visit(in)
			}
		}
		order = append(order, n)
	}
	visit(out.Node())
	// Module of each recorded op.
	var scopes []string
	if mods != nil {
		scopes = attributeModules(recs, mods, paramNames)
	} else {
		scopes = make([]string, len(recs))
	}
	ids := map[*autodiff.Node]int{}
	// Sources first (inputs and parameters), in first-use order, then ops
	// in recording order, so IDs read like the program.
	sort.SliceStable(order, func(i, j int) bool {
		_, oi := observed[order[i]]
		_, oj := observed[order[j]]
		if oi != oj {
			return !oi
		}
		if oi {
			return observed[order[i]] < observed[order[j]]
		}
		return false
	})
	firstUser := map[*autodiff.Node]int{} // source → first op reading it
	for _, n := range order {
		if ri, ok := observed[n]; ok {
			for _, in := range n.Inputs {
				if _, isOp := observed[in]; in != nil && !isOp {
					if _, ok := firstUser[in]; !ok {
						firstUser[in] = ri
					}
				}
			}
		}
	}
	for _, n := range order {
		gn := GraphNode{ID: len(g.Nodes), Shape: slices.Clone(n.Shape), DType: n.DType}
		if ri, ok := observed[n]; ok {
			gn.Kind, gn.Op, gn.Attrs, gn.Module = OpNode, n.Op, n.Attrs, scopes[ri]
		} else if name, ok := paramNames[n]; ok {
			gn.Kind, gn.Op, gn.Name = ParamNode, "param", name
			if mods != nil {
				gn.Module = mods.owner(name)
			}
		} else if n == input.Node() {
			gn.Kind, gn.Op = InputNode, "input"
		} else {
			gn.Kind, gn.Op = ConstNode, "const"
			if ri, ok := firstUser[n]; ok {
				gn.Module = scopes[ri]
			}
		}
		ids[n] = gn.ID
		g.Nodes = append(g.Nodes, gn)
	}
	for _, n := range order {
		if _, ok := observed[n]; !ok {
			continue
		}
		done := map[int]bool{}
		for _, in := range n.Inputs {
			if in == nil || done[ids[in]] {
				continue
			}
			done[ids[in]] = true
			g.Edges = append(g.Edges, GraphEdge{From: ids[in], To: ids[n], Shape: slices.Clone(in.Shape), DType: in.DType})
		}
	}
	o := out.Node()
	outID := len(g.Nodes)
	g.Nodes = append(g.Nodes, GraphNode{ID: outID, Kind: OutputNode, Op: "output", Shape: slices.Clone(o.Shape), DType: o.DType})
	g.Edges = append(g.Edges, GraphEdge{From: ids[o], To: outID, Shape: slices.Clone(o.Shape), DType: o.DType})
	return g
}

// module returns the GraphModule with the given path, or nil.
func (g *Graph) module(path string) *GraphModule {
	for i := range g.Modules {
		if g.Modules[i].Path == path {
			return &g.Modules[i]
		}
	}
	return nil
}

// Depth returns how deep the modules that hold nodes are nested: 0 when
// every node belongs to the model itself, 1 when some belong to a
// top-level module (Conv1), 2 for Layers.0, and so on.
func (g *Graph) Depth() int {
	d := 0
	for _, n := range g.Nodes {
		d = max(d, pathDepthOf(n.Module)+graphBoolInt(n.Kind == ModuleNode))
	}
	return d
}

func graphBoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pathDepthOf counts the segments of a dotted module path ("" has none).
func pathDepthOf(p string) int {
	if p == "" {
		return 0
	}
	return strings.Count(p, ".") + 1
}

// pathWithin reports whether module path p is m or below it.
func pathWithin(p, m string) bool {
	return m == "" || p == m || strings.HasPrefix(p, m+".")
}

// pathAncestorAt returns the ancestor of path p at depth d (p itself when it
// is no deeper).
func pathAncestorAt(p string, d int) string {
	if pathDepthOf(p) <= d {
		return p
	}
	parts := strings.Split(p, ".")
	return strings.Join(parts[:d], ".")
}

// Collapse returns a copy of g in which every module at the given depth
// (1: the model's own fields, 2: their modules, …) is one ModuleNode
// standing for all the nodes inside it, its parameters included; edges
// into and out of the module keep their shapes, edges inside it vanish.
// Depth 0 or less returns g unchanged.
func (g *Graph) Collapse(depth int) *Graph {
	if depth <= 0 {
		return g
	}
	out := &Graph{Modules: g.Modules}
	newID := make([]int, len(g.Nodes))
	collapsed := map[string]int{}
	for _, n := range g.Nodes {
		// The module n folds into, if any: a node of a module at depth or
		// deeper, or a module node collapsed before at a greater depth.
		m, fold := "", false
		switch {
		case n.Kind == InputNode || n.Kind == OutputNode:
		case n.Kind == ModuleNode && pathDepthOf(n.Name) >= depth:
			m, fold = pathAncestorAt(n.Name, depth), true
		case pathDepthOf(n.Module) >= depth:
			m, fold = pathAncestorAt(n.Module, depth), true
		}
		if !fold {
			newID[n.ID] = len(out.Nodes)
			n.ID = len(out.Nodes)
			out.Nodes = append(out.Nodes, n)
			continue
		}
		id, ok := collapsed[m]
		if !ok {
			id = len(out.Nodes)
			collapsed[m] = id
			mn := GraphNode{ID: id, Kind: ModuleNode, Op: "module", Name: m, Module: pathAncestorAt(m, depth-1)}
			if gm := g.module(m); gm != nil {
				mn.Op = gm.Type
			}
			out.Nodes = append(out.Nodes, mn)
		}
		newID[n.ID] = id
	}
	// Number the nodes in program order: a module node where its first op
	// was (or its first node, for a module of sources only).
	key := make([]int, len(out.Nodes))
	for i := range key {
		key[i] = -1
	}
	for _, n := range g.Nodes {
		id := newID[n.ID]
		k := n.ID
		if n.Kind == ParamNode || n.Kind == ConstNode {
			k += len(g.Nodes) // after any op of the same module
		}
		if key[id] < 0 || k < key[id] {
			key[id] = k
		}
	}
	for i := range key {
		key[i] %= len(g.Nodes)
	}
	perm := make([]int, len(out.Nodes))
	for i := range perm {
		perm[i] = i
	}
	sort.SliceStable(perm, func(a, b int) bool { return key[perm[a]] < key[perm[b]] })
	renum := make([]int, len(out.Nodes))
	nodes := make([]GraphNode, len(out.Nodes))
	for newPos, old := range perm {
		renum[old] = newPos
		nodes[newPos] = out.Nodes[old]
		nodes[newPos].ID = newPos
	}
	out.Nodes = nodes
	for i := range newID {
		newID[i] = renum[newID[i]]
	}
	type pair struct{ from, to int }
	seen := map[pair]bool{}
	for _, e := range g.Edges {
		f, t := newID[e.From], newID[e.To]
		if f == t || seen[pair{f, t}] {
			continue
		}
		seen[pair{f, t}] = true
		out.Edges = append(out.Edges, GraphEdge{From: f, To: t, Shape: e.Shape, DType: e.DType})
		if n := &out.Nodes[f]; n.Kind == ModuleNode {
			// A module's output: what leaves it last.
			n.Shape, n.DType = e.Shape, e.DType
		}
	}
	return out
}

// OpCounts returns how many times each op occurs in g.
func (g *Graph) OpCounts() map[string]int {
	c := map[string]int{}
	for _, n := range g.Nodes {
		if n.Kind == OpNode {
			c[n.Op]++
		}
	}
	return c
}

// String summarises g: its size, then one line per node in order, with
// its module, inputs and output shape.
func (g *Graph) String() string {
	var b strings.Builder
	ops := 0
	for _, n := range g.Nodes {
		if n.Kind == OpNode {
			ops++
		}
	}
	fmt.Fprintf(&b, "graph: %d ops, %d nodes, %d edges\n", ops, len(g.Nodes), len(g.Edges))
	ins := make([][]int, len(g.Nodes))
	for _, e := range g.Edges {
		ins[e.To] = append(ins[e.To], e.From)
	}
	for _, n := range g.Nodes {
		label := n.Op
		if n.Name != "" {
			label += " " + n.Name
		}
		fmt.Fprintf(&b, "%%%d = %s", n.ID, label)
		if len(ins[n.ID]) > 0 {
			parts := make([]string, len(ins[n.ID]))
			for i, id := range ins[n.ID] {
				parts[i] = fmt.Sprintf("%%%d", id)
			}
			fmt.Fprintf(&b, "(%s)", strings.Join(parts, ", "))
		}
		fmt.Fprintf(&b, " → %s %s", graphShape(n.Shape), n.DType)
		if n.Module != "" {
			fmt.Fprintf(&b, "  [%s]", n.Module)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// graphShape formats a shape as [2 3 4].
func graphShape(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

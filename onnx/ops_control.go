package onnx

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Control flow: If, Loop and Scan run their graph attributes as plans of
// their own (subplans), built and checked when the model loads. A subplan
// reads the values of its enclosing graphs by name, as ONNX scoping says;
// the nodes that hold subgraphs count those reads as inputs (nodeInputs),
// so the enclosing graph computes them first and keeps them alive.

func init() {
	ops["If"] = &opDef{run: runIf, role: staticInputs(0)}
	ops["Loop"] = &opDef{run: runLoop, role: staticInputs(0, 1)}
	ops["Scan"] = &opDef{run: runScan}
}

// graphAttrs returns n's graph-valued attributes by name.
func graphAttrs(n *NodeProto) map[string]*GraphProto {
	var out map[string]*GraphProto
	for _, a := range n.Attributes {
		if a.G != nil {
			if out == nil {
				out = map[string]*GraphProto{}
			}
			out[a.Name] = a.G
		}
	}
	return out
}

// nodeInputs returns n's inputs followed by the values its subgraphs read
// from the enclosing scope.
func nodeInputs(n *NodeProto) []string {
	gs := graphAttrs(n)
	if gs == nil {
		return n.Inputs
	}
	ins := append([]string{}, n.Inputs...)
	seen := map[string]bool{}
	for _, in := range ins {
		seen[in] = true
	}
	for _, a := range n.Attributes {
		if a.G == nil {
			continue
		}
		for _, v := range freeVars(a.G) {
			if !seen[v] {
				seen[v] = true
				ins = append(ins, v)
			}
		}
	}
	return ins
}

// freeVars returns the names g reads but does not define, in order of
// first use.
func freeVars(g *GraphProto) []string {
	defined := map[string]bool{"": true}
	for _, in := range g.Inputs {
		defined[in.Name] = true
	}
	for _, t := range g.Initializers {
		defined[t.Name] = true
	}
	for _, s := range g.SparseInitializers {
		defined[s.Values.Name] = true
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			defined[o] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		if !defined[v] && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, n := range g.Nodes {
		for _, in := range nodeInputs(n) {
			add(in)
		}
	}
	for _, o := range g.Outputs {
		add(o.Name)
	}
	return out
}

// loadSubgraphs builds the subplans of every step with graph attributes.
func (p *plan) loadSubgraphs() error {
	for _, s := range p.steps {
		for name, g := range graphAttrs(s.node) {
			sub, err := newSubplan(g, p)
			if err != nil {
				return fmt.Errorf("node %q (%s) attribute %s: %w", s.node.Name, s.node.OpType, name, err)
			}
			if s.subs == nil {
				s.subs = map[string]*plan{}
			}
			s.subs[name] = sub
		}
	}
	return nil
}

// newSubplan prepares subgraph g of parent to run. Its initializers stay
// host constants (uploaded where an operator needs them on the device):
// a subgraph's weights are not trained.
func newSubplan(g *GraphProto, parent *plan) (*plan, error) {
	p := &plan{path: parent.path, proto: &ModelProto{Graph: g, OpsetImports: parent.proto.OpsetImports}, opset: parent.opset,
		dev: parent.dev, params: map[string]*nn.Param{}, consts: map[string]*hostTensor{}, lastUse: map[string]int{}, outNames: map[string]bool{}}
	order, err := topoSortScope(g, true)
	if err != nil {
		return nil, err
	}
	if err := validateGraph(g, p.opset); err != nil {
		return nil, err
	}
	if err := p.addSteps(order); err != nil {
		return nil, err
	}
	p.inputs = g.Inputs
	for _, out := range g.Outputs {
		p.outputs = append(p.outputs, out.Name)
		p.outNames[out.Name] = true
	}
	for _, t := range g.Initializers {
		h, err := tensorHost(t)
		if err != nil {
			return nil, err
		}
		p.consts[t.Name] = h
	}
	if err := p.fold(); err != nil {
		return nil, err
	}
	return p, nil
}

// eval runs the subplan with the enclosing scope outer and its inputs
// ins (by position), returning its outputs in order.
func (p *plan) eval(outer map[string]*value, ins []*value) ([]*value, error) {
	env := make(map[string]*value, len(outer)+len(p.steps))
	for k, v := range outer {
		env[k] = v
	}
	for name, h := range p.consts {
		env[name] = &value{h: h}
	}
	if len(ins) != len(p.inputs) {
		return nil, fmt.Errorf("%w: the subgraph has %d inputs, given %d", tensor.ErrArgument, len(p.inputs), len(ins))
	}
	for k, in := range p.inputs {
		env[in.Name] = ins[k]
	}
	for _, s := range p.steps {
		vals := make([]*value, len(s.node.Inputs))
		for k, name := range s.node.Inputs {
			if name == "" {
				continue
			}
			v, ok := env[name]
			if !ok {
				return nil, fmt.Errorf("%w: node %q (%s) reads %q, which no enclosing graph defines", ErrCorrupt, s.node.Name, s.node.OpType, name)
			}
			vals[k] = v
		}
		outs, err := p.execIn(s, vals, false, env)
		if err != nil {
			return nil, err
		}
		for k, name := range s.node.Outputs {
			if name == "" {
				continue
			}
			if k >= len(outs) || outs[k] == nil {
				return nil, fmt.Errorf("node %q (%s) did not compute output %d %q", s.node.Name, s.node.OpType, k, name)
			}
			env[name] = outs[k]
		}
	}
	res := make([]*value, len(p.outputs))
	for k, name := range p.outputs {
		v, ok := env[name]
		if !ok {
			return nil, fmt.Errorf("%w: subgraph output %q is not computed", ErrCorrupt, name)
		}
		res[k] = v
	}
	return res, nil
}

// sub runs the subplan of graph attribute name, failing the node on error.
func (c *call) sub(name string, ins []*value) []*value {
	sp := c.s.subs[name]
	if sp == nil {
		c.fail(tensor.ErrArgument, "graph attribute %s is missing (control flow runs only inside a loaded model)", name)
	}
	outs, err := sp.eval(c.env, ins)
	if err != nil {
		c.fail(tensor.ErrArgument, "%s: %v", name, err)
	}
	return outs
}

func runIf(c *call) []*value {
	cond := c.h(0)
	if cond.size() != 1 {
		c.fail(tensor.ErrShape, "cond must hold one value, got shape %v", cond.shape)
	}
	branch := "else_branch"
	if cond.at(0) != 0 {
		branch = "then_branch"
	}
	return c.sub(branch, nil)
}

// scalarValue wraps a host scalar.
func scalarValue(dt tensor.DType, v int64) *value {
	h := newHost(dt, nil)
	h.setInt(0, v)
	return &value{h: h}
}

// deviceOf returns v on the device.
func (c *call) deviceOf(v *value) *tensor.Tensor {
	if v == nil || v.isSeq || v.none || v.t == nil && v.h == nil {
		c.fail(tensor.ErrArgument, "%s where a tensor is needed", v.kind())
	}
	if v.t == nil {
		v.t = v.h.device(c.dev.Inner())
	}
	return v.t
}

// stackValues stacks per-iteration values along axis (after reversing
// them when reverse is set).
func (c *call) stackValues(vs []*value, axis int, reverse bool, what string) *value {
	if len(vs) == 0 {
		c.fail(tensor.ErrArgument, "%s: no iterations ran; Kiln cannot tell the empty output's shape", what)
	}
	ts := make([]*tensor.Tensor, len(vs))
	for i, v := range vs {
		j := i
		if reverse {
			j = len(vs) - 1 - i
		}
		ts[j] = c.deviceOf(v)
	}
	r := ts[0].Dims() + 1
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		c.fail(tensor.ErrArgument, "%s: axis out of range for rank %d", what, r)
	}
	return &value{t: tensor.Stack(ts, axis)}
}

func runLoop(c *call) []*value {
	limit, hasLimit := int64(0), false
	if c.has(0) {
		if c.h(0).size() != 1 {
			c.fail(tensor.ErrShape, "M must hold one value, got shape %v", c.h(0).shape)
		}
		limit, hasLimit = c.h(0).ints()[0], true
	}
	cond := true
	if c.has(1) {
		cond = c.scalar(1) != 0
	}
	var carried []*value
	for k := 2; k < len(c.in); k++ {
		carried = append(carried, c.need(k))
	}
	body := c.s.subs["body"]
	if body == nil {
		c.fail(tensor.ErrArgument, "body is missing")
	}
	nScan := len(body.outputs) - 1 - len(carried)
	if nScan < 0 || len(body.inputs) != 2+len(carried) {
		c.fail(tensor.ErrArgument, "body has %d inputs and %d outputs for %d loop-carried values", len(body.inputs), len(body.outputs), len(carried))
	}
	scans := make([][]*value, nScan)
	for i := int64(0); (!hasLimit || i < limit) && cond; i++ {
		ins := append([]*value{scalarValue(tensor.Int64, i), scalarValue(tensor.Bool, b2i(cond))}, carried...)
		outs := c.sub("body", ins)
		cv := outs[0]
		if cv.isSeq || cv.none || cv.t == nil && cv.h == nil {
			c.fail(tensor.ErrArgument, "the body's condition is %s", cv.kind())
		}
		if cv.h == nil {
			cv.h = hostOf(cv.t)
		}
		if cv.h.size() != 1 {
			c.fail(tensor.ErrShape, "the body's condition has shape %v, want one value", cv.h.shape)
		}
		cond = cv.h.at(0) != 0
		carried = outs[1 : 1+len(carried)]
		for j := range nScan {
			scans[j] = append(scans[j], outs[1+len(carried)+j])
		}
		if i > maxRunElements {
			c.fail(tensor.ErrArgument, "more than 2^32 iterations")
		}
	}
	res := append([]*value{}, carried...)
	for j := range nScan {
		res = append(res, c.stackValues(scans[j], 0, false, fmt.Sprintf("scan output %d", j)))
	}
	return res
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func runScan(c *call) []*value {
	body := c.s.subs["body"]
	if body == nil {
		c.fail(tensor.ErrArgument, "body is missing")
	}
	m := int(c.attrInt("num_scan_inputs", 0))
	if c.opset < 9 {
		return scan8(c, body, m)
	}
	ins := c.in
	return scanOnce(c, body, ins[:len(ins)-m], ins[len(ins)-m:], 0)
}

// scanOnce runs Scan (opset 9 semantics) on states and scan inputs; base
// is added to the scan axes (1 for opset 8's batch dimension, stripped by
// the caller, so 0 here).
func scanOnce(c *call, body *plan, states, xs []*value, _ int) []*value {
	n, m := len(states), len(xs)
	k := len(body.outputs) - n
	if len(body.inputs) != n+m || k < 0 {
		c.fail(tensor.ErrArgument, "body has %d inputs and %d outputs for %d states and %d scan inputs", len(body.inputs), len(body.outputs), n, m)
	}
	inAxes, inDirs := c.attrInts("scan_input_axes"), c.attrInts("scan_input_directions")
	if c.opset < 9 {
		inDirs = c.attrInts("directions")
	}
	outAxes, outDirs := c.attrInts("scan_output_axes"), c.attrInts("scan_output_directions")
	get := func(v []int64, j int) int64 {
		if j < len(v) {
			return v[j]
		}
		return 0
	}
	length := -1
	tx := make([]*tensor.Tensor, m)
	axes := make([]int, m)
	for j := range m {
		tx[j] = c.deviceOf(xs[j])
		axes[j] = c.axis(get(inAxes, j), tx[j].Dims())
		l := tx[j].Dim(axes[j])
		if length >= 0 && l != length {
			c.fail(tensor.ErrShape, "scan inputs of %d and %d iterations", length, l)
		}
		length = l
	}
	if length < 0 {
		c.fail(tensor.ErrArgument, "no scan inputs")
	}
	scans := make([][]*value, k)
	for t := range length {
		ins := append([]*value{}, states...)
		for j := range m {
			at := t
			if get(inDirs, j) != 0 {
				at = length - 1 - t
			}
			ins = append(ins, &value{t: tx[j].Select(axes[j], at)})
		}
		outs := c.sub("body", ins)
		states = outs[:n]
		for j := range k {
			scans[j] = append(scans[j], outs[n+j])
		}
	}
	res := append([]*value{}, states...)
	for j := range k {
		res = append(res, c.stackValues(scans[j], int(get(outAxes, j)), get(outDirs, j) != 0, fmt.Sprintf("scan output %d", j)))
	}
	return res
}

// scan8 runs opset 8's Scan: every state and scan input has a leading
// batch dimension, and sequence_lens (input 0) must be the full length.
func scan8(c *call, body *plan, m int) []*value {
	if c.has(0) {
		c.h(0) // sequence lengths shorter than the input are not supported below
	}
	ins := c.in[1:]
	n := len(ins) - m
	if n < 0 {
		c.fail(tensor.ErrArgument, "num_scan_inputs %d for %d inputs", m, len(ins))
	}
	batch := -1
	ts := make([]*tensor.Tensor, len(ins))
	for j, v := range ins {
		ts[j] = c.deviceOf(v)
		batch = ts[j].Dim(0)
	}
	if c.has(0) {
		for _, l := range c.h(0).ints() {
			if m > 0 && int(l) != ts[n].Dim(1) {
				c.fail(tensor.ErrArgument, "sequence_lens %v: Kiln runs Scan-8 on full-length sequences only", c.h(0).ints())
			}
		}
	}
	var per [][]*value
	for b := range batch {
		states, xs := make([]*value, n), make([]*value, m)
		for j := range n {
			states[j] = &value{t: ts[j].Select(0, b)}
		}
		for j := range m {
			xs[j] = &value{t: ts[n+j].Select(0, b)}
		}
		per = append(per, scanOnce(c, body, states, xs, 0))
	}
	res := make([]*value, len(body.outputs))
	for j := range res {
		col := make([]*value, batch)
		for b := range batch {
			col[b] = per[b][j]
		}
		res[j] = c.stackValues(col, 0, false, fmt.Sprintf("output %d", j))
	}
	return res
}

// valueKindSupported reports whether Kiln runs graph values of type t
// other than tensors.
func valueKindSupported(t *TypeProto) bool {
	return t != nil && (t.Kind == "sequence" || t.Kind == "optional")
}

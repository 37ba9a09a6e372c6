package onnx

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// Control flow in generated code: If becomes a Go if statement on its
// condition's value, Loop a for loop over its trip count and condition,
// Scan a for loop over the scan axis (inside one over the batch for
// opset 8). Each subgraph is translated like the main graph, by a nested
// generator (gen.sub) that sees the enclosing graphs' values under their
// Go names, as ONNX scoping says; its nodes become tensor calls or
// onnx.Operator runs like any other. Loop-carried values and Scan states
// are Go variables assigned at the end of each iteration; scan outputs
// are collected in slices and stacked after the loop, as the runtime
// does (ops_control.go).

// controlFlow are the operators generated as Go control flow (filled in
// init: the translators reach back to gen.step).
var controlFlow = map[string]func(c *controlWriter){}

func init() {
	controlFlow["If"], controlFlow["Loop"], controlFlow["Scan"] = genIf, genLoop, genScan
}

// controlWriter is the code being written for one control-flow node.
type controlWriter struct {
	g         *gen
	s         *step
	b         strings.Builder
	defines   []string
	outVars   map[string]string
	fallbacks []string
}

// errControl carries why a control-flow node cannot be generated.
type errControl struct{ msg string }

func (c *controlWriter) fail(format string, args ...any) {
	panic(errControl{fmt.Sprintf(format, args...)})
}

func (c *controlWriter) line(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
	c.b.WriteByte('\n')
}

// control translates control-flow node s; a node it cannot translate
// sets g.err (generated code has no fallback for subgraphs).
func (g *gen) control(s *step, name string) {
	n := s.node
	c := &controlWriter{g: g, s: s, outVars: map[string]string{}}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				switch e := r.(type) {
				case errControl:
					err = errors.New(e.msg)
				case *tensor.Error:
					err = e
				default:
					if r == errNoTranslation {
						err = errors.New("a value's shape or type is unknown")
						return
					}
					panic(r)
				}
			}
		}()
		controlFlow[n.OpType](c)
		return nil
	}()
	if err != nil {
		if g.err == nil {
			g.err = fmt.Errorf("%w: node %s (%s): %v", ErrUnsupported, name, n.OpType, err)
		}
		return
	}
	st := &genStep{code: fmt.Sprintf("// %s: %s\n%s", name, n.OpType, c.b.String()), defines: c.defines, fallbacks: c.fallbacks}
	for _, in := range nodeInputs(n) {
		if in != "" {
			st.uses = append(st.uses, in)
		}
	}
	g.steps = append(g.steps, st)
	for k, v := range c.outVars {
		g.vars[k] = v
	}
}

// define names output k's Go variable (a new one), or "_" for an output
// the node leaves unnamed.
func (c *controlWriter) define(k int, hint string) string {
	outs := c.s.node.Outputs
	if k >= len(outs) || outs[k] == "" {
		return c.g.localName(hint)
	}
	v := c.g.localName(outs[k])
	c.outVars[outs[k]] = v
	c.defines = append(c.defines, outs[k])
	return v
}

// body is a subgraph translated for one use.
type body struct {
	code      string   // its nodes' code
	decls     []string // the package-level declarations with its own
	fallbacks []string // its nodes run through onnx.Operator
	outs      []string // Go expressions of its outputs
	types     []ValueType
	inTypes   []ValueType
}

// subplan returns the loaded subplan of graph attribute attr.
func (c *controlWriter) subplan(attr string) *plan {
	sp := c.s.subs[attr]
	if sp == nil {
		c.fail("graph attribute %s is missing", attr)
	}
	return sp
}

// translate translates subplan sp whose inputs are the Go variables
// inVars of types inTypes.
func (c *controlWriter) translate(sp *plan, inVars []string, inTypes []ValueType) *body {
	sub := c.g.sub(sp, inVars, inTypes)
	if sub.err != nil {
		panic(errControl{sub.err.Error()})
	}
	b := &body{code: sub.emit(sp.outputs), inTypes: inTypes}
	for _, o := range sp.outputs {
		b.outs = append(b.outs, sub.ref(o, nil))
		b.types = append(b.types, sub.types[o])
	}
	b.decls, b.fallbacks = sub.decls, sub.fallbacks
	return b
}

// write writes b's code and keeps its declarations and fallbacks.
func (c *controlWriter) write(b *body) {
	c.b.WriteString(b.code)
	c.g.decls = b.decls
	c.fallbacks = append(c.fallbacks, b.fallbacks...)
}

// translateLoop translates a loop body whose inputs carried[k] (at input
// first+k) come back as output outFirst+k: where the body changes a
// carried value's shape, the assumed input shape is made unknown and the
// body translated again, so no shape is folded that the second iteration
// breaks.
func (c *controlWriter) translateLoop(sp *plan, inVars []string, inTypes []ValueType, first, outFirst, carried int) *body {
	taken := maps.Clone(c.g.taken)
	retry := func() {
		// A translation given up frees its names.
		clear(c.g.taken)
		maps.Copy(c.g.taken, taken)
	}
	for range 3 {
		b := c.translate(sp, inVars, inTypes)
		same := true
		for k := range carried {
			in, out := inTypes[first+k], b.types[outFirst+k]
			if !sameStaticShape(in, out) {
				inTypes[first+k] = looseType(in, out)
				same = false
			}
		}
		if same {
			return b
		}
		retry()
	}
	return c.translate(sp, inVars, inTypes)
}

// sameStaticShape reports whether out keeps every dimension in knows.
func sameStaticShape(in, out ValueType) bool {
	if !in.RankKnown {
		return true
	}
	if !out.RankKnown || len(out.Shape) != len(in.Shape) || in.ElemType != TypeUndefined && out.ElemType != in.ElemType {
		return false
	}
	for i, d := range in.Shape {
		if d.HasValue && (!out.Shape[i].HasValue || out.Shape[i].Value != d.Value) {
			return false
		}
		if !d.HasValue && d.Param != "" && out.Shape[i].Param != d.Param {
			return false
		}
	}
	return true
}

// looseType keeps of in what out agrees with: the element type, the rank
// when both have it, and no dimension.
func looseType(in, out ValueType) ValueType {
	v := ValueType{ElemType: in.ElemType}
	if in.RankKnown && out.RankKnown && len(in.Shape) == len(out.Shape) {
		v.RankKnown = true
		v.Shape = make([]Dim, len(in.Shape))
	}
	return v
}

// sub returns a generator that has translated subplan sp, nested in g:
// g's values stay visible under their Go names, and sp's inputs are the
// Go variables inVars with the types inTypes (shape inference runs on the
// subgraph with those and the enclosing values' types).
func (g *gen) sub(sp *plan, inVars []string, inTypes []ValueType) *gen {
	c := &gen{m: g.m, p: sp, source: g.source, fields: map[string]string{}, order: g.order, taken: g.taken, syms: g.syms,
		imps: g.imps, decls: g.decls, vars: map[string]string{}, types: map[string]ValueType{},
		consts: map[string]*hostTensor{}, ints: map[string]*symInts{}}
	for k, v := range g.vars {
		c.vars[k] = v
	}
	for k, v := range g.fields {
		c.fields[k] = v
	}
	for k, v := range g.types {
		c.types[k] = v
	}
	for k, v := range g.consts {
		c.consts[k] = v
	}
	for k, v := range g.ints {
		c.ints[k] = v
	}
	sg := *sp.proto.Graph
	sg.Inputs = nil
	local := map[string]bool{}
	for k, in := range sp.inputs {
		c.vars[in.Name] = inVars[k]
		delete(c.fields, in.Name)
		delete(c.consts, in.Name)
		delete(c.ints, in.Name)
		local[in.Name] = true
		sg.Inputs = append(sg.Inputs, &ValueInfoProto{Name: in.Name, Type: typeProtoOf(inTypes[k])})
	}
	for _, v := range freeVars(sp.proto.Graph) {
		if vt, ok := g.types[v]; ok && !local[v] {
			sg.Inputs = append(sg.Inputs, &ValueInfoProto{Name: v, Type: typeProtoOf(vt)})
		}
	}
	// Values the subgraph defines hide the enclosing graph's of the same
	// name.
	for _, n := range sg.Nodes {
		for _, o := range n.Outputs {
			delete(c.vars, o)
			delete(c.fields, o)
			delete(c.consts, o)
			delete(c.ints, o)
			delete(c.types, o)
		}
	}
	env := inferInfos(&sg, sp.opset)
	for name, in := range env {
		c.types[name] = in.valueType()
	}
	for name, h := range sp.consts {
		c.consts[name] = h
		delete(c.vars, name)
		delete(c.fields, name)
	}
	for name, ds := range inferredValues(env) {
		if !local[name] {
			c.ints[name] = &symInts{dims: ds, shape: env[name].shape}
		}
	}
	for _, s := range sp.steps {
		c.step(s)
		if c.err != nil {
			break
		}
	}
	return c
}

// typeProtoOf is the declared type that says vt.
func typeProtoOf(vt ValueType) *TypeProto {
	return &TypeProto{Kind: "tensor", ElemType: vt.ElemType, HasShape: vt.RankKnown, Shape: append([]Dim(nil), vt.Shape...)}
}

// scalarType is the type of a 0-d tensor of element type et.
func scalarType(et int32) ValueType { return ValueType{ElemType: et, RankKnown: true, Shape: []Dim{}} }

// stateType is the type assumed for a loop-carried value or Scan state
// whose initial value is name: its inferred type, the element type
// taken from the body's declaration where inference does not know it.
func (g *gen) stateType(name string, declared *TypeProto) ValueType {
	vt := g.types[name]
	if vt.ElemType == TypeUndefined && declared != nil {
		vt.ElemType = declared.ElemType
	}
	return vt
}

// genIf writes If as a Go if statement on the condition's value (or, for
// a condition known when generating, the branch it picks).
func genIf(c *controlWriter) {
	g, n := c.g, c.s.node
	thenPlan, elsePlan := c.subplan("then_branch"), c.subplan("else_branch")
	if len(thenPlan.outputs) != len(n.Outputs) || len(elsePlan.outputs) != len(n.Outputs) {
		c.fail("the branches have %d and %d outputs for %d", len(thenPlan.outputs), len(elsePlan.outputs), len(n.Outputs))
	}
	vars := make([]string, len(n.Outputs))
	for k := range n.Outputs {
		vars[k] = c.define(k, "ifOut")
	}
	branch := func(sp *plan) {
		b := c.translate(sp, nil, nil)
		c.write(b)
		if len(vars) > 0 {
			c.line("%s = %s", strings.Join(vars, ", "), strings.Join(b.outs, ", "))
		}
	}
	defer func() {
		for _, v := range vars {
			c.line("_ = %s", v)
		}
	}()
	if len(vars) > 0 {
		c.line("var %s *tensor.Tensor", strings.Join(vars, ", "))
	}
	cond := n.Inputs[0]
	if h, ok := g.consts[cond]; ok {
		if h.size() != 1 {
			c.fail("cond has shape %v, want one value", h.shape)
		}
		sp := elsePlan
		if h.at(0) != 0 {
			sp = thenPlan
		}
		c.line("{")
		branch(sp)
		c.line("}")
		return
	}
	c.line("if %s.Item() != 0 {", g.ref(cond, nil))
	branch(thenPlan)
	c.line("} else {")
	branch(elsePlan)
	c.line("}")
}

// genLoop writes Loop as a for loop: the trip count M (input 0) and the
// condition (input 1) bound it, the loop-carried values are variables
// the body's outputs replace each iteration, and each scan output is the
// iterations' values stacked.
func genLoop(c *controlWriter) {
	g, n := c.g, c.s.node
	sp := c.subplan("body")
	has := func(k int) bool { return k < len(n.Inputs) && n.Inputs[k] != "" }
	nCarried := len(n.Inputs) - 2
	if nCarried < 0 {
		nCarried = 0
	}
	nScan := len(sp.outputs) - 1 - nCarried
	if nScan < 0 || len(sp.inputs) != 2+nCarried {
		c.fail("body has %d inputs and %d outputs for %d loop-carried values", len(sp.inputs), len(sp.outputs), nCarried)
	}
	for k := range nCarried {
		if !has(2 + k) {
			c.fail("loop-carried value %d has no initial value", k)
		}
	}
	limit := ""
	if has(0) {
		if h, ok := g.consts[n.Inputs[0]]; ok {
			if h.size() != 1 {
				c.fail("M has shape %v, want one value", h.shape)
			}
			limit = fmt.Sprint(h.ints()[0])
		} else {
			limit = g.localName("tripCount")
			c.line("%s := int64(%s.Item())", limit, g.ref(n.Inputs[0], nil))
		}
	}
	cond := g.localName("cond")
	if has(1) {
		if h, ok := g.consts[n.Inputs[1]]; ok {
			c.line("%s := %v", cond, h.size() == 1 && h.at(0) != 0)
		} else {
			c.line("%s := %s.Item() != 0", cond, g.ref(n.Inputs[1], nil))
		}
	} else {
		c.line("%s := true", cond)
	}
	carried := make([]string, nCarried)
	for k := range nCarried {
		carried[k] = c.define(k, "carried")
		c.line("%s := %s", carried[k], g.ref(n.Inputs[2+k], nil))
		c.line("_ = %s", carried[k])
	}
	steps := make([]string, nScan)
	for j := range nScan {
		steps[j] = g.localName("scanSteps")
		c.line("var %s []*tensor.Tensor", steps[j])
	}
	i, iter, condIn := g.localName("i"), g.localName(sp.inputs[0].Name), g.localName(sp.inputs[1].Name)
	inVars := append([]string{iter, condIn}, carried...)
	inTypes := []ValueType{scalarType(TypeInt64), scalarType(TypeBool)}
	for k := range nCarried {
		inTypes = append(inTypes, g.stateType(n.Inputs[2+k], sp.inputs[2+k].Type))
	}
	b := c.translateLoop(sp, inVars, inTypes, 2, 1, nCarried)
	bound := cond
	if limit != "" {
		bound = fmt.Sprintf("%s < %s && %s", i, limit, cond)
	}
	c.line("for %s := int64(0); %s; %s++ {", i, bound, i)
	c.line("%s := tensor.ScalarOf(m.dev, tensor.Int64, float64(%s))", iter, i)
	c.line("%s := tensor.FromBools(m.dev, []bool{%s}).Reshape()", condIn, cond)
	c.line("_, _ = %s, %s", iter, condIn)
	c.write(b)
	c.line("%s = %s.Item() != 0", cond, b.outs[0])
	if nCarried > 0 {
		c.line("%s = %s", strings.Join(carried, ", "), strings.Join(b.outs[1:1+nCarried], ", "))
	}
	for j := range nScan {
		c.line("%s = append(%s, %s)", steps[j], steps[j], b.outs[1+nCarried+j])
	}
	c.line("}")
	for j := range nScan {
		v := c.define(nCarried+j, "scanOut")
		c.line("%s := tensor.Stack(%s, 0)", v, steps[j])
		c.line("_ = %s", v)
	}
}

// genScan writes Scan as a for loop over the scan inputs' scan axes; for
// opset 8, whose states and scan inputs have a leading batch dimension,
// inside a loop over the batch whose results are stacked.
func genScan(c *controlWriter) {
	g, n := c.g, c.s.node
	sp := c.subplan("body")
	attrs := c.s.attrs
	ints := func(name string) []int64 {
		if a := attrs[name]; a != nil {
			return a.Ints
		}
		return nil
	}
	m := 0
	if a := attrs["num_scan_inputs"]; a != nil {
		m = int(a.I)
	}
	ins := n.Inputs
	batched := g.p.opset < 9
	if batched {
		if len(ins) == 0 {
			c.fail("no inputs")
		}
		ins = ins[1:]
	}
	nStates := len(ins) - m
	k := len(sp.outputs) - nStates
	if m <= 0 || nStates < 0 || k < 0 || len(sp.inputs) != nStates+m {
		c.fail("body has %d inputs and %d outputs for %d inputs of which %d are scanned", len(sp.inputs), len(sp.outputs), len(ins), m)
	}
	for _, in := range ins {
		if in == "" {
			c.fail("an input is missing")
		}
	}
	inAxes, inDirs := ints("scan_input_axes"), ints("scan_input_directions")
	outAxes, outDirs := ints("scan_output_axes"), ints("scan_output_directions")
	if batched {
		inAxes, inDirs, outAxes, outDirs = nil, ints("directions"), nil, nil
	}
	get := func(v []int64, j int) int64 {
		if j < len(v) {
			return v[j]
		}
		return 0
	}
	// The types the body sees: the states as given, each scan input
	// without its scan axis (and, for opset 8, everything without the
	// batch dimension).
	drop := func(vt ValueType, axis int64) ValueType {
		if !vt.RankKnown {
			return ValueType{ElemType: vt.ElemType}
		}
		r := int64(len(vt.Shape))
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis >= r {
			c.fail("scan axis %d out of range for rank %d", axis, r)
		}
		out := vt
		out.Shape = append(append([]Dim(nil), vt.Shape[:axis]...), vt.Shape[axis+1:]...)
		return out
	}
	inTypes := make([]ValueType, nStates+m)
	for j, in := range ins {
		vt := g.stateType(in, sp.inputs[j].Type)
		if batched {
			vt = drop(vt, 0)
		}
		if j >= nStates {
			vt = drop(vt, get(inAxes, j-nStates))
		}
		inTypes[j] = vt
	}
	exprs := make([]string, len(ins))
	for j, in := range ins {
		v := g.localName(in + "In")
		c.line("%s := %s", v, g.ref(in, nil))
		exprs[j] = v
	}
	// Declared before the loops so that both variants fill them.
	var results []string
	batch := ""
	if batched {
		for j := range sp.outputs {
			results = append(results, g.localName("perBatch"))
			c.line("var %s []*tensor.Tensor", results[j])
		}
		if has := len(n.Inputs) > 0 && n.Inputs[0] != ""; has && m > 0 {
			lens := g.localName("sequenceLens")
			c.line("for _, %s := range %s.Int64s() {", lens, g.ref(n.Inputs[0], nil))
			c.line("if int(%s) != %s.Dim(1) {", lens, exprs[nStates])
			c.line("panic(&tensor.Error{Op: %q, Msg: fmt.Sprintf(\"sequence_lens %%v: Scan-8 runs on full-length sequences only\", %s), Err: tensor.ErrArgument})", "Scan", lens)
			c.line("}\n}")
		}
		batch = g.localName("b")
		c.line("for %s := 0; %s < %s.Dim(0); %s++ {", batch, batch, exprs[0], batch)
		for j := range exprs {
			v := g.localName(ins[j] + "Item")
			c.line("%s := %s.Select(0, %s)", v, exprs[j], batch)
			exprs[j] = v
		}
	}
	states := make([]string, nStates)
	for j := range nStates {
		if batched {
			states[j] = g.localName("state")
		} else {
			states[j] = c.define(j, "state")
		}
		c.line("%s := %s", states[j], exprs[j])
		c.line("_ = %s", states[j])
	}
	xs := exprs[nStates:]
	steps := g.localName("steps")
	c.line("%s := %s.Dim(%d)", steps, xs[0], get(inAxes, 0))
	for j := 1; j < m; j++ {
		c.line("if %s.Dim(%d) != %s {", xs[j], get(inAxes, j), steps)
		c.line("panic(&tensor.Error{Op: %q, Msg: fmt.Sprintf(\"scan inputs of %%d and %%d iterations\", %s, %s.Dim(%d)), Err: tensor.ErrShape})", "Scan", steps, xs[j], get(inAxes, j))
		c.line("}")
	}
	collected := make([]string, k)
	for j := range k {
		collected[j] = g.localName("scanSteps")
		c.line("var %s []*tensor.Tensor", collected[j])
	}
	it := g.localName("t")
	slices := make([]string, m)
	for j := range m {
		slices[j] = g.localName(sp.inputs[nStates+j].Name)
	}
	b := c.translateLoop(sp, append(append([]string{}, states...), slices...), inTypes, 0, 0, nStates)
	c.line("for %s := 0; %s < %s; %s++ {", it, it, steps, it)
	for j := range m {
		at := it
		if get(inDirs, j) != 0 {
			at = fmt.Sprintf("%s-1-%s", steps, it)
		}
		c.line("%s := %s.Select(%d, %s)", slices[j], xs[j], get(inAxes, j), at)
	}
	c.write(b)
	if nStates > 0 {
		c.line("%s = %s", strings.Join(states, ", "), strings.Join(b.outs[:nStates], ", "))
	}
	for j := range k {
		c.line("%s = append(%s, %s)", collected[j], collected[j], b.outs[nStates+j])
	}
	c.line("}")
	finals := append([]string{}, states...)
	for j := range k {
		if get(outDirs, j) != 0 {
			l, r := g.localName("l"), g.localName("r")
			c.line("for %s, %s := 0, len(%s)-1; %s < %s; %s, %s = %s+1, %s-1 {", l, r, collected[j], l, r, l, r, l, r)
			c.line("%s[%s], %s[%s] = %s[%s], %s[%s]", collected[j], l, collected[j], r, collected[j], r, collected[j], l)
			c.line("}")
		}
		if batched {
			finals = append(finals, fmt.Sprintf("tensor.Stack(%s, %d)", collected[j], get(outAxes, j)))
			continue
		}
		v := c.define(nStates+j, "scanOut")
		c.line("%s := tensor.Stack(%s, %d)", v, collected[j], get(outAxes, j))
		c.line("_ = %s", v)
	}
	if !batched {
		return
	}
	for j := range results {
		c.line("%s = append(%s, %s)", results[j], results[j], finals[j])
	}
	c.line("}")
	for j := range results {
		v := c.define(j, "scanOut")
		c.line("%s := tensor.Stack(%s, 0)", v, results[j])
		c.line("_ = %s", v)
	}
}

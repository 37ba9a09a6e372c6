package onnx

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Opsets of the default domain that Load accepts. Opsets 7 to 17 are the
// ones tested against PyTorch 1.13's exports, opsets 1 to 17 against ONNX
// 1.12's backend test suite; later ones load too, for the operators whose
// definitions Kiln follows there. Opsets below 7 are converted to opset 7
// on load (see legacy.go).
const (
	MinOpset = 1
	MaxOpset = 21
)

// Model is an ONNX graph loaded as a Kiln module: its initializers are
// Params (trainable float tensors) and buffers (integer tensors, batch-norm
// statistics, and float tensors used only as operator arguments), keyed by
// their ONNX names made safe for dotted paths (see ParamName), so nn.Params,
// nn.StateDict, optimizers and checkpoints work on it as on any model. The
// graph runs with Kiln's tensor ops, which record gradients on an autodiff
// device, so a loaded model can be fine-tuned.
//
// Integer tensors that feed shape arguments (Reshape's shape, Slice's
// bounds, …) are held on the host as constants when the model is loaded:
// loading new values into those buffers does not change the shapes the
// graph computes.
type Model struct {
	// Params holds every initializer by its sanitized ONNX name.
	Params map[string]*nn.Param `kiln:",inline"`

	g *plan
}

// plan is a loaded graph ready to run.
type plan struct {
	path     string
	proto    *ModelProto
	opset    int64
	dev      tensor.Device
	steps    []*step
	inputs   []*ValueInfoProto
	outputs  []string
	params   map[string]*nn.Param   // ONNX name → initializer on the device
	consts   map[string]*hostTensor // ONNX name → host constant
	lastUse  map[string]int
	outNames map[string]bool
}

// step is one node to run.
type step struct {
	node  *NodeProto
	def   *opDef
	attrs map[string]*AttributeProto
	index int
	// subs holds the plans of the node's graph attributes (If's
	// branches, Loop's and Scan's bodies) by attribute name.
	subs map[string]*plan
}

// ParamName turns an ONNX value name into the name of its Param: characters
// other than letters, digits, '_' and '.' become '_', and empty dotted
// segments are dropped ("onnx::Conv_12" is "onnx__Conv_12", "fc1.weight"
// stays "fc1.weight", "/layer/Constant" is "_layer_Constant").
func ParamName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	var segs []string
	for _, seg := range strings.Split(b.String(), ".") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	if len(segs) == 0 {
		return "_"
	}
	return strings.Join(segs, ".")
}

// Load reads the ONNX model at path and prepares it to run on dev: the
// initializers are copied to dev as the model's Params, constant
// subgraphs are evaluated once, and every node is checked against the
// operators Kiln implements. Operators Kiln does not implement (or
// implements without the attributes a node uses) are reported all at once,
// by name and opset, in one error wrapping ErrUnsupported. A malformed
// file gives an error wrapping ErrCorrupt, and so does a node whose
// attributes break its operator's definition (a zero stride, an axis out
// of range, a perm that is no permutation), naming the node, the attribute
// and the value. The Params belong to no Scope:
// release them with nn.Release(m) when done.
func Load(path string, dev tensor.Device) (*Model, error) {
	mp, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := newModel(mp, path, dev)
	if err != nil {
		return nil, fmt.Errorf("onnx: load %s: %w", path, err)
	}
	return m, nil
}

// FromProto prepares a decoded model to run on dev, as Load does for a
// file. Externally stored tensors must have been loaded (ReadFile does
// that); name names the model in errors.
func FromProto(m *ModelProto, name string, dev tensor.Device) (*Model, error) {
	if m == nil || m.Graph == nil {
		return nil, fmt.Errorf("onnx: load %s: %w: no graph", name, ErrCorrupt)
	}
	model, err := newModel(m, name, dev)
	if err != nil {
		return nil, fmt.Errorf("onnx: load %s: %w", name, err)
	}
	return model, nil
}

// defaultOpset returns the default domain's opset version of m.
func defaultOpset(m *ModelProto) (int64, bool) {
	for _, o := range m.OpsetImports {
		if o.Domain == "" || o.Domain == "ai.onnx" {
			return o.Version, true
		}
	}
	return 0, false
}

// newPlan upgrades legacy opsets and checks everything Load checks before
// it reads a weight: the opset, the graph's structure and order, every
// node's attributes and that Kiln runs every operator. Describe uses it to
// say whether Load would accept a model.
func newPlan(mp *ModelProto, path string, dev tensor.Device) (*plan, error) {
	mp, err := upgradeLegacy(mp)
	if err != nil {
		return nil, err
	}
	g := mp.Graph
	opset, ok := defaultOpset(mp)
	if !ok {
		if len(mp.OpsetImports) == 0 {
			return nil, fmt.Errorf("%w: model: no opset_import (field %d)", ErrCorrupt, fModelOpsetImport)
		}
		return nil, fmt.Errorf("%w: the model imports no opset of the default ONNX domain", ErrUnsupported)
	}
	if opset < MinOpset {
		return nil, fmt.Errorf("%w: opset %d: Kiln runs opsets %d to %d", ErrUnsupported, opset, MinOpset, MaxOpset)
	}
	p := &plan{path: path, proto: mp, opset: opset, dev: dev, params: map[string]*nn.Param{},
		consts: map[string]*hostTensor{}, lastUse: map[string]int{}, outNames: map[string]bool{}}
	if err := p.check(); err != nil {
		return nil, err
	}
	order, err := topoSort(g)
	if err != nil {
		return nil, err
	}
	if err := validateGraph(g, opset); err != nil {
		return nil, err
	}
	if err := p.addSteps(order); err != nil {
		return nil, err
	}
	return p, nil
}

func newModel(mp *ModelProto, path string, dev tensor.Device) (*Model, error) {
	p, err := newPlan(mp, path, dev)
	if err != nil {
		return nil, err
	}
	g := p.proto.Graph
	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
	}
	for _, s := range g.SparseInitializers {
		inits[s.Values.Name] = true
	}
	for _, in := range g.Inputs {
		if !inits[in.Name] {
			p.inputs = append(p.inputs, in)
		}
	}
	for _, out := range g.Outputs {
		p.outputs = append(p.outputs, out.Name)
		p.outNames[out.Name] = true
	}
	model := &Model{Params: map[string]*nn.Param{}, g: p}
	if err := p.loadInitializers(model); err != nil {
		nn.Release(model)
		return nil, err
	}
	if err := p.fold(); err != nil {
		nn.Release(model)
		return nil, err
	}
	for _, s := range p.steps {
		for _, in := range nodeInputs(s.node) {
			p.lastUse[in] = s.index
		}
	}
	return model, nil
}

// refusal is one thing in a model that Load refuses before it reads a
// weight: a node Kiln cannot run or a graph value of a type it cannot
// hold. check groups them into Load's error; Describe lists each one.
type refusal struct {
	key    string // what refusals with the same cause share
	what   string // the cause as Load's error names it
	reason string // the cause as one line of Describe says it
	node   string // the node's path ("If_0/then_branch/#2"), or the value's
	op     string // the node's operator ("" for a value)
	index  int    // the node's index in its graph (-1 for a value)
}

// refusals walks the model's graph and its subgraphs, returning every
// node Kiln cannot run and every graph value of an unsupported kind, in
// graph order (a node's subgraphs before the node).
func (p *plan) refusals() []refusal {
	var out []refusal
	var walk func(g *GraphProto, prefix string)
	walk = func(g *GraphProto, prefix string) {
		for i, n := range g.Nodes {
			name := n.Name
			if name == "" {
				name = "#" + strconv.Itoa(i)
			}
			name = prefix + name
			for _, a := range n.Attributes {
				if a.G != nil {
					walk(a.G, name+"/"+a.Name+"/")
				}
				for _, sg := range a.Graphs {
					walk(sg, name+"/"+a.Name+"/")
				}
			}
			if n.Domain != "" && n.Domain != "ai.onnx" {
				out = append(out, refusal{key: "domain:" + n.Domain + ":" + n.OpType,
					what:   fmt.Sprintf("%s (domain %s)", n.OpType, n.Domain),
					reason: fmt.Sprintf("operator %s of domain %s: Kiln runs the default ONNX domain only", n.OpType, n.Domain),
					node:   name, op: n.OpType, index: i})
				continue
			}
			def := ops[n.OpType]
			if def == nil {
				out = append(out, refusal{key: "op:" + n.OpType,
					what:   fmt.Sprintf("%s (opset %d)", n.OpType, p.opset),
					reason: fmt.Sprintf("unknown operator: Kiln does not run %s (opset %d)", n.OpType, p.opset),
					node:   name, op: n.OpType, index: i})
				continue
			}
			if def.check != nil {
				attrs := map[string]*AttributeProto{}
				for _, a := range n.Attributes {
					attrs[a.Name] = a
				}
				if msg := def.check(n, attrs, p.opset); msg != "" {
					out = append(out, refusal{key: "attr:" + n.OpType + ":" + msg,
						what:   fmt.Sprintf("%s (opset %d) with %s", n.OpType, p.opset, msg),
						reason: fmt.Sprintf("unsupported attribute or input: %s (opset %d) with %s", n.OpType, p.opset, msg),
						node:   name, op: n.OpType, index: i})
				}
			}
		}
		for _, v := range append(append([]*ValueInfoProto{}, g.Inputs...), g.Outputs...) {
			if v.Type != nil && v.Type.Kind != "" && v.Type.Kind != "tensor" && !valueKindSupported(v.Type) {
				out = append(out, refusal{key: "type:" + v.Name,
					what:   fmt.Sprintf("graph value %q of %s type", prefix+v.Name, v.Type.Kind),
					reason: fmt.Sprintf("unsupported type: graph value of %s type", v.Type.Kind),
					node:   prefix + v.Name, index: -1})
			}
		}
	}
	walk(p.proto.Graph, "")
	return out
}

// check reports every node Kiln cannot run, all at once.
func (p *plan) check() error {
	type miss struct {
		what  string
		nodes []string
	}
	var misses []*miss
	byKey := map[string]*miss{}
	for _, r := range p.refusals() {
		m := byKey[r.key]
		if m == nil {
			m = &miss{what: r.what}
			byKey[r.key] = m
			misses = append(misses, m)
		}
		m.nodes = append(m.nodes, r.node)
	}
	if len(misses) == 0 {
		return nil
	}
	parts := make([]string, len(misses))
	for i, m := range misses {
		nodes := m.nodes
		more := ""
		if len(nodes) > 3 {
			more = fmt.Sprintf(", … %d more", len(nodes)-3)
			nodes = nodes[:3]
		}
		parts[i] = fmt.Sprintf("%s: %d node(s): %s%s", m.what, len(m.nodes), strings.Join(nodes, ", "), more)
	}
	return fmt.Errorf("%w: %d unsupported operator(s): %s", ErrUnsupported, len(misses), strings.Join(parts, "; "))
}

// topoSort returns g's nodes so that each comes after the producers of its
// inputs (ONNX requires files to be sorted; this also accepts ones that are
// not), failing for values nothing defines and for cycles.
func topoSort(g *GraphProto) ([]*NodeProto, error) { return topoSortScope(g, false) }

// topoSortScope sorts g as topoSort does; for a subgraph (outer), values
// that g does not define are read from the enclosing graphs. A node's
// inputs include what its own subgraphs read from g (nodeInputs).
func topoSortScope(g *GraphProto, outer bool) ([]*NodeProto, error) {
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
	producer := map[string]int{}
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			if _, dup := producer[o]; dup || defined[o] {
				return nil, fmt.Errorf("%w: value %q is defined twice (again by node %s)", ErrCorrupt, o, nodeName(n, i))
			}
			producer[o] = i
		}
	}
	// Depth-first, with an explicit stack: a chain of a million nodes
	// must not recurse a million calls deep.
	state := make([]int8, len(g.Nodes)) // 0 new, 1 visiting, 2 done
	var order []*NodeProto
	type frame struct {
		node, next int      // next: the input to look at next
		ins        []string // the node's inputs (nodeInputs)
	}
	var stack []frame
	for root := range g.Nodes {
		if state[root] != 0 {
			continue
		}
		state[root] = 1
		stack = append(stack[:0], frame{node: root})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.ins == nil {
				f.ins = nodeInputs(g.Nodes[f.node])
			}
			ins := f.ins
			if f.next == len(ins) {
				state[f.node] = 2
				order = append(order, g.Nodes[f.node])
				stack = stack[:len(stack)-1]
				continue
			}
			in := ins[f.next]
			f.next++
			if defined[in] {
				continue
			}
			j, ok := producer[in]
			if !ok && outer {
				continue
			}
			if !ok {
				return nil, fmt.Errorf("%w: node %s reads %q, which no input, initializer or node defines", ErrCorrupt, nodeName(g.Nodes[f.node], f.node), in)
			}
			switch state[j] {
			case 1:
				return nil, fmt.Errorf("%w: the graph has a cycle through node %s", ErrCorrupt, nodeName(g.Nodes[j], j))
			case 0:
				state[j] = 1
				stack = append(stack, frame{node: j})
			}
		}
	}
	outs := map[string]bool{}
	for _, o := range g.Outputs {
		if _, ok := producer[o.Name]; !ok && !defined[o.Name] {
			return nil, fmt.Errorf("%w: graph output %q is not computed by any node", ErrCorrupt, o.Name)
		}
		outs[o.Name] = true
	}
	return order, nil
}

func nodeName(n *NodeProto, i int) string {
	if n.Name != "" {
		return fmt.Sprintf("%q (%s)", n.Name, n.OpType)
	}
	return fmt.Sprintf("#%d (%s)", i, n.OpType)
}

// role says how an operator uses one of its inputs.
type role uint8

const (
	roleData   role = iota // a differentiable tensor on the device
	roleBuffer             // a tensor on the device that is never trained
	roleStatic             // an argument read on the host (shapes, axes, …)
)

// loadInitializers makes the Params and host constants.
func (p *plan) loadInitializers(model *Model) error {
	g := p.proto.Graph
	uses := map[string][]role{}
	for _, s := range p.steps {
		for k, in := range s.node.Inputs {
			if in == "" {
				continue
			}
			r := roleData
			if s.def.role != nil {
				r = s.def.role(k, p.opset, s.attrs)
			}
			uses[in] = append(uses[in], r)
		}
	}
	type init struct {
		name string
		h    *hostTensor
	}
	var all []init
	for _, t := range g.Initializers {
		h, err := tensorHost(t)
		if err != nil {
			return err
		}
		all = append(all, init{t.Name, h})
	}
	for _, s := range g.SparseInitializers {
		h, err := sparseHost(s)
		if err != nil {
			return err
		}
		all = append(all, init{s.Values.Name, h})
	}
	keys := p.paramsByONNX()
	var err error
	tensor.NoScope(func() {
		err = tensor.Try(func() {
			for _, in := range all {
				if in.h.dtype == dtypeString {
					p.consts[in.name] = in.h // strings stay on the host
					continue
				}
				rs := uses[in.name]
				data, dev := false, false
				for _, r := range rs {
					switch r {
					case roleData:
						data, dev = true, true
					case roleBuffer:
						dev = true
					case roleStatic:
						p.consts[in.name] = in.h
					}
				}
				if len(rs) == 0 {
					p.consts[in.name] = in.h
				}
				name := keys[in.name]
				t := in.h.device(p.dev.Inner())
				var prm *nn.Param
				if data && in.h.dtype.IsFloat() {
					if p.dev.IsAutodiff() {
						v := t.ToDevice(p.dev)
						t.Release()
						t = v
					}
					prm = nn.NewParam(t)
				} else {
					prm = nn.NewBuffer(t)
				}
				model.Params[name] = prm
				if dev || data {
					p.params[in.name] = prm
				}
			}
		})
	})
	return err
}

// paramsByONNX maps the graph's initializer names to the names of their
// Params (ParamName, with "_2", "_3", … where two names collide); Load and
// Generate name them the same way.
func (p *plan) paramsByONNX() map[string]string {
	out := map[string]string{}
	taken := map[string]bool{}
	add := func(name string) {
		key := ParamName(name)
		for k := 2; taken[key]; k++ {
			key = ParamName(name) + "_" + strconv.Itoa(k)
		}
		taken[key] = true
		out[name] = key
	}
	for _, t := range p.proto.Graph.Initializers {
		add(t.Name)
	}
	for _, s := range p.proto.Graph.SparseInitializers {
		add(s.Values.Name)
	}
	return out
}

// fold evaluates, once, every node whose inputs are all host constants and
// that has a host implementation; those nodes do not run again.
func (p *plan) fold() error {
	var kept []*step
	for _, s := range p.steps {
		foldable := s.def.host != nil || s.node.OpType == "Constant"
		ins := make([]*value, len(s.node.Inputs))
		for k, name := range s.node.Inputs {
			if name == "" {
				continue
			}
			h, ok := p.consts[name]
			if !ok || p.params[name] != nil && !(s.def.role != nil && s.def.role(k, p.opset, s.attrs) == roleStatic) {
				foldable = false
				break
			}
			ins[k] = &value{h: h}
		}
		if !foldable {
			kept = append(kept, s)
			continue
		}
		outs, err := p.exec(s, ins, true)
		if err != nil {
			return err
		}
		for k, name := range s.node.Outputs {
			if name == "" || k >= len(outs) || outs[k] == nil || outs[k].h == nil {
				foldable = false
				break
			}
		}
		if !foldable {
			kept = append(kept, s)
			continue
		}
		for k, name := range s.node.Outputs {
			if name != "" {
				p.consts[name] = outs[k].h
			}
		}
	}
	for i, s := range kept {
		s.index = i
	}
	p.steps = kept
	return nil
}

// value is a graph value during a run: on the device, on the host, or both.
type value struct {
	t *tensor.Tensor
	h *hostTensor
	// seq holds a sequence's elements (isSeq set).
	seq   []*value
	isSeq bool
	// none marks an optional without a value.
	none bool
}

// shape returns the value's shape.
func (v *value) shape() []int {
	if v.t != nil {
		return v.t.Shape()
	}
	return append([]int{}, v.h.shape...)
}

func (v *value) dtype() tensor.DType {
	if v.t != nil {
		return v.t.DType()
	}
	return v.h.dtype
}

// hostLimit is the largest number of elements an operator computes on the
// host when all of its inputs are there: shape arithmetic, not data.
const hostLimit = 1 << 14

// exec runs one step on its input values. Panics from tensor ops (shape
// errors) and from operator code come back as errors naming the node.
func (p *plan) exec(s *step, ins []*value, folding bool) (outs []*value, err error) {
	return p.execIn(s, ins, folding, nil)
}

// execIn runs one step as exec does; env holds every value in scope, for
// the subgraphs of control-flow operators (nil when folding).
func (p *plan) execIn(s *step, ins []*value, folding bool, env map[string]*value) (outs []*value, err error) {
	c := &call{p: p, s: s, node: s.node, attrs: s.attrs, opset: p.opset, in: ins, dev: p.dev, env: env}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				panic(r)
			}
			var te *tensor.Error
			if !errors.As(e, &te) {
				panic(r)
			}
			name := s.node.Name
			if name == "" {
				name = "#" + strconv.Itoa(s.index)
			}
			err = fmt.Errorf("node %q (%s, opset %d): %w", name, s.node.OpType, p.opset, e)
		}
	}()
	if s.def.host != nil && c.allHost() {
		if hs := s.def.host(c); hs != nil {
			outs = make([]*value, len(hs))
			for k, h := range hs {
				if h != nil {
					outs[k] = &value{h: h}
				}
			}
			return outs, nil
		}
	}
	if folding {
		return nil, nil
	}
	if s.def.run == nil {
		c.fail(tensor.ErrArgument, "inputs must be constants or shapes")
	}
	return s.def.run(c), nil
}

// Inputs returns the names of the graph's inputs (initializers excluded),
// in order.
func (m *Model) Inputs() []string {
	if m == nil || m.g == nil {
		return nil
	}
	out := make([]string, len(m.g.inputs))
	for i, in := range m.g.inputs {
		out[i] = in.Name
	}
	return out
}

// Outputs returns the names of the graph's outputs, in order.
func (m *Model) Outputs() []string {
	if m == nil || m.g == nil {
		return nil
	}
	return append([]string(nil), m.g.outputs...)
}

// Opset returns the opset version of the default ONNX domain the model
// runs at: the one it imports, or 7 for opsets 1 to 6, which Load converts.
func (m *Model) Opset() int {
	if m == nil || m.g == nil {
		return 0
	}
	return int(m.g.opset)
}

// Proto returns the decoded model file (nil for a Model not made by Load);
// a file of opset 1 to 6 comes back converted to opset 7, as it runs.
func (m *Model) Proto() *ModelProto {
	if m == nil || m.g == nil {
		return nil
	}
	return m.g.proto
}

// errNotLoaded reports a Model that Load did not make.
var errNotLoaded = fmt.Errorf("onnx: %w: the Model was not made by Load or FromProto", tensor.ErrArgument)

// Forward runs the graph on x, fed to its only input, and returns its first
// output. It panics with a *tensor.Error (Op "onnx.Model.Forward") wrapping
// what Run reports, or with ErrArgument when the graph has more than one
// input.
func (m *Model) Forward(x *tensor.Tensor) *tensor.Tensor {
	const op = "onnx.Model.Forward"
	if m == nil || m.g == nil {
		panic(&tensor.Error{Op: op, Msg: errNotLoaded.Error(), Err: tensor.ErrArgument})
	}
	if len(m.g.inputs) != 1 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("the graph has %d inputs %v; use Run", len(m.g.inputs), m.Inputs()), Err: tensor.ErrArgument})
	}
	outs, err := m.Run(map[string]*tensor.Tensor{m.g.inputs[0].Name: x})
	if err != nil {
		var te *tensor.Error
		kind := tensor.ErrArgument
		if errors.As(err, &te) {
			kind = te.Err
		}
		panic(&tensor.Error{Op: op, Msg: err.Error(), Err: errors.Join(kind, err)})
	}
	first := outs[m.g.outputs[0]]
	for name, t := range outs {
		if name != m.g.outputs[0] && t != first {
			t.Release()
		}
	}
	return first
}

// Run runs the graph on inputs, keyed by the graph's input names, and
// returns every graph output by name. Inputs must have the declared dtype
// and rank, and the declared size in every dimension that is fixed;
// symbolic dimensions (dim_param, such as a batch size) take any size.
// Errors name the node that failed; shape errors wrap tensor.ErrShape.
// The outputs and intermediate tensors belong to the caller's Scope, as
// with any op; on an autodiff device the outputs carry the graph, so
// Backward reaches the model's Params.
func (m *Model) Run(inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if m == nil || m.g == nil {
		return nil, errNotLoaded
	}
	vals := make(map[string]*value, len(inputs))
	for name, t := range inputs {
		vals[name] = &value{t: t}
	}
	got, err := m.run(vals)
	if err != nil {
		return nil, err
	}
	res := make(map[string]*tensor.Tensor, len(got))
	for _, name := range m.g.outputs {
		v := got[name]
		if v.t == nil {
			return nil, fmt.Errorf("onnx: run %s: %w: output %q is %s; use RunValues", m.g.path, tensor.ErrArgument, name, v.kind())
		}
		res[name] = v.t
	}
	return res, nil
}

// run runs the graph on inputs (checked against the declared types) and
// returns every graph output, numeric tensors on the device.
func (m *Model) run(inputs map[string]*value) (map[string]*value, error) {
	p := m.g
	env := map[string]*value{}
	known := map[string]bool{}
	for _, in := range p.inputs {
		known[in.Name] = true
		v, ok := inputs[in.Name]
		if !ok {
			return nil, fmt.Errorf("onnx: run %s: %w: input %q is missing (inputs: %v)", p.path, tensor.ErrArgument, in.Name, m.Inputs())
		}
		if err := checkValue(in, v); err != nil {
			return nil, fmt.Errorf("onnx: run %s: %w", p.path, err)
		}
		env[in.Name] = v
	}
	var extra []string
	for name := range inputs {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("onnx: run %s: %w: unknown inputs %v (inputs: %v)", p.path, tensor.ErrArgument, extra, m.Inputs())
	}
	grad := false
	for _, v := range inputs {
		grad = grad || v.t != nil && v.t.RequiresGrad()
	}
	for name, prm := range p.params {
		env[name] = &value{t: prm.Tensor}
		grad = grad || prm.RequiresGrad()
	}
	for name, h := range p.consts {
		if v, ok := env[name]; ok {
			v.h = h
		} else {
			env[name] = &value{h: h}
		}
	}
	// Without gradients, intermediate tensors are released after their
	// last use, so peak memory follows the widest point of the graph.
	// Tensors held by sequences are never released early.
	owned := map[*tensor.Tensor]int{}
	protected := map[*tensor.Tensor]bool{}
	for _, v := range env {
		v.protect(protected)
	}
	for _, s := range p.steps {
		ins := make([]*value, len(s.node.Inputs))
		for k, name := range s.node.Inputs {
			if name == "" {
				continue
			}
			ins[k] = env[name]
		}
		outs, err := p.execIn(s, ins, false, env)
		if err != nil {
			return nil, fmt.Errorf("onnx: run %s: %w", p.path, err)
		}
		for k, name := range s.node.Outputs {
			if name == "" {
				continue
			}
			if k >= len(outs) || outs[k] == nil {
				return nil, fmt.Errorf("onnx: run %s: node %q (%s) did not compute output %d %q", p.path, s.node.Name, s.node.OpType, k, name)
			}
			env[name] = outs[k]
			if outs[k].isSeq {
				outs[k].protect(protected)
			}
			if t := outs[k].t; t != nil && !protected[t] {
				owned[t]++
			}
		}
		if grad {
			continue
		}
		for k, name := range s.node.Inputs {
			if name == "" || p.lastUse[name] != s.index || p.outNames[name] {
				continue
			}
			if ins[k] != nil {
				if t := ins[k].t; t != nil && !protected[t] && owned[t] > 0 {
					owned[t]--
					if owned[t] == 0 {
						t.Release()
					}
				}
			}
		}
	}
	res := map[string]*value{}
	err := tensor.Try(func() {
		for _, name := range p.outputs {
			v := env[name]
			v.upload(p.dev)
			res[name] = v
		}
	})
	if err != nil {
		return nil, fmt.Errorf("onnx: run %s: %w", p.path, err)
	}
	return res, nil
}

// checkInput checks t against the graph input's declared type.
func checkInput(in *ValueInfoProto, t *tensor.Tensor) error {
	if t == nil {
		return fmt.Errorf("%w: input %q is nil", tensor.ErrArgument, in.Name)
	}
	if t.Released() {
		return fmt.Errorf("%w: input %q was released", tensor.ErrReleased, in.Name)
	}
	if in.Type == nil || in.Type.Kind != "tensor" {
		return nil
	}
	if in.Type.ElemType != TypeUndefined {
		want, err := kilnDType(in.Type.ElemType)
		if err == nil && want != t.DType() {
			return fmt.Errorf("%w: input %q is %s, the model wants %s (%s)", tensor.ErrDType, in.Name, t.DType(), want, DataTypeName(in.Type.ElemType))
		}
	}
	if !in.Type.HasShape {
		return nil
	}
	shape := t.Shape()
	if len(shape) != len(in.Type.Shape) {
		return fmt.Errorf("%w: input %q has shape %v, the model wants %s", tensor.ErrShape, in.Name, shape, dimsString(in.Type.Shape))
	}
	for i, d := range in.Type.Shape {
		if d.HasValue && int64(shape[i]) != d.Value {
			return fmt.Errorf("%w: input %q has shape %v, the model wants %s (dimension %d is fixed)", tensor.ErrShape, in.Name, shape, dimsString(in.Type.Shape), i)
		}
	}
	return nil
}

func dimsString(ds []Dim) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// addSteps appends a step for each node of order (sorted) and loads the
// subgraphs of control-flow nodes among them.
func (p *plan) addSteps(order []*NodeProto) error {
	for i, n := range order {
		s := &step{node: n, def: ops[n.OpType], attrs: map[string]*AttributeProto{}, index: i}
		for _, a := range n.Attributes {
			s.attrs[a.Name] = a
		}
		p.steps = append(p.steps, s)
	}
	return p.loadSubgraphs()
}

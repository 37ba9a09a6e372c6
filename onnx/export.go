package onnx

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Export traces one forward pass and writes it as ONNX: every op Kiln
// records on the autodiff tape becomes one or a few ONNX nodes.

// ExportOpset is the default-domain opset Export writes.
const ExportOpset = 17

// ErrExport reports a model Export cannot write: an op with no ONNX
// translation, a constant the forward pass built and released before
// Export could read it, or one it computed from the input's values outside
// the graph.
var ErrExport = errors.New("cannot export to ONNX")

// Export runs model.Forward on example in evaluation mode (restoring the
// model's mode afterwards), records the ops it applies, and writes them to
// path as an ONNX model (opset 17) with the model's parameters and buffers
// as initializers named by their dotted names (so onnx.Load gives them
// back under the same names). The graph's input is "input" and its output
// "output"; the first dimension is the symbolic "batch" wherever the
// traced shapes carry the example's batch size through, so the exported
// model runs on other batch sizes. Shapes are otherwise those of the
// trace, as with torch.onnx.export. The example is a float tensor, or an
// int64 or int32 tensor of token ids for a model whose first layer is an
// embedding (the graph input then has that integer type). Models of
// several inputs, losses (a prediction and a target) and training-mode
// graphs are written by ExportFunction.
//
// Constants the forward pass builds (a reshaped running statistic, a
// recurrent layer's zero initial state, a mask) are written as
// initializers at their traced shapes, as torch.onnx.export does: a
// constant whose shape holds the batch size ties the graph to the traced
// batch size, and recurrent layers are unrolled over the traced length.
//
// The examples are traced (tensor.TraceInput): the ops that carry no
// gradient are recorded too when they use the input, so comparisons and
// the masks and Where selections built on them, logical ops, integer
// casts and arithmetic, OneHot, Any/All and Detach (an Identity) are
// written as nodes and computed by the file. A constant computed from the
// input's values outside the graph (values read to the host, a random
// mask) would freeze this example's values into the file: Export runs
// Forward a second time on random values of the example's shape and
// refuses when the constants differ.
//
// It returns an error wrapping ErrExport for ops without an ONNX
// translation, listing each with the dotted path of the module whose
// Forward ran it (`op "cumprod" in module "encoder.layers.1.mlp" has no
// ONNX form`; the path is found from the call stack while tracing, see
// export_scope.go), for a constant released before Export
// could read it and for a constant computed from the input's values, and
// the tensor error of a Forward that fails. The file is
// written to a temporary name and renamed into place.
func Export(model nn.Module, example *tensor.Tensor, path string) error {
	if model == nil || example == nil {
		return fmt.Errorf("onnx: export %s: %w: nil model or example", path, tensor.ErrArgument)
	}
	mp, err := Trace(model, example)
	if err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	if err := writeAtomic(path, Encode(mp)); err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	return nil
}

// Trace is Export without the file: it returns the traced model.
func Trace(model nn.Module, example *tensor.Tensor) (mp *ModelProto, err error) {
	if model == nil || example == nil {
		return nil, fmt.Errorf("%w: nil model or example", tensor.ErrArgument)
	}
	return TraceFunction(func(xs []*tensor.Tensor) *tensor.Tensor { return model.Forward(xs[0]) }, model,
		[]*tensor.Tensor{example}, ExportOptions{})
}

// ExportOptions configures ExportFunction and TraceFunction; the zero
// value traces in evaluation mode with inputs named "input" (one) or
// "input0", "input1", … (several).
type ExportOptions struct {
	// Opset is the default-domain opset to write: ExportOpset (17) when
	// 0, up to MaxExportOpset (21); see export_opset.go for the forms that
	// change with it. onnx.checker in Debian's onnx 1.12 knows opsets up
	// to 17 only.
	Opset int `json:"opset,omitempty"`
	// InputNames names the graph inputs, one per example.
	InputNames []string `json:"input_names,omitempty"`
	// Training traces the model in training mode, as torch.onnx.export's
	// TrainingMode.TRAINING: batch normalisation normalises by the batch's
	// own mean and variance (ReduceMean and variance nodes). The running
	// statistics a training-mode forward pass would update are not part of
	// the graph's output: the file computes the normalised output only, and
	// the traced passes leave the model's buffers as they found them.
	// Random layers (dropout) are refused in training mode: their masks
	// differ from one pass to the next.
	Training bool `json:"training,omitempty"`
}

// ExportFunction traces fn on examples and writes it to path as ONNX, as
// Export does for one module: each example becomes a graph input (named
// by opts.InputNames, else "input" for one and "input0", "input1", … for
// several), fn's result the output "output". model, which may be nil,
// holds the parameters and buffers fn uses: they become initializers under
// their dotted names, and model is traced in evaluation mode (training
// mode with opts.Training) and put back in its mode afterwards. Anything
// else fn uses (a class-weight tensor, a mask) is written as a constant.
//
// It is how a loss is exported: fn takes the prediction and the target and
// returns the loss (a scalar for the mean and sum reductions); the masks
// and class indices a loss computes from its target, and the detached
// copies behind its gradients, are traced as Export says. Integer
// examples (int64 or int32: token ids, class indices) become integer graph
// inputs; the second pass that looks for input-dependent constants feeds
// them the example's own values rotated by one position, so ids stay
// within an embedding's range and class indices within the classes (an
// integer example whose values are all the same cannot show such a
// constant: give one with different values). An example whose values no
// recorded op reads is still a graph input. When every example is an
// integer tensor, model's float parameters are made to record the ops that
// use them for the trace (nothing would record otherwise).
//
// It fails as Export does, and with tensor.ErrArgument for no examples, a
// nil example or a name count that differs from the example count, and
// tensor.ErrDType for an example that is neither float nor int64 or int32,
// and tensor.ErrArgument for an opts.Opset outside 17 to 21.
func ExportFunction(fn func(inputs []*tensor.Tensor) *tensor.Tensor, model any, examples []*tensor.Tensor, path string, opts ExportOptions) error {
	mp, err := TraceFunction(fn, model, examples, opts)
	if err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	if err := writeAtomic(path, Encode(mp)); err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	return nil
}

// TraceFunction is ExportFunction without the file: it returns the traced
// model.
func TraceFunction(fn func(inputs []*tensor.Tensor) *tensor.Tensor, model any, examples []*tensor.Tensor, opts ExportOptions) (mp *ModelProto, err error) {
	names, err := inputNames(fn, examples, opts)
	if err != nil {
		return nil, err
	}
	opset, err := exportOpset(opts)
	if err != nil {
		return nil, err
	}
	if model != nil {
		restore, err := setTraceMode(model, opts.Training)
		if err != nil {
			return nil, err
		}
		defer func() {
			if e := restore(); e != nil && err == nil {
				err = e
			}
		}()
	}
	if model != nil && !anyFloat(examples) {
		restore, err := recordParams(model)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	named := map[*tensor.Tensor]string{}
	if model != nil {
		for _, np := range append(nn.Params(model), nn.Buffers(model)...) {
			named[np.Param.Tensor] = np.Name
		}
	}
	var tr *tracer
	err = tensor.Try(func() {
		tensor.Scope(func() {
			xs := make([]*tensor.Tensor, len(examples))
			for i, e := range examples {
				x := e.Detach().ToDevice(e.Device().Autodiff())
				if x.DType().IsFloat() {
					x.RequireGrad()
				}
				// Record the ops that carry no gradient too (masks,
				// class indices, detached copies).
				xs[i] = x.TraceInput()
			}
			var y *tensor.Tensor
			scopes := withModuleScopes(model, func() { y = fn(xs) })
			if y == nil {
				panic(&tensor.Error{Op: "onnx.Export", Msg: "the forward pass returned no tensor", Err: ErrExport})
			}
			root := y.Node()
			inputs := map[*autodiff.Node]int{}
			for i, x := range xs {
				if n := x.Node(); n != nil {
					inputs[n] = i
				}
			}
			if _, isInput := inputs[root]; root == nil || isInput {
				panic(&tensor.Error{Op: "onnx.Export", Msg: "the output does not depend on the input through any recorded op", Err: ErrExport})
			}
			leaves := map[*autodiff.Node]*tensor.Tensor{}
			for t := range named {
				if n := t.Node(); n != nil {
					leaves[n] = t
				}
			}
			tr = &tracer{inputs: inputs, inputNames: names, examples: examples, batch: examples[0].Shape(), named: named, leaves: leaves,
				names: map[*autodiff.Node]string{}, batched: map[*autodiff.Node]bool{}, flat: map[*autodiff.Node]bool{}, scopes: scopes, opset: opset}
			tr.build(root)
			if tr.err == nil && len(tr.missing) == 0 {
				tr.err = checkConstants(fn, xs, root, inputs, leaves)
			}
		})
	})
	if err != nil {
		return nil, err
	}
	if len(tr.missing) > 0 {
		return nil, tr.missingError()
	}
	if tr.err != nil {
		return nil, tr.err
	}
	return &ModelProto{IRVersion: 8, ProducerName: "kiln", Graph: tr.g,
		OpsetImports: []OperatorSetID{{Domain: "", Version: int64(tr.opset)}}}, nil
}

// inputNames checks the examples and returns the graph inputs' names.
func inputNames(fn func([]*tensor.Tensor) *tensor.Tensor, examples []*tensor.Tensor, opts ExportOptions) ([]string, error) {
	if fn == nil || len(examples) == 0 {
		return nil, fmt.Errorf("%w: no forward function or no example input", tensor.ErrArgument)
	}
	for i, e := range examples {
		if e == nil {
			return nil, fmt.Errorf("%w: example input %d is nil", tensor.ErrArgument, i)
		}
		if e.Released() {
			return nil, fmt.Errorf("%w: example input %d was released", tensor.ErrReleased, i)
		}
		if dt := e.DType(); !dt.IsFloat() && dt != tensor.Int64 && dt != tensor.Int32 {
			return nil, fmt.Errorf("%w: example input %d is %s: Export traces float, int64 and int32 inputs", tensor.ErrDType, i, dt)
		}
	}
	names := opts.InputNames
	switch {
	case len(names) == 0 && len(examples) == 1:
		names = []string{"input"}
	case len(names) == 0:
		for i := range examples {
			names = append(names, fmt.Sprintf("input%d", i))
		}
	case len(names) != len(examples):
		return nil, fmt.Errorf("%w: %d input names for %d example inputs", tensor.ErrArgument, len(names), len(examples))
	}
	seen := map[string]bool{"output": true}
	for _, n := range names {
		if n == "" || seen[n] {
			return nil, fmt.Errorf("%w: input name %q is empty, repeated or \"output\"", tensor.ErrArgument, n)
		}
		seen[n] = true
	}
	return names, nil
}

// setTraceMode puts model in training or evaluation mode and returns the
// function that puts it back. In training mode, which updates running
// statistics, it also snapshots the buffers and restores their values.
func setTraceMode(model any, training bool) (restore func() error, err error) {
	was := nn.IsTraining(model)
	var saved []*tensor.Tensor
	var buffers []nn.NamedParam
	err = tensor.Try(func() {
		if !training {
			nn.Eval(model)
			return
		}
		nn.Train(model)
		tensor.NoScope(func() {
			buffers = nn.Buffers(model)
			for _, b := range buffers {
				saved = append(saved, tensor.ZerosLike(b.Param.Tensor.Detach()).Assign(b.Param.Tensor.Detach()))
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		return tensor.Try(func() {
			for i, b := range buffers {
				b.Param.Tensor.Detach().Assign(saved[i])
				saved[i].Release()
			}
			if was != training {
				if was {
					nn.Train(model)
				} else {
					nn.Eval(model)
				}
			}
		})
	}, nil
}

func anyFloat(xs []*tensor.Tensor) bool {
	for _, x := range xs {
		if x.DType().IsFloat() {
			return true
		}
	}
	return false
}

// recordParams makes model's floating-point parameters record the ops
// that use them, for a trace whose inputs are all integers (token ids):
// nothing would record otherwise, since only floats require gradients.
// Each parameter is swapped for a view on its device's autodiff view that
// requires gradients; restore puts the original tensors back.
func recordParams(model any) (restore func(), err error) {
	type swap struct {
		p    *nn.Param
		orig *tensor.Tensor
	}
	var swaps []swap
	restore = func() {
		for _, s := range swaps {
			s.p.Tensor = s.orig
		}
	}
	err = tensor.Try(func() {
		tensor.NoScope(func() {
			for _, np := range nn.Params(model) {
				t := np.Param.Tensor
				if t == nil || !t.DType().IsFloat() || t.RequiresGrad() {
					continue
				}
				v := t.Detach().ToDevice(t.Device().Autodiff())
				v.RequireGrad()
				swaps = append(swaps, swap{np.Param, t})
				np.Param.Tensor = v
			}
		})
	})
	if err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// constantsOf lists, in the graph's order, the constants the forward pass
// built (leaves that are neither inputs nor named tensors).
func constantsOf(root *autodiff.Node, inputs map[*autodiff.Node]int, leaves map[*autodiff.Node]*tensor.Tensor) []*tensor.Tensor {
	var out []*tensor.Tensor
	autodiff.Walk([]*autodiff.Node{root}, func(n *autodiff.Node) {
		if _, isInput := inputs[n]; n.Leaf && !isInput && leaves[n] == nil {
			c, _ := n.Const.(*tensor.Tensor)
			out = append(out, c)
		}
	})
	return out
}

// otherValues returns a tensor of x's shape, dtype and device holding
// other values: normal ones for floats, and for integers x's own values
// rotated by one position (so indices stay valid for the layer that reads
// them, and differ unless they are all the same).
func otherValues(x *tensor.Tensor) *tensor.Tensor {
	if x.DType().IsFloat() {
		o := tensor.RandnLike(x.Detach()).Detach()
		o.RequireGrad()
		return o.TraceInput()
	}
	vals := x.Int64s()
	n := len(vals)
	if n == 0 {
		return x.Detach()
	}
	// A rotation by one differs from vals unless every value is the same.
	out := make([]int64, n)
	for i := range out {
		out[i] = vals[(i+1)%n]
	}
	o := tensor.FromInt64s(tensor.CPU(), out, x.Shape()...)
	if x.DType() != tensor.Int64 {
		o = o.To(x.DType())
	}
	return o.ToDevice(x.Device()).TraceInput()
}

// checkConstants runs the forward pass again on other values of the
// examples' shapes and refuses the export when the constants it builds
// differ: such a constant was computed from the input outside the graph
// (values or indices read to the host, a random mask), and the ONNX file would
// hold this example's values instead of computing them.
func checkConstants(fn func([]*tensor.Tensor) *tensor.Tensor, xs []*tensor.Tensor, root *autodiff.Node, inputs map[*autodiff.Node]int, leaves map[*autodiff.Node]*tensor.Tensor) error {
	first := constantsOf(root, inputs, leaves)
	if len(first) == 0 {
		return nil
	}
	others := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		others[i] = otherValues(x)
	}
	y := fn(others)
	if y == nil || y.Node() == nil {
		return fmt.Errorf("%w: the forward pass builds its graph from the input's values (a second example gave no graph)", ErrExport)
	}
	otherInputs := map[*autodiff.Node]int{}
	for i, o := range others {
		if n := o.Node(); n != nil {
			otherInputs[n] = i
		}
	}
	second := constantsOf(y.Node(), otherInputs, leaves)
	if len(second) != len(first) {
		return fmt.Errorf("%w: the forward pass builds a different graph for other input values (%d constants, then %d): it reads the input's data outside the graph", ErrExport, len(first), len(second))
	}
	for i, c := range first {
		d := second[i]
		if c == nil || d == nil {
			continue
		}
		if fmt.Sprint(c.Shape()) != fmt.Sprint(d.Shape()) || string(c.Bytes()) != string(d.Bytes()) {
			return fmt.Errorf("%w: a %s constant of shape %v that the forward pass computes from the input's values outside the graph (values or indices read to the host, a random mask): the ONNX file would hold this example's values", ErrExport, c.DType(), c.Shape())
		}
	}
	return nil
}

// tracer turns recorded nodes into an ONNX graph.
type tracer struct {
	inputs     map[*autodiff.Node]int // graph inputs, by example index
	inputNames []string
	examples   []*tensor.Tensor
	scopes     *scopeTracker    // the module methods each op ran in; nil without a model
	order      []*autodiff.Node // the graph's ops, in recording order
	unwritten  []missingOp      // the ops without a translation
	batch      []int
	named      map[*tensor.Tensor]string
	leaves     map[*autodiff.Node]*tensor.Tensor
	names      map[*autodiff.Node]string
	batched    map[*autodiff.Node]bool // first dimension is the input's batch
	// flat marks nodes whose first dimension is the batch times a size (a
	// batched tensor reshaped to [-1] or [-1, d]), so that reshaping them
	// back writes -1 there instead of the traced size.
	flat    map[*autodiff.Node]bool
	g       *GraphProto
	missing map[string]int
	err     error
	consts  int
	inits   map[string]bool
	opset   int // the default-domain opset written
}

func (tr *tracer) build(root *autodiff.Node) {
	tr.g = &GraphProto{Name: "kiln"}
	tr.missing = map[string]int{}
	tr.inits = map[string]bool{}
	autodiff.Walk([]*autodiff.Node{root}, func(n *autodiff.Node) {
		if tr.err != nil {
			return
		}
		if n.Leaf {
			tr.leaf(n)
			return
		}
		tr.names[n] = fmt.Sprintf("%s_%d", n.Op, n.ID)
		tr.order = append(tr.order, n)
		before := maps.Clone(tr.missing)
		tr.op(n)
		for label, c := range tr.missing {
			if c != before[label] {
				tr.unwritten = append(tr.unwritten, missingOp{n, label})
			}
		}
	})
	if tr.err != nil || len(tr.missing) > 0 {
		return
	}
	// An example the graph does not read stays an input, so that the
	// file's signature is the function's.
	have := map[string]bool{}
	for _, v := range tr.g.Inputs {
		have[v.Name] = true
	}
	for i, name := range tr.inputNames {
		if !have[name] {
			tr.g.Inputs = append(tr.g.Inputs, tr.exampleInfo(name, tr.examples[i]))
		}
	}
	sort.SliceStable(tr.g.Inputs, func(i, j int) bool { return tr.inputIndex(tr.g.Inputs[i].Name) < tr.inputIndex(tr.g.Inputs[j].Name) })
	out := tr.names[root]
	tr.g.Nodes = append(tr.g.Nodes, &NodeProto{OpType: "Identity", Name: "output", Inputs: []string{out}, Outputs: []string{"output"}})
	tr.g.Outputs = []*ValueInfoProto{tr.valueInfo("output", root, tr.batched[root])}
}

// inputIndex is the example index of the graph input named name.
func (tr *tracer) inputIndex(name string) int {
	for i, n := range tr.inputNames {
		if n == name {
			return i
		}
	}
	return len(tr.inputNames)
}

// exampleInfo describes a graph input from its example tensor.
func (tr *tracer) exampleInfo(name string, x *tensor.Tensor) *ValueInfoProto {
	t := &TypeProto{Kind: "tensor", ElemType: onnxDType(x.DType()), HasShape: true}
	for i, d := range x.Shape() {
		if i == 0 && len(tr.batch) > 0 && d == tr.batch[0] {
			t.Shape = append(t.Shape, Dim{Param: "batch"})
		} else {
			t.Shape = append(t.Shape, Dim{Value: int64(d), HasValue: true})
		}
	}
	return &ValueInfoProto{Name: name, Type: t}
}

func (tr *tracer) valueInfo(name string, n *autodiff.Node, batched bool) *ValueInfoProto {
	dt, _ := backends.ParseDType(n.DType)
	t := &TypeProto{Kind: "tensor", ElemType: onnxDType(dt), HasShape: true}
	for i, d := range n.Shape {
		if i == 0 && batched {
			t.Shape = append(t.Shape, Dim{Param: "batch"})
		} else {
			t.Shape = append(t.Shape, Dim{Value: int64(d), HasValue: true})
		}
	}
	return &ValueInfoProto{Name: name, Type: t}
}

func (tr *tracer) leaf(n *autodiff.Node) {
	if i, isInput := tr.inputs[n]; isInput {
		name := tr.inputNames[i]
		tr.names[n] = name
		// Every input whose first dimension is the first example's is
		// batched.
		tr.batched[n] = len(n.Shape) > 0 && len(tr.batch) > 0 && n.Shape[0] == tr.batch[0]
		tr.g.Inputs = append(tr.g.Inputs, tr.valueInfo(name, n, tr.batched[n]))
		return
	}
	t, ok := tr.leaves[n]
	if !ok {
		// A constant the forward pass built (a reshaped running
		// statistic, an initial state, a mask) is written as an
		// initializer at its traced shape, as torch.onnx.export does.
		c, isTensor := n.Const.(*tensor.Tensor)
		if !isTensor {
			tr.err = fmt.Errorf("%w: the forward pass used a %s tensor of shape %v that is neither the input nor a parameter or buffer of the model",
				ErrExport, n.DType, n.Shape)
			return
		}
		tr.consts++
		name := fmt.Sprintf("const_%d", tr.consts)
		var p *TensorProto
		if err := tensor.Try(func() { p = tensorProto(name, c) }); err != nil {
			tr.err = fmt.Errorf("%w: a %s constant of shape %v that the forward pass built: %w", ErrExport, n.DType, n.Shape, err)
			return
		}
		tr.names[n] = name
		tr.g.Initializers = append(tr.g.Initializers, p)
		return
	}
	name := tr.named[t]
	tr.names[n] = name
	tr.g.Initializers = append(tr.g.Initializers, tensorProto(name, t))
}

// tensorProto copies t's elements into an initializer.
func tensorProto(name string, t *tensor.Tensor) *TensorProto {
	dims := make([]int64, t.Dims())
	for i, d := range t.Shape() {
		dims[i] = int64(d)
	}
	return &TensorProto{Name: name, Dims: dims, DataType: onnxDType(t.DType()), RawData: t.Bytes()}
}

// constant adds a small initializer holding values of dtype dt.
func (tr *tracer) constant(dt string, shape []int, values ...float64) string {
	tr.consts++
	name := fmt.Sprintf("const_%d", tr.consts)
	d, _ := backends.ParseDType(dt)
	h := newHost(d, shape)
	for i, v := range values {
		h.set(i, v)
	}
	return tr.hostInit(name, h)
}

func (tr *tracer) ints(values ...int) string {
	tr.consts++
	name := fmt.Sprintf("const_%d", tr.consts)
	v := make([]int64, len(values))
	for i, x := range values {
		v[i] = int64(x)
	}
	return tr.hostInit(name, hostInts(v))
}

func (tr *tracer) hostInit(name string, h *hostTensor) string {
	var t *TensorProto
	tensor.NoScope(func() {
		d := h.device(tensor.CPU())
		t = tensorProto(name, d)
		d.Release()
	})
	tr.g.Initializers = append(tr.g.Initializers, t)
	return name
}

func (tr *tracer) emit(op string, ins []string, out string, attrs ...*AttributeProto) {
	tr.g.Nodes = append(tr.g.Nodes, &NodeProto{OpType: op, Name: out, Inputs: ins, Outputs: []string{out}, Attributes: attrs})
}

// tmp returns a fresh intermediate name for node n.
func (tr *tracer) tmp(n *autodiff.Node, what string) string {
	tr.consts++
	return fmt.Sprintf("%s_%d_%s%d", n.Op, n.ID, what, tr.consts)
}

func aInts(name string, v ...int) *AttributeProto {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return &AttributeProto{Name: name, Type: AttrInts, Ints: out}
}

func aInt(name string, v int) *AttributeProto {
	return &AttributeProto{Name: name, Type: AttrInt, I: int64(v)}
}

func aFloat(name string, v float64) *AttributeProto {
	return &AttributeProto{Name: name, Type: AttrFloat, F: float32(v)}
}

func attrI(n *autodiff.Node, key string) int {
	switch v := n.Attrs[key].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func attrIs(n *autodiff.Node, key string) []int {
	v, _ := n.Attrs[key].([]int)
	return v
}

func attrF(n *autodiff.Node, key string, def float64) float64 {
	if v, ok := n.Attrs[key].(float64); ok {
		return v
	}
	return def
}

var unaryExport = map[string]string{
	"neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "reciprocal": "Reciprocal",
	"erf": "Erf", "sin": "Sin", "cos": "Cos", "tan": "Tan", "tanh": "Tanh", "relu": "Relu", "sigmoid": "Sigmoid",
	"floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign", "selu": "Selu", "hard_swish": "HardSwish",
	"softsign": "Softsign", "to_device": "Identity", "contiguous": "Identity",
	"asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh",
	"acosh": "Acosh", "atanh": "Atanh",
}

var binaryExport = map[string]string{
	"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max", "minimum": "Min",
	"matmul": "MatMul",
}

// exporters holds translations registered by name from the files beside
// this one (export_*.go), each in its own init: fn emits the ONNX nodes for
// node n, whose output is named out and inputs in (the names of
// n.Inputs), and says whether n keeps the batch dimension of its first
// input (the tracer's guess, keepsBatch, is passed in).
var exporters = map[string]func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool{}

// registerExport adds the translation of the autodiff op named op; a name
// registered twice is a programming error.
func registerExport(op string, fn func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool) {
	if _, dup := exporters[op]; dup {
		panic("onnx: export translation registered twice: " + op)
	}
	exporters[op] = fn
}

// op translates one recorded node.
func (tr *tracer) op(n *autodiff.Node) {
	out := tr.names[n]
	in := make([]string, len(n.Inputs))
	for i, x := range n.Inputs {
		in[i] = tr.names[x]
	}
	var x *autodiff.Node
	if len(n.Inputs) > 0 {
		x = n.Inputs[0]
	}
	// The batch dimension survives ops that keep the first dimension's size
	// and, for the ones that mix axes, leave axis 0 alone.
	keepsBatch := x != nil && tr.batched[x] && len(n.Shape) > 0 && len(x.Shape) > 0 && n.Shape[0] == x.Shape[0]
	tr.batched[n] = keepsBatch
	if fn := exporters[n.Op]; fn != nil {
		tr.batched[n] = fn(tr, n, in, out, keepsBatch)
		tr.keepFlat(n)
		return
	}
	defer tr.keepFlat(n)
	scalar := func() float64 { return attrF(n, "scalar", 0) }
	if elementwiseExport(n.Op) {
		// Kiln promotes mixed operands (an integer target and a float
		// prediction, true division of integers); ONNX wants them
		// converted first.
		for i, o := range n.Inputs {
			in[i] = tr.castTo(n, in[i], o.DType, n.DType)
		}
		if x != nil && x.DType != n.DType {
			// The constants below take the dtype of the (converted) input.
			x = &autodiff.Node{DType: n.DType, Shape: x.Shape}
		}
	}
	switch op := n.Op; {
	case unaryExport[op] != "":
		tr.emit(unaryExport[op], in[:1], out)
	case binaryExport[op] != "" && len(n.Inputs) == 2: // pow of a constant exponent has one input
		tr.emit(binaryExport[op], in[:2], out)
		// Either operand's batch dimension is the output's when their
		// ranks align (broadcasting pads on the left).
		tr.batched[n] = false
		for _, o := range n.Inputs[:2] {
			if tr.batched[o] && len(o.Shape) == len(n.Shape) && n.Shape[0] == o.Shape[0] {
				tr.batched[n] = true
			}
		}
	case op == "add_scalar", op == "mul_scalar", op == "div_scalar":
		c := tr.constant(x.DType, []int{}, scalar())
		tr.emit(map[string]string{"add_scalar": "Add", "mul_scalar": "Mul", "div_scalar": "Div"}[op], []string{in[0], c}, out)
	case op == "square":
		tr.emit("Mul", []string{in[0], in[0]}, out)
	case op == "rsqrt":
		s := tr.tmp(n, "sqrt")
		tr.emit("Sqrt", in[:1], s)
		tr.emit("Reciprocal", []string{s}, out)
	case op == "log1p":
		a := tr.tmp(n, "add")
		tr.emit("Add", []string{in[0], tr.constant(x.DType, []int{}, 1)}, a)
		tr.emit("Log", []string{a}, out)
	case op == "leaky_relu":
		tr.emit("LeakyRelu", in[:1], out, aFloat("alpha", attrF(n, "p0", 0.01)))
	case op == "elu":
		tr.emit("Elu", in[:1], out, aFloat("alpha", attrF(n, "p0", 1)))
	case op == "celu":
		tr.emit("Celu", in[:1], out, aFloat("alpha", attrF(n, "p0", 1)))
	case op == "hard_sigmoid":
		tr.emit("HardSigmoid", in[:1], out, aFloat("alpha", 1.0/6), aFloat("beta", 0.5))
	case op == "relu6":
		tr.emit("Clip", []string{in[0], tr.constant(x.DType, []int{}, 0), tr.constant(x.DType, []int{}, 6)}, out)
	case op == "clamp":
		lo, hi := "", ""
		if v, ok := n.Attrs["min"].(float64); ok {
			lo = tr.constant(x.DType, []int{}, v)
		}
		if v, ok := n.Attrs["max"].(float64); ok {
			hi = tr.constant(x.DType, []int{}, v)
		}
		tr.emit("Clip", []string{in[0], lo, hi}, out)
	case op == "pow" && len(n.Inputs) == 1:
		tr.emit("Pow", []string{in[0], tr.constant(x.DType, []int{}, attrF(n, "p0", 1))}, out)
	case op == "silu":
		s := tr.tmp(n, "sigmoid")
		tr.emit("Sigmoid", in[:1], s)
		tr.emit("Mul", []string{in[0], s}, out)
	case op == "gelu":
		// 0.5·x·(1 + erf(x/√2)): opset 17 has no Gelu.
		d, e, a, m := tr.tmp(n, "div"), tr.tmp(n, "erf"), tr.tmp(n, "add"), tr.tmp(n, "mul")
		tr.emit("Div", []string{in[0], tr.constant(x.DType, []int{}, math.Sqrt2)}, d)
		tr.emit("Erf", []string{d}, e)
		tr.emit("Add", []string{e, tr.constant(x.DType, []int{}, 1)}, a)
		tr.emit("Mul", []string{in[0], a}, m)
		tr.emit("Mul", []string{m, tr.constant(x.DType, []int{}, 0.5)}, out)
	case op == "softplus" && attrF(n, "p0", 1) == 1:
		tr.emit("Softplus", in[:1], out)
	case op == "linear":
		w := n.Inputs[1]
		if len(x.Shape) == 2 {
			tr.emit("Gemm", in, out, aInt("transB", 1))
			return
		}
		wt := tr.tmp(n, "wt")
		tr.emit("Transpose", []string{tr.names[w]}, wt, aInts("perm", 1, 0))
		if len(in) == 2 {
			tr.emit("MatMul", []string{in[0], wt}, out)
			return
		}
		mm := tr.tmp(n, "matmul")
		tr.emit("MatMul", []string{in[0], wt}, mm)
		tr.emit("Add", []string{mm, in[2]}, out)
	case op == "conv1d" || op == "conv2d":
		k := n.Inputs[1].Shape[2:]
		tr.emit("Conv", in, out, aInts("kernel_shape", k...), aInts("strides", attrIs(n, "stride")...),
			aInts("pads", attrIs(n, "padding")...), aInts("dilations", attrIs(n, "dilation")...), aInt("group", max(attrI(n, "groups"), 1)))
	case op == "max_pool1d" || op == "max_pool2d":
		p := attrIs(n, "padding")
		tr.emit("MaxPool", in[:1], out, aInts("kernel_shape", attrIs(n, "kernel")...), aInts("strides", attrIs(n, "stride")...),
			aInts("pads", append(append([]int{}, p...), p...)...), aInts("dilations", attrIs(n, "dilation")...), aInt("ceil_mode", attrI(n, "ceil_mode")))
	case (op == "avg_pool1d" || op == "avg_pool2d") && attrI(n, "divisor_override") == 0:
		p := attrIs(n, "padding")
		tr.emit("AveragePool", in[:1], out, aInts("kernel_shape", attrIs(n, "kernel")...), aInts("strides", attrIs(n, "stride")...),
			aInts("pads", append(append([]int{}, p...), p...)...), aInt("ceil_mode", attrI(n, "ceil_mode")),
			aInt("count_include_pad", attrI(n, "count_include_pad")))
	case (op == "adaptive_avg_pool2d" || op == "adaptive_avg_pool1d") && allOnes(attrIs(n, "output_size")) && len(x.Shape) >= 3:
		tr.emit("GlobalAveragePool", in[:1], out)
	case op == "softmax" || op == "log_softmax":
		tr.emit(map[string]string{"softmax": "Softmax", "log_softmax": "LogSoftmax"}[op], in[:1], out, aInt("axis", attrI(n, "dim")))
	case op == "layer_norm":
		ns := attrIs(n, "normalized_shape")
		ins := append([]string{}, in...)
		if len(ins) == 1 {
			ins = append(ins, tr.constant(x.DType, ns, onesOf(ns)...))
		}
		tr.emit("LayerNormalization", ins, out, aInt("axis", -len(ns)), aFloat("epsilon", attrF(n, "eps", 1e-5)))
	case op == "reshape" || op == "flatten" || op == "unflatten" || op == "squeeze" || op == "unsqueeze":
		shape := append([]int{}, n.Shape...)
		switch b := tr.batchSize(); {
		case keepsBatch:
			shape[0] = 0 // copy the input's (symbolic) batch size
		case (tr.batched[x] || tr.flat[x]) && len(shape) > 0 && b > 1 && shape[0] > 0 && shape[0]%b == 0:
			// The batch merged into the first dimension, or split out of
			// it again: let Reshape infer that dimension.
			tr.batched[n], tr.flat[n] = shape[0] == b, shape[0] != b
			shape[0] = -1
		}
		tr.emit("Reshape", []string{in[0], tr.ints(shape...)}, out)
	case op == "permute":
		perm := attrIs(n, "perm")
		tr.emit("Transpose", in[:1], out, aInts("perm", perm...))
		tr.batched[n] = tr.batched[x] && len(perm) > 0 && perm[0] == 0
	case op == "transpose":
		d := attrIs(n, "dims")
		perm := make([]int, len(x.Shape))
		for i := range perm {
			perm[i] = i
		}
		if len(d) == 2 {
			// The dims are recorded as the caller gave them: -1 is the last.
			a, b := d[0], d[1]
			if a < 0 {
				a += len(perm)
			}
			if b < 0 {
				b += len(perm)
			}
			perm[a], perm[b] = perm[b], perm[a]
		}
		tr.emit("Transpose", in[:1], out, aInts("perm", perm...))
		tr.batched[n] = tr.batched[x] && perm[0] == 0
	case op == "expand":
		tr.emit("Expand", []string{in[0], tr.ints(n.Shape...)}, out)
		tr.batched[n] = false
	case op == "cat":
		tr.emit("Concat", in, out, aInt("axis", attrI(n, "dim")))
		tr.batched[n] = keepsBatch && attrI(n, "dim") != 0
	case op == "sum" || op == "mean":
		axes := attrIs(n, "axes")
		keep := attrI(n, "keepdim")
		tr.reduce(map[string]string{"sum": "ReduceSum", "mean": "ReduceMean"}[op], in[0], out, axes, keep)
		tr.batched[n] = keepsBatch && !contains(axes, 0) && len(axes) > 0
	case op == "cast":
		dt, err := backends.ParseDType(fmt.Sprint(n.Attrs["dtype"]))
		if err != nil {
			tr.missing[op]++
			return
		}
		tr.emit("Cast", in[:1], out, aInt("to", int(onnxDType(dt))))
	case op == "narrow" || op == "slice":
		dim, start := attrI(n, "dim"), attrI(n, "start")
		length, step := attrI(n, "length"), 1
		if op == "slice" {
			step = attrI(n, "step")
		}
		end := start + length*step
		if step < 0 && end < 0 {
			end = math.MinInt32
		}
		tr.emit("Slice", []string{in[0], tr.ints(start), tr.ints(end), tr.ints(dim), tr.ints(step)}, out)
		tr.batched[n] = keepsBatch && dim != 0
	case op == "select":
		dim, idx := attrI(n, "dim"), attrI(n, "index")
		tr.emit("Gather", []string{in[0], tr.hostInit(tr.tmp(n, "index"), &hostTensor{dtype: tensor.Int64, shape: []int{}, i: []int64{int64(idx)}})}, out, aInt("axis", dim))
		tr.batched[n] = keepsBatch && dim != 0
	case op == "embedding":
		tr.emit("Gather", []string{in[0], in[1]}, out)
		tr.batched[n] = tr.batched[n.Inputs[1]]
	default:
		tr.missing[op]++
	}
}

// batchSize is the traced batch size (0 without one).
func (tr *tracer) batchSize() int {
	if len(tr.batch) == 0 {
		return 0
	}
	return tr.batch[0]
}

// keepFlat marks the output of an element-wise op flat (see tracer.flat)
// when an input of the output's rank and first dimension is.
func (tr *tracer) keepFlat(n *autodiff.Node) {
	if tr.batched[n] || tr.flat[n] || len(n.Shape) == 0 {
		return
	}
	switch op := n.Op; {
	case elementwiseExport(op), compareExport[strings.TrimSuffix(op, "_scalar")] != "", op == "where", op == "cast", op == "detach",
		op == "logical_and", op == "logical_or", op == "logical_xor", op == "logical_not", op == "one_hot", op == "gather":
	default:
		return
	}
	for _, in := range n.Inputs {
		if in != nil && tr.flat[in] && len(in.Shape) == len(n.Shape) && in.Shape[0] == n.Shape[0] {
			tr.flat[n] = true
			return
		}
	}
}

// elementwiseExport reports whether op is an element-wise op whose
// operands the translation takes in the output's dtype.
func elementwiseExport(op string) bool {
	switch op {
	case "add_scalar", "mul_scalar", "div_scalar", "square", "rsqrt", "log1p", "clamp", "pow":
		return true
	case "matmul":
		return false
	}
	return unaryExport[op] != "" || binaryExport[op] != ""
}

func allOnes(v []int) bool {
	for _, x := range v {
		if x != 1 {
			return false
		}
	}
	return len(v) > 0
}

func onesOf(shape []int) []float64 {
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

func contains(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// writeAtomic writes data to a temporary file beside path and renames it
// into place.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

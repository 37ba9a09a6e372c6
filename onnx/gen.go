package onnx

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// GenerateOptions configures Generate. The zero value is ready to use.
type GenerateOptions struct {
	// Package names the generated package (default: the output
	// directory's base name made a Go identifier).
	Package string
	// GoFile names the Go file written in the directory (default
	// "model.go").
	GoFile string
}

// Generated describes what Generate wrote.
type Generated struct {
	// GoFile and Weights are the paths of the Go source and of its
	// safetensors weights.
	GoFile, Weights string
	// Nodes counts the graph's nodes left after constant folding.
	Nodes int
	// Fallbacks lists the nodes ("name (Op)") the generated code runs
	// through an onnx.Operator instead of direct tensor calls.
	Fallbacks []string
}

// WeightsFile is the name of the weights file Generate writes beside the
// generated Go file.
const WeightsFile = "weights.safetensors"

// Generate reads the ONNX model at modelPath and writes, in dir, a Go
// package that runs it with no ONNX parsing at run time: a Model struct
// whose fields are the initializers as nn.Params, tagged with the names
// Load gives them (so checkpoints and state dicts carry over), New(dev),
// Load(weightsPath, dev), Compute (every input to every output), Forward
// (for a one-input graph: to the first output) and Run (by name), plus
// weights.safetensors
// holding the initializers. Each node becomes tensor calls under a
// "// name: Op" comment, with shapes folded to literals where shape
// inference knows them and written as x.Dim(i) where they follow a
// symbolic input dimension. A node Generate cannot translate runs through
// an onnx.Operator literal; such nodes are listed in the file's header and
// in the result's Fallbacks. If, Loop and Scan become Go if statements
// and for loops whose bodies are their subgraphs translated the same way
// (reading the enclosing graphs' values by their Go names); sequences,
// optionals and strings, in the graph or a subgraph, fail with
// ErrUnsupported naming the value or node. The model must load with Load
// (unsupported operators are reported the same way).
func Generate(modelPath, dir string, opts GenerateOptions) (*Generated, error) {
	mp, err := ReadFile(modelPath)
	if err != nil {
		return nil, err
	}
	m, err := FromProto(mp, modelPath, tensor.CPU())
	if err != nil {
		return nil, err
	}
	defer nn.Release(m)
	if err := checkGeneratable(m); err != nil {
		return nil, fmt.Errorf("onnx: generate %s: %w", modelPath, err)
	}
	pkg := opts.Package
	if pkg == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("onnx: generate: %w", err)
		}
		pkg = packageName(filepath.Base(abs))
	}
	if !isIdent(pkg) {
		return nil, fmt.Errorf("onnx: generate: %w: package name %q is not a Go identifier", tensor.ErrArgument, pkg)
	}
	goFile := opts.GoFile
	if goFile == "" {
		goFile = "model.go"
	}
	g := newGen(m, filepath.Base(modelPath))
	src, err := g.file(pkg)
	if err != nil {
		return nil, fmt.Errorf("onnx: generate %s: %w", modelPath, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("onnx: generate: %w", err)
	}
	res := &Generated{GoFile: filepath.Join(dir, goFile), Weights: filepath.Join(dir, WeightsFile),
		Nodes: len(m.g.steps), Fallbacks: g.fallbacks}
	if err := os.WriteFile(res.GoFile, src, 0o644); err != nil {
		return nil, fmt.Errorf("onnx: generate: %w", err)
	}
	if err := store.SaveModel(m, res.Weights); err != nil {
		return nil, fmt.Errorf("onnx: generate: %w", err)
	}
	return res, nil
}

// packageName makes s a lower-case Go identifier.
func packageName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	out := b.String()
	if out == "" || unicode.IsDigit(rune(out[0])) {
		out = "model" + out
	}
	return out
}

func isIdent(s string) bool {
	if s == "" || goKeywords[s] {
		return false
	}
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

var goKeywords = map[string]bool{"break": true, "case": true, "chan": true, "const": true, "continue": true,
	"default": true, "defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true,
	"goto": true, "if": true, "import": true, "interface": true, "map": true, "package": true, "range": true,
	"return": true, "select": true, "struct": true, "switch": true, "type": true, "var": true}

// gen holds the state of one generation.
type gen struct {
	m      *Model
	p      *plan // the graph being translated: the model's, or a subgraph's
	source string
	types  map[string]ValueType
	fields map[string]string      // ONNX initializer name → Go field
	order  []string               // initializer names in field order
	vars   map[string]string      // ONNX value name → Go variable
	taken  map[string]bool        // Go identifiers in use in the function body
	syms   map[string]string      // dimension symbol → Go expression
	consts map[string]*hostTensor // values known when generating
	ints   map[string]*symInts    // integer values known in terms of input sizes
	steps  []*genStep
	decls  []string // package-level declarations (fallback Operators)
	imps   map[string]bool

	fallbacks []string
	err       error // the first control-flow node that could not be translated
}

// symInts is a small integer tensor whose elements shape inference knows
// as numbers or products of input symbols.
type symInts struct {
	dims  []Dim
	shape []mono
}

// genStep is the code of one node and the values it reads and defines.
type genStep struct {
	code      string
	uses      []string
	defines   []string
	fallbacks []string // "name (Op)" of the nodes run through onnx.Operator
}

func newGen(m *Model, source string) *gen {
	g := &gen{m: m, p: m.g, source: source, fields: map[string]string{}, vars: map[string]string{},
		taken: map[string]bool{"m": true, "tensor": true, "nn": true, "onnx": true, "math": true, "err": true}, syms: map[string]string{},
		imps: map[string]bool{}}
	env := inferInfos(m.g.proto.Graph, m.g.opset)
	g.types = map[string]ValueType{}
	for name, in := range env {
		g.types[name] = in.valueType()
	}
	g.consts = map[string]*hostTensor{}
	for name, h := range m.g.consts {
		g.consts[name] = h
	}
	g.ints = map[string]*symInts{}
	for name, ds := range inferredValues(env) {
		g.ints[name] = &symInts{dims: ds, shape: env[name].shape}
	}
	used := map[string]bool{"New": true, "Load": true, "Forward": true, "Compute": true, "Run": true}
	for name := range m.g.paramsByONNX() {
		g.order = append(g.order, name)
	}
	sort.Strings(g.order)
	for _, name := range g.order {
		f := exportedName(ParamName(name))
		for k := 2; used[f]; k++ {
			f = exportedName(ParamName(name)) + strconv.Itoa(k)
		}
		used[f] = true
		g.fields[name] = f
	}
	return g
}

// exportedName turns a Param name into an exported Go identifier:
// "fc1.weight" is "Fc1Weight", "onnx__Conv_12" is "OnnxConv12".
func exportedName(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r >= 128 || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if out == "" || unicode.IsDigit(rune(out[0])) {
		out = "P" + out
	}
	return out
}

// localName turns an ONNX value name into an unused Go variable name.
func (g *gen) localName(s string) string {
	// PyTorch names values "/layers.0/self_attn/Slice_output_0": keep the
	// last two path segments, without "_output_0".
	if i := strings.LastIndex(s, "_output_"); i > 0 {
		if _, err := strconv.Atoi(s[i+len("_output_"):]); err == nil {
			s = s[:i]
		}
	}
	if segs := strings.FieldsFunc(s, func(r rune) bool { return r == '/' }); len(segs) > 2 {
		s = strings.Join(segs[len(segs)-2:], "/")
	}
	base := exportedName(s)
	if base == "P" {
		base = "V"
	}
	// Lower the leading capitals: "GRUOutput0" is "gruOutput0".
	r := []rune(base)
	n := 0
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	if n > 1 && n < len(r) && unicode.IsLower(r[n]) {
		n--
	}
	for i := range max(n, 1) {
		r[i] = unicode.ToLower(r[i])
	}
	base = string(r)
	name := base
	for k := 2; g.taken[name] || goKeywords[name] || isPredeclared(name); k++ {
		name = base + strconv.Itoa(k)
	}
	g.taken[name] = true
	return name
}

func isPredeclared(s string) bool {
	switch s {
	case "len", "cap", "make", "new", "append", "copy", "max", "min", "int", "string", "error", "bool",
		"float32", "float64", "int64", "true", "false", "nil", "ok":
		return true
	}
	return false
}

// file returns the generated, gofmt'd Go source.
func (g *gen) file(pkg string) ([]byte, error) {
	p := g.m.g
	var ins, outs []string
	for i := range p.outputs {
		g.taken[fmt.Sprintf("out%d", i)] = true
	}
	for i, in := range p.inputs {
		v := g.localName(in.Name)
		g.vars[in.Name] = v
		ins = append(ins, v)
		if in.Type != nil {
			for j, d := range in.Type.Shape {
				if d.Param != "" && !d.HasValue {
					if _, ok := g.syms[d.Param]; !ok {
						g.syms[d.Param] = fmt.Sprintf("%s.Dim(%d)", v, j)
					}
				}
			}
		}
		_ = i
	}
	for _, s := range p.steps {
		g.step(s)
	}
	if g.err != nil {
		return nil, g.err
	}
	body := g.emit(p.outputs)
	for _, o := range p.outputs {
		outs = append(outs, g.ref(o, nil))
	}
	return g.write(pkg, ins, outs, body)
}

// emit returns the code of the steps that outputs depend on, in order,
// noting the nodes run through onnx.Operator in g.fallbacks; dead shape
// arithmetic goes.
func (g *gen) emit(outputs []string) string {
	need := map[string]bool{}
	for _, o := range outputs {
		need[o] = true
	}
	keep := make([]bool, len(g.steps))
	for i := len(g.steps) - 1; i >= 0; i-- {
		st := g.steps[i]
		for _, d := range st.defines {
			if need[d] {
				keep[i] = true
			}
		}
		if keep[i] {
			for _, u := range st.uses {
				need[u] = true
			}
		}
	}
	var body bytes.Buffer
	for i, st := range g.steps {
		if !keep[i] {
			continue
		}
		body.WriteString(st.code)
		g.fallbacks = append(g.fallbacks, st.fallbacks...)
		for _, d := range st.defines {
			if !need[d] {
				fmt.Fprintf(&body, "_ = %s\n", g.vars[d])
			}
		}
	}
	return body.String()
}

// write returns the generated file of package pkg, gofmt'd, whose
// Compute takes the Go variables ins and returns the expressions outs
// after running body.
func (g *gen) write(pkg string, ins, outs []string, body string) ([]byte, error) {
	p := g.p
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("// Code generated by kiln onnx gen from %s; DO NOT EDIT.\n\n", g.source)
	w("// Package %s runs the ONNX model %s (opset %d) with Kiln's tensor ops.\n", pkg, g.source, p.opset)
	w("// Inputs: %s. Outputs: %s.\n", strings.Join(p.inputNames(), ", "), strings.Join(p.outputs, ", "))
	if len(g.fallbacks) == 0 {
		w("// Every node is translated into tensor calls.\n")
	} else {
		w("//\n// Nodes run by onnx.Operator (not translated): %s.\n", strings.Join(g.fallbacks, ", "))
	}
	w("package %s\n\nimport (\n", pkg)
	w("IMPORTS\n\"github.com/kiln-ml/kiln/nn\"\n")
	if len(g.fallbacks) > 0 {
		w("\"github.com/kiln-ml/kiln/onnx\"\n")
	}
	w("\"github.com/kiln-ml/kiln/store\"\n\"github.com/kiln-ml/kiln/tensor\"\n)\n\n")
	w("// Model holds the initializers of %s as Params named as onnx.Load names them.\n", g.source)
	w("type Model struct {\n")
	keys := p.paramsByONNX()
	for _, name := range g.order {
		prm := g.m.Params[keys[name]]
		w("%s *nn.Param `kiln:%q` // %s %v\n", g.fields[name], keys[name], prm.DType(), prm.Shape())
	}
	w("\ndev tensor.Device\n}\n\n")
	w("// New returns a Model on dev with zero weights; Load fills them.\n")
	w("func New(dev tensor.Device) *Model {\nm := &Model{dev: dev}\n")
	for _, name := range g.order {
		prm := g.m.Params[keys[name]]
		ctor := "NewParam"
		if prm.IsBuffer() {
			ctor = "NewBuffer"
		}
		w("m.%s = nn.%s(tensor.ZerosOf(dev, %s%s))\n", g.fields[name], ctor, dtypeExpr(prm.DType()), intsSuffix(prm.Shape()))
	}
	w("return m\n}\n\n")
	w("// Load returns a Model on dev holding the weights in the safetensors file at path\n// (the %s written beside this file). Release it with nn.Release.\n", WeightsFile)
	w("func Load(path string, dev tensor.Device) (*Model, error) {\nm := New(dev)\n")
	w("if err := store.LoadModel(m, path); err != nil {\nnn.Release(m)\nreturn nil, err\n}\nreturn m, nil\n}\n\n")
	var params, results []string
	for i, in := range ins {
		params = append(params, in)
		_ = i
	}
	for i := range outs {
		results = append(results, fmt.Sprintf("out%d", i))
	}
	w("// Compute runs the graph: inputs %s in order, outputs %s in order.\n", strings.Join(p.inputNames(), ", "), strings.Join(p.outputs, ", "))
	w("// Shape errors panic with a *tensor.Error, as tensor ops do.\n")
	sig := ""
	if len(params) > 0 {
		sig = strings.Join(params, ", ") + " *tensor.Tensor"
	}
	w("func (m *Model) Compute(%s) (%s *tensor.Tensor) {\n", sig, strings.Join(results, ", "))
	checks := false
	for i, in := range p.inputs {
		if in.Type == nil || in.Type.Kind != "tensor" || !in.Type.HasShape {
			continue
		}
		dt, err := kilnDType(in.Type.ElemType)
		if err != nil {
			continue
		}
		dims := make([]int, len(in.Type.Shape))
		for j, d := range in.Type.Shape {
			dims[j] = -1
			if d.HasValue {
				dims[j] = int(d.Value)
			}
		}
		w("checkInput(%q, %s, %s%s)\n", in.Name, ins[i], dtypeExpr(dt), intsSuffix(dims))
		checks = true
	}
	w("%s", body)
	w("return %s\n}\n\n", strings.Join(outs, ", "))
	if len(ins) == 1 {
		w("// Forward runs the graph on x and returns its first output (see Compute for all of them).\n")
		w("func (m *Model) Forward(x *tensor.Tensor) *tensor.Tensor {\n")
		blanks := []string{"y"}
		for range outs[1:] {
			blanks = append(blanks, "_")
		}
		w("%s := m.Compute(x)\nreturn y\n}\n\n", strings.Join(blanks, ", "))
	}
	w("// Run runs the graph on inputs by ONNX name and returns the outputs by name.\n")
	w("func (m *Model) Run(inputs map[string]*tensor.Tensor) (outs map[string]*tensor.Tensor, err error) {\n")
	for i, in := range p.inputNames() {
		w("if inputs[%q] == nil {\nreturn nil, fmt.Errorf(\"%%w: input %%q is missing\", tensor.ErrArgument, %q)\n}\n", in, in)
		_ = i
	}
	var args []string
	for _, in := range p.inputNames() {
		args = append(args, fmt.Sprintf("inputs[%q]", in))
	}
	w("err = tensor.Try(func() {\n%s := m.Compute(%s)\n", strings.Join(results, ", "), strings.Join(args, ", "))
	w("outs = map[string]*tensor.Tensor{")
	for i, o := range p.outputs {
		w("%q: out%d, ", o, i)
	}
	w("}\n})\nreturn outs, err\n}\n")
	if checks {
		w("\n// checkInput panics with a *tensor.Error unless x has the dtype and rank\n")
		w("// the model declares and the declared size in each fixed dimension (-1:\n// any size), the sizes the generated shapes assume.\n")
		w("func checkInput(name string, x *tensor.Tensor, dtype tensor.DType, dims ...int) {\n")
		w("if x == nil {\npanic(&tensor.Error{Op: \"%s.Compute\", Msg: fmt.Sprintf(\"input %%q is nil\", name), Err: tensor.ErrArgument})\n}\n", pkg)
		w("ok := x.DType() == dtype && x.Dims() == len(dims)\nfor i, d := range dims {\nok = ok && (d < 0 || x.Dim(i) == d)\n}\n")
		w("if !ok {\npanic(&tensor.Error{Op: \"%s.Compute\", Msg: fmt.Sprintf(\"input %%q is %%v %%v, the model wants %%v %%v (-1: any size)\", name, x.DType(), x.Shape(), dtype, dims), Err: tensor.ErrShape})\n}\n}\n", pkg)
	}
	for _, d := range g.decls {
		w("\n%s\n", d)
	}
	src := b.Bytes()
	_, code, _ := bytes.Cut(src, []byte("IMPORTS"))
	var imps []byte
	for _, pkg := range []string{"fmt", "math"} {
		if bytes.Contains(code, []byte(pkg+".")) {
			imps = fmt.Appendf(imps, "%q\n", pkg)
		}
	}
	src = bytes.Replace(src, []byte("IMPORTS"), imps, 1)
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("generated code does not parse (a bug): %w\n%s", err, src)
	}
	return out, nil
}

func (p *plan) inputNames() []string {
	out := make([]string, len(p.inputs))
	for i, in := range p.inputs {
		out[i] = in.Name
	}
	return out
}

func intsSuffix(v []int) string {
	var b strings.Builder
	for _, d := range v {
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(d))
	}
	return b.String()
}

func intsLit(v []int) string { return strings.TrimPrefix(intsSuffix(v), ", ") }

func dtypeExpr(d tensor.DType) string {
	switch d {
	case tensor.Float32:
		return "tensor.Float32"
	case tensor.Float64:
		return "tensor.Float64"
	case tensor.Float16:
		return "tensor.Float16"
	case tensor.BFloat16:
		return "tensor.BFloat16"
	case tensor.Int64:
		return "tensor.Int64"
	case tensor.Int32:
		return "tensor.Int32"
	case tensor.Int16:
		return "tensor.Int16"
	case tensor.Int8:
		return "tensor.Int8"
	case tensor.Uint8:
		return "tensor.Uint8"
	case tensor.Bool:
		return "tensor.Bool"
	}
	return "tensor.Float32"
}

// ref returns a Go expression for value name as a device tensor, noting
// the use in uses.
func (g *gen) ref(name string, uses *[]string) string {
	if uses != nil {
		*uses = append(*uses, name)
	}
	if v, ok := g.vars[name]; ok {
		return v
	}
	if f, ok := g.fields[name]; ok {
		return "m." + f + ".Tensor"
	}
	if h, ok := g.consts[name]; ok {
		return g.literal(h)
	}
	if e, ok := g.symLiteral(name); ok {
		return e
	}
	return "nil"
}

// symLiteral writes a symInts value as a tensor built from Go ints.
func (g *gen) symLiteral(name string) (string, bool) {
	si, ok := g.ints[name]
	if !ok || !g.isSymbolic(name) {
		return "", false
	}
	var shape []string
	for _, m := range si.shape {
		if !m.isNum() {
			return "", false
		}
		shape = append(shape, strconv.FormatInt(m.coef, 10))
	}
	typ, fn := "int64", "FromInt64s"
	if g.types[name].ElemType == TypeInt32 {
		typ, fn = "int32", "FromInt32s"
	}
	var parts []string
	for _, d := range si.dims {
		e, ok := g.dimExpr(d)
		if !ok {
			return "", false
		}
		if d.HasValue {
			parts = append(parts, e)
		} else {
			parts = append(parts, typ+"("+e+")")
		}
	}
	tail := ""
	if len(shape) == 0 {
		tail = ".Reshape()"
	}
	return fmt.Sprintf("tensor.%s(m.dev, []%s{%s}%s)%s", fn, typ, strings.Join(parts, ", "), prefixed(shape), tail), true
}

// isSymbolic reports whether name is an integer value known in terms of
// the input sizes (and not as plain numbers).
func (g *gen) isSymbolic(name string) bool {
	si, ok := g.ints[name]
	if !ok {
		return false
	}
	for _, d := range si.dims {
		if !d.HasValue {
			e, ok := g.dimExpr(d)
			return ok && e != ""
		}
	}
	return false
}

// knownInts turns an integer value that shape inference knows as numbers
// into a constant, so the nodes reading it fold their arguments.
func (g *gen) knownInts(name string) (*hostTensor, bool) {
	si, ok := g.ints[name]
	vt := g.types[name]
	if !ok || vt.ElemType != TypeInt64 && vt.ElemType != TypeInt32 {
		return nil, false
	}
	var shape []int
	for _, m := range si.shape {
		if !m.isNum() {
			return nil, false
		}
		shape = append(shape, int(m.coef))
	}
	v := make([]int64, len(si.dims))
	for i, d := range si.dims {
		if !d.HasValue {
			return nil, false
		}
		v[i] = d.Value
	}
	h := hostInts(v).reshaped(shape)
	if shape == nil {
		h = hostInts(v).reshaped([]int{})
	}
	if vt.ElemType == TypeInt32 {
		h = h.cast(tensor.Int32)
	}
	return h, true
}

// literal returns a Go expression building h on m.dev.
func (g *gen) literal(h *hostTensor) string {
	shape := intsSuffix(h.shape)
	tail := ""
	if len(h.shape) == 0 {
		tail = ".Reshape()"
	}
	var b strings.Builder
	switch h.dtype {
	case tensor.Int64, tensor.Int32:
		fn, typ := "FromInt64s", "int64"
		if h.dtype == tensor.Int32 {
			fn, typ = "FromInt32s", "int32"
		}
		for i, v := range h.ints() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatInt(v, 10))
		}
		return fmt.Sprintf("tensor.%s(m.dev, []%s{%s}%s)%s", fn, typ, b.String(), shape, tail)
	case tensor.Bool:
		for i, v := range h.floats() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatBool(v != 0))
		}
		return fmt.Sprintf("tensor.FromBools(m.dev, []bool{%s}%s)%s", b.String(), shape, tail)
	}
	fn, typ, bits := "FromFloat32s", "float32", 32
	if h.dtype == tensor.Float64 {
		fn, typ, bits = "FromFloat64s", "float64", 64
	}
	for i, v := range h.floats() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(g.floatLit(v, bits, typ))
	}
	e := fmt.Sprintf("tensor.%s(m.dev, []%s{%s}%s)%s", fn, typ, b.String(), shape, tail)
	if h.dtype != tensor.Float32 && h.dtype != tensor.Float64 {
		e += ".To(" + dtypeExpr(h.dtype) + ")"
	}
	return e
}

// floatLit formats v for a Go literal of type typ.
func (g *gen) floatLit(v float64, bits int, typ string) string {
	switch {
	case math.IsNaN(v):
		g.imps["math"] = true
		return typ + "(math.NaN())"
	case math.IsInf(v, 1):
		g.imps["math"] = true
		return typ + "(math.Inf(1))"
	case math.IsInf(v, -1):
		g.imps["math"] = true
		return typ + "(math.Inf(-1))"
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if typ == "" && !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// dimExpr returns a Go int expression for dimension d, or false when
// shape inference does not know it in terms of the inputs.
func (g *gen) dimExpr(d Dim) (string, bool) {
	if d.HasValue {
		return strconv.FormatInt(d.Value, 10), true
	}
	if d.Param == "" {
		return "", false
	}
	if e, ok := g.syms[d.Param]; ok {
		return e, true
	}
	var parts []string
	for _, f := range strings.Split(d.Param, "*") {
		if _, err := strconv.Atoi(f); err == nil {
			parts = append(parts, f)
		} else if e, ok := g.syms[f]; ok {
			parts = append(parts, e)
		} else {
			return "", false
		}
	}
	return strings.Join(parts, "*"), true
}

// shapeOf returns Go int expressions for every dimension of value name,
// and whether all of them are static numbers (nums).
func (g *gen) shapeOf(name string) (exprs []string, nums []int, ok bool) {
	vt, have := g.types[name]
	if !have || !vt.RankKnown {
		return nil, nil, false
	}
	allNum := true
	for _, d := range vt.Shape {
		e, ok := g.dimExpr(d)
		if !ok {
			return nil, nil, false
		}
		exprs = append(exprs, e)
		if d.HasValue {
			nums = append(nums, int(d.Value))
		} else {
			allNum = false
		}
	}
	if !allNum {
		nums = nil
	}
	return exprs, nums, true
}

// rank returns the inferred rank of value name (-1 when unknown).
func (g *gen) rank(name string) int {
	vt, ok := g.types[name]
	if !ok || !vt.RankKnown {
		return -1
	}
	return len(vt.Shape)
}

// errNoTranslation makes a translator hand the node to the runtime.
var errNoTranslation = errors.New("no direct translation")

// step translates one node, falling back to an onnx.Operator.
func (g *gen) step(s *step) {
	n := s.node
	name := n.Name
	if name == "" {
		name = fmt.Sprintf("#%d", s.index)
	}
	if g.known(s, name) {
		return
	}
	if controlFlow[n.OpType] != nil {
		g.control(s, name)
		return
	}
	t := &translation{g: g, s: s, c: &call{p: g.p, s: s, node: n, attrs: s.attrs, opset: g.p.opset, dev: tensor.CPU()}}
	t.c.in = make([]*value, len(n.Inputs))
	for k, in := range n.Inputs {
		if h, ok := g.consts[in]; ok && in != "" {
			if _, isParam := g.fields[in]; !isParam || (s.def.role != nil && s.def.role(k, g.p.opset, s.attrs) == roleStatic) {
				t.c.in[k] = &value{h: h}
			}
		}
	}
	saved := map[string]bool{}
	for k, v := range g.taken {
		saved[k] = v
	}
	ok := false
	if tr := translators[n.OpType]; tr != nil {
		ok = t.run(tr)
	}
	if !ok {
		g.taken = saved
		t = &translation{g: g, s: s}
		t.fallback()
	}
	code := fmt.Sprintf("// %s: %s\n%s", name, n.OpType, t.b.String())
	st := &genStep{code: code, uses: t.uses, defines: t.defines}
	if !ok {
		st.fallbacks = []string{fmt.Sprintf("%s (%s)", name, n.OpType)}
	}
	g.steps = append(g.steps, st)
	for k, v := range t.outVars {
		g.vars[k] = v
	}
}

// known handles a node whose outputs shape inference knows as integers:
// numbers become constants, products of input sizes become Go ints on the
// inputs' Dim; no code runs for the node itself.
func (g *gen) known(s *step, name string) bool {
	consts := map[string]*hostTensor{}
	for _, o := range s.node.Outputs {
		if o == "" {
			continue
		}
		if h, ok := g.knownInts(o); ok {
			consts[o] = h
			continue
		}
		if !g.isSymbolic(o) {
			return false
		}
		if _, ok := g.symLiteral(o); !ok {
			return false
		}
	}
	for o, h := range consts {
		g.consts[o] = h
	}
	return true
}

// translation is the code being written for one node.
type translation struct {
	g       *gen
	s       *step
	c       *call // reads attributes and constant inputs with the runtime's helpers
	b       strings.Builder
	uses    []string
	defines []string
	outVars map[string]string
}

// run calls tr, turning its failures (errNoTranslation or a runtime
// helper's *tensor.Error) into false.
func (t *translation) run(tr func(t *translation)) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if r == errNoTranslation {
				ok = false
				return
			}
			if _, isErr := r.(*tensor.Error); isErr {
				ok = false
				return
			}
			panic(r)
		}
	}()
	tr(t)
	return true
}

func (t *translation) give() { panic(errNoTranslation) }

func (t *translation) line(format string, args ...any) {
	fmt.Fprintf(&t.b, format, args...)
	t.b.WriteByte('\n')
}

// in returns a Go expression for device input k.
func (t *translation) in(k int) string {
	if !t.has(k) {
		t.give()
	}
	return t.g.ref(t.s.node.Inputs[k], &t.uses)
}

func (t *translation) has(k int) bool {
	return k < len(t.s.node.Inputs) && t.s.node.Inputs[k] != ""
}

// inName is input k's ONNX name.
func (t *translation) inName(k int) string { return t.s.node.Inputs[k] }

// constIn reports whether input k is known when generating.
func (t *translation) constIn(k int) bool { return k < len(t.c.in) && t.c.in[k] != nil }

// ints returns constant input k as ints, giving up when it is not known.
func (t *translation) ints(k int) []int64 {
	if !t.constIn(k) {
		t.give()
	}
	return t.c.ints(k)
}

// out declares output k as a new variable set to expr.
func (t *translation) out(k int, expr string) {
	name := t.s.node.Outputs[k]
	if name == "" {
		return
	}
	v := t.g.localName(name)
	if t.outVars == nil {
		t.outVars = map[string]string{}
	}
	t.outVars[name] = v
	t.defines = append(t.defines, name)
	t.line("%s := %s", v, expr)
}

// outShape returns Go expressions for output k's inferred shape.
func (t *translation) outShape(k int) []string {
	e, _, ok := t.g.shapeOf(t.s.node.Outputs[k])
	if !ok {
		t.give()
	}
	return e
}

// inShape returns input k's inferred static shape, giving up when any
// dimension is symbolic.
func (t *translation) inShape(k int) []int {
	_, nums, ok := t.g.shapeOf(t.inName(k))
	if !ok || nums == nil && t.g.rank(t.inName(k)) != 0 {
		t.give()
	}
	return nums
}

// inRank returns input k's inferred rank.
func (t *translation) inRank(k int) int {
	r := t.g.rank(t.inName(k))
	if r < 0 {
		t.give()
	}
	return r
}

// outDType returns output k's inferred dtype.
func (t *translation) outDType(k int) tensor.DType {
	vt := t.g.types[t.s.node.Outputs[k]]
	dt, err := kilnDType(vt.ElemType)
	if err != nil {
		t.give()
	}
	return dt
}

func (t *translation) inDType(k int) tensor.DType {
	vt := t.g.types[t.inName(k)]
	dt, err := kilnDType(vt.ElemType)
	if err != nil {
		t.give()
	}
	return dt
}

func (t *translation) float(v float64) string { return t.g.floatLit(v, 64, "") }

// fallback writes the node as an onnx.Operator run.
func (t *translation) fallback() {
	g, n := t.g, t.s.node
	id := fmt.Sprintf("op%d", len(g.decls)+1)
	var d strings.Builder
	fmt.Fprintf(&d, "// %s runs node %q (%s) with Kiln's ONNX runtime.\nvar %s = &onnx.Operator{Op: %q, Opset: %d", id, n.Name, n.OpType, id, n.OpType, g.p.opset)
	if len(n.Attributes) > 0 {
		d.WriteString(", Attrs: []*onnx.AttributeProto{")
		for _, a := range n.Attributes {
			d.WriteString(attrLit(a) + ", ")
		}
		d.WriteString("}")
	}
	var args []string
	consts := map[int]string{}
	for k, in := range n.Inputs {
		if in == "" {
			args = append(args, "nil")
			continue
		}
		if _, isVar := g.vars[in]; !isVar {
			if _, isField := g.fields[in]; !isField {
				if h, ok := g.consts[in]; ok {
					consts[k] = tensorLit(h)
					args = append(args, "nil")
					continue
				}
			}
		}
		args = append(args, g.ref(in, &t.uses))
	}
	if len(consts) > 0 {
		d.WriteString(", Consts: map[int]*onnx.TensorProto{")
		for k := 0; k < len(n.Inputs); k++ {
			if c, ok := consts[k]; ok {
				fmt.Fprintf(&d, "%d: %s, ", k, c)
			}
		}
		d.WriteString("}")
	}
	fmt.Fprintf(&d, ", Outputs: %#v}", n.Outputs)
	g.decls = append(g.decls, d.String())
	res := g.localName(id + "Out")
	t.line("%s := %s.Run(m.dev, %s)", res, id, strings.Join(args, ", "))
	for k := range n.Outputs {
		t.out(k, fmt.Sprintf("%s[%d]", res, k))
	}
}

// attrLit writes a as a Go literal (graph attributes are not supported by
// the runtime, so they are left out).
func attrLit(a *AttributeProto) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{Name: %q, Type: %d", a.Name, a.Type)
	if a.F != 0 {
		fmt.Fprintf(&b, ", F: %s", strconv.FormatFloat(float64(a.F), 'g', -1, 32))
	}
	if a.I != 0 {
		fmt.Fprintf(&b, ", I: %d", a.I)
	}
	if a.S != nil {
		fmt.Fprintf(&b, ", S: []byte(%q)", a.S)
	}
	if a.T != nil {
		if h, err := tensorHost(a.T); err == nil {
			fmt.Fprintf(&b, ", T: &onnx.TensorProto%s", tensorLit(h))
		}
	}
	if a.Floats != nil {
		b.WriteString(", Floats: []float32{")
		for _, f := range a.Floats {
			b.WriteString(strconv.FormatFloat(float64(f), 'g', -1, 32) + ", ")
		}
		b.WriteString("}")
	}
	if a.Ints != nil {
		fmt.Fprintf(&b, ", Ints: %#v", a.Ints)
	}
	if a.Strings != nil {
		b.WriteString(", Strings: [][]byte{")
		for _, s := range a.Strings {
			fmt.Fprintf(&b, "[]byte(%q), ", s)
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}

// tensorLit writes h as an onnx.TensorProto literal.
func tensorLit(h *hostTensor) string {
	dims := make([]int64, len(h.shape))
	for i, d := range h.shape {
		dims[i] = int64(d)
	}
	dt := onnxDType(h.dtype)
	var data string
	switch {
	case h.dtype == tensor.Float64:
		data = fmt.Sprintf("DoubleData: %#v", h.floats())
	case h.dtype.IsFloat():
		fs := make([]string, 0, h.size())
		for _, v := range h.floats() {
			fs = append(fs, protoFloat(v))
		}
		data = "FloatData: []float32{" + strings.Join(fs, ", ") + "}"
		dt = TypeFloat
	case h.dtype == tensor.Int64:
		data = fmt.Sprintf("Int64Data: %#v", h.ints())
	default:
		v := h.ints()
		is := make([]int32, len(v))
		for i, x := range v {
			is[i] = int32(x)
		}
		data = fmt.Sprintf("Int32Data: %#v", is)
	}
	return fmt.Sprintf("{Dims: %#v, DataType: %d, %s}", dims, dt, data)
}

func protoFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "float32(math.NaN())"
	case math.IsInf(v, 1):
		return "float32(math.Inf(1))"
	case math.IsInf(v, -1):
		return "float32(math.Inf(-1))"
	}
	return strconv.FormatFloat(v, 'g', -1, 32)
}

// runtimeOnly are operators that the runtime runs but generated code does
// not: they take or make sequences, optionals or strings, which an
// Operator literal (tensors in, tensors out) cannot carry, or run a
// subgraph per sequence element.
var runtimeOnly = map[string]string{
	"SequenceMap":   "control flow over sequences",
	"SequenceEmpty": "sequences", "SequenceConstruct": "sequences", "SequenceInsert": "sequences",
	"SequenceAt": "sequences", "SequenceErase": "sequences", "SequenceLength": "sequences",
	"SplitToSequence": "sequences", "ConcatFromSequence": "sequences",
	"Optional": "optionals", "OptionalHasElement": "optionals", "OptionalGetElement": "optionals",
	"StringNormalizer": "strings",
}

// checkGeneratable refuses, with ErrUnsupported naming the first
// operator or value, a model that uses what generated code cannot run,
// in its graph or in the subgraphs of If, Loop and Scan: sequences,
// optionals and string tensors run only in the runtime (Load,
// Model.RunValues).
func checkGeneratable(m *Model) error {
	return checkGeneratableGraph(m.g.proto.Graph, "")
}

func checkGeneratableGraph(g *GraphProto, prefix string) error {
	for _, v := range append(append([]*ValueInfoProto{}, g.Inputs...), g.Outputs...) {
		if v.Type != nil && (v.Type.Kind != "" && v.Type.Kind != "tensor" || v.Type.ElemType == TypeString) {
			return fmt.Errorf("%w: %sgraph value %q is a %s; generated code runs tensor graphs only (load the model with onnx.Load instead)",
				ErrUnsupported, prefix, v.Name, typeKindName(v.Type))
		}
	}
	for i, n := range g.Nodes {
		if why, ok := runtimeOnly[n.OpType]; ok {
			return fmt.Errorf("%w: node %s%s: %s runs in Kiln's ONNX runtime only (%s); load the model with onnx.Load instead",
				ErrUnsupported, prefix, nodeName(n, i), n.OpType, why)
		}
		if n.OpType == "Cast" {
			for _, a := range n.Attributes {
				if a.Name == "to" && a.I == TypeString {
					return fmt.Errorf("%w: node %s%s: Cast to STRING runs in Kiln's ONNX runtime only (strings); load the model with onnx.Load instead",
						ErrUnsupported, prefix, nodeName(n, i))
				}
			}
		}
		for _, a := range n.Attributes {
			if a.G != nil {
				if err := checkGeneratableGraph(a.G, prefix+nodeName(n, i)+" "+a.Name+": "); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// typeKindName names a value type for errors ("sequence", "STRING tensor").
func typeKindName(t *TypeProto) string {
	if t.Kind == "tensor" || t.Kind == "" {
		return DataTypeName(t.ElemType) + " tensor"
	}
	return t.Kind
}

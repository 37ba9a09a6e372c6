package kernel_test

// TestEveryExportCallable calls every exported function and every exported
// method of every exported type of every Kiln package in the kernel's symbol
// tables (symbols.Packages) from notebook cells of a real kernel.Session, and
// fails listing those that interpreted code cannot call.
//
// How the calls are generated (all from reflection on symbols.Symbols, with
// parameter names read from the packages' Go sources only to pick values):
//
//   - Targets: every func value in a package's table ("tensor.Zeros"), every
//     method in the method set of *T for each exported non-interface type T
//     ("tensor.Tensor.Add", promoted methods included: nn.Param has the
//     tensor methods), every method of each exported interface type, called
//     through a variable of the interface type holding a compiled
//     implementation ("optim.Optimizer.Step"), and every exported variable
//     and constant (referenced once).
//   - Receivers: a per-type recipe (exportRecipes) when one is listed; else
//     the package's NewT constructor, else any other function of the
//     package returning T or *T alone, else a zero composite literal &pkg.T{}
//     (a constant of the type for named basic types). Interface receivers
//     are the first compiled Kiln type implementing the interface that has
//     such a recipe (or a recipe of the interface itself); an interface no
//     compiled Kiln type implements is called on its cell-declared
//     implementation, and said so in the log.
//   - Arguments, by type: *tensor.Tensor → a 2×2 float32 tensor on the CPU
//     (int64 for indices, lengths and the targets of classification
//     losses, bool for masks and conditions, by parameter name);
//     tensor.Device → tensor.CPU(); *tensor.Gradients → the gradients of a
//     small Backward; DType → Float32; backends.View → a 2×2 view of a
//     fresh CPU buffer; ints → 2 (1 for dims and axes, 0 for indices, 2
//     for every argument of a NewX constructor); floats → 0.5;
//     bool → false; strings → a plausible value from the parameter's name
//     (a MIME type, a device name, "**" for patterns, a testdata file for
//     paths); slices → small literals; arrays and maps → small literals;
//     structs (configs, options, masks, states) → zero values; pointers to
//     Kiln structs → the struct's recipe; Kiln interfaces → a cell-declared
//     implementation (one struct per interface, declared in the first cell,
//     its methods returning plausible values): this is the MapTypes
//     coverage; `any` → a cell-declared model struct (nn, optim), a
//     cell-declared HTML renderer (display) or a tensor (elsewhere); other
//     interfaces (image.Image) → a compiled value; funcs → a cell-declared
//     func literal returning plausible values. Variadic parameters get one
//     element (two for shapes). Arguments are built in variables of their
//     concrete type, so conversions to the parameter types happen at the
//     call, as in user code.
//   - Each call runs in its own closure passed to a compiled probe, which
//     runs it inside a tensor.Scope, recovers any panic and classifies it
//     from the stack: the call reached compiled code when it returned
//     (errors returned count as reached) or when the panic started in a Kiln
//     package (a *tensor.Error for bad arguments, a nil pointer inside a
//     zero-value receiver: the call got there). It failed when the panic
//     started in reflect or in yaegi (cannot use … as …, missing method,
//     conversion), or before the call (building the receiver or the
//     arguments), or when the cell did not compile (each compile error is
//     mapped back to its call, which is dropped from the batch, and the
//     batch runs again).
//   - Calls that change process-wide state restore it (exportCleanup):
//     default device, module scope function, display sink, CPU memory
//     budget and RNG state, and the CPU driver, which backends.Register
//     replaces with a cell-declared one for the length of the call.
//
// One session runs everything, one cell per package (plus the declarations
// cell), so the test stays fast and deterministic. KILN_EXPORTS_DUMP=dir
// writes the generated cells there to read.

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/symbols"
	"github.com/kiln-ml/kiln/tensor"
)

const (
	kilnModule  = "github.com/kiln-ml/kiln/"
	probeImport = "kiln/exportstest/probe"
)

// exportRecipes builds receivers (and pointer arguments) of types whose
// constructor needs more than zero values, keyed by "pkg.Type".
var exportRecipes = map[string]string{
	"backends.Backend":        "tensor.CPU().Backend()",
	"backends.Buffer":         "xBuffer(backends.Float32)",
	"backends.Driver":         "xCPUDriver()",
	"backends.View":           "xView(backends.Float32)",
	"display.Data":            `display.HTML("<b>x</b>")`,
	"display.Handle":          `display.New(display.HTML("<b>x</b>"))`,
	"tensor.Tensor":           "xF32()",
	"tensor.Gradients":        "xGrads()",
	"tensor.Device":           "tensor.CPU()",
	"backends.DType":          "backends.Float32",
	"nn.Param":                "nn.NewParam(xF32())",
	"autodiff.Node":           `autodiff.NewLeaf([]int{2, 2}, "float32", true)`,
	"optim.SGD":               "optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9})",
	"optim.Adam":              "optim.NewAdam(optim.AdamConfig{LR: 0.1})",
	"optim.AdamW":             "optim.NewAdamW(optim.AdamWConfig{LR: 0.1})",
	"optim.AdaGrad":           "optim.NewAdaGrad(optim.AdaGradConfig{LR: 0.1})",
	"optim.RMSProp":           "optim.NewRMSProp(optim.RMSPropConfig{LR: 0.1})",
	"optim.Lion":              "optim.NewLion(optim.LionConfig{LR: 0.1})",
	"optim.NAdam":             "optim.NewNAdam(optim.NAdamConfig{LR: 0.1})",
	"optim.RAdam":             "optim.NewRAdam(optim.RAdamConfig{LR: 0.1})",
	"optim.Adamax":            "optim.NewAdamax(optim.AdamaxConfig{LR: 0.1})",
	"optim.ASGD":              "optim.NewASGD(optim.ASGDConfig{LR: 0.1})",
	"optim.Adan":              "optim.NewAdan(optim.AdanConfig{LR: 0.1})",
	"optim.SparseAdam":        "optim.NewSparseAdam(optim.SparseAdamConfig{LR: 0.1})",
	"optim.LBFGS":             "optim.NewLBFGS(optim.LBFGSConfig{})",
	"nn.Upsample":             "nn.NewUpsample(tensor.InterpolateConfig{Size: []int{4}})",
	"optim.Muon":              "optim.NewMuon(optim.MuonConfig{LR: 0.1})",
	"optim.Scheduler":         "optim.NewScheduler(optim.NewSGD(optim.SGDConfig{LR: 0.1}), optim.NewStepLR(0.1, 2, 0.5))",
	"optim.ReduceLROnPlateau": "optim.NewReduceLROnPlateau(optim.NewSGD(optim.SGDConfig{LR: 0.1}), optim.ReduceLROnPlateauConfig{})",
	"optim.OneCycleLR":        "optim.OneCycleLR{MaxLR: 0.1, TotalSteps: 10}",
	"optim.SequentialLR":      "optim.NewSequentialLR([]optim.Schedule{optim.NewStepLR(0.1, 2, 0.5), optim.NewStepLR(0.1, 2, 0.5)}, []int{2})",
	"viz.Chart":               "viz.Line(nil, []float64{1, 2, 3})",
	"viz.Board":               `viz.NewBoard("b", viz.Line(nil, []float64{1, 2, 3}))`,
}

// exportStrings gives string arguments by "target/param" or by parameter
// name; exportStringHints by a substring of the parameter name.
var exportStrings = map[string]string{
	"tensor.ParseDevice/name":  "cpu",
	"tensor.MustDevice/name":   "cpu",
	"backends.ParseDType/s":    "float32",
	"backends.ParseDType/name": "float32",
	"optim.SplitStateKey/key":  "L1.weight/exp_avg",
	"nn.NewGELU/approximate":   "tanh",
	// An existing file, which SaveCheckpoint refuses to replace, so the
	// call reaches compiled code without writing into the source tree.
	"store.SaveCheckpoint/dir": "testdata/exports/hello.txt",
	// Paths in a directory that does not exist: these writers fail before
	// writing anything, so the calls reach compiled code without changing
	// testdata/exports/hello.txt.
	"store.SaveModel/path":              "testdata/exports/missing/model.safetensors",
	"store.NameMap.Save/path":           "testdata/exports/missing/model.safetensors",
	"store.SafetensorsFile.CopyTo/path": "testdata/exports/missing/copy.safetensors",
	// A run that has ended: Follow reads its log and returns at once
	// (for a directory without one it would wait train.FollowWait).
	"train.Follow/runDir": "testdata/exports/run",
}

var exportStringHints = []struct{ sub, value string }{
	{"mime", "text/plain"},
	{"path", "testdata/exports/hello.txt"},
	{"file", "testdata/exports/hello.txt"},
	{"pattern", "**"},
	{"nonlinearity", "relu"},
	{"kind", "cpu"},
	{"device", "cpu"},
	{"dtype", "float32"},
	{"reduction", "mean"},
	{"mode", "constant"},
	{"html", "<b>x</b>"},
	{"svg", "<svg></svg>"},
	{"latex", "x^2"},
	{"name", "weight"},
	{"slot", "exp_avg"},
	{"reason", "exports test"},
	{"op", "add"},
}

// exportCleanup restores what a call changes for the whole process: code
// run before the call (typically a defer), by target.
var exportCleanup = map[string]string{
	"tensor.SetDefaultDevice":       "defer tensor.ResetDefaultDevice()",
	"tensor.SetModuleScopeFunc":     "defer tensor.SetModuleScopeFunc(probe.NoModuleScope)",
	"display.SetSink":               "xPrevSink := display.SetSink(nil)\n\tdefer display.SetSink(xPrevSink)",
	"tensor.Device.SetMemoryBudget": "xBudget := r.MemoryStats().BudgetBytes\n\tdefer r.SetMemoryBudget(xBudget)",
	"backends.Register":             "defer backends.Register(xCPUDriver())",
	"tensor.Device.Seed":            "xSeed, xPos := r.RNGState()\n\tdefer r.SetRNGState(xSeed, xPos)",
	"tensor.Device.SetRNGState":     "xSeed, xPos := r.RNGState()\n\tdefer r.SetRNGState(xSeed, xPos)",
}

// exportImplBodies are bodies of the cell-declared interface
// implementations' methods where the generic ones (plausible zero values)
// do not fit, by "pkg.Iface.Method"; parameters are a0, a1, ….
var exportImplBodies = map[string]string{
	"nn.Initializer.Init":   "return tensor.Zeros(a0, a1...)",
	"backends.Driver.Open":  `return nil, errors.New("exportstest: no devices")`,
	"backends.Driver.Kind":  `return "cpu"`,
	"optim.Schedule.LR":     "return 0.1",
	"optim.Optimizer.LR":    "return 0.1",
	"autodiff.Ops.Add":      "return a0",
	"display.Sink.Display":  "",
	"optim.Optimizer.State": "return &optim.State{}, nil",
}

// exportDeclarations is the first cell: helpers the generated calls use.
const exportDeclarations = `
var xDev = tensor.CPU()

var xCmd, xCmdErr = train.KilnCommand()

func xF32() *tensor.Tensor { return tensor.FromFloat32s(xDev, []float32{0.1, 0.2, 0.3, 0.4}, 2, 2) }
func xI64() *tensor.Tensor { return tensor.FromInt64s(xDev, []int64{0, 1, 1, 0}, 2, 2) }
func xBool() *tensor.Tensor { return tensor.FromBools(xDev, []bool{true, false, false, true}, 2, 2) }

func xGrads() *tensor.Gradients {
	w := tensor.FromFloat32s(xDev.Autodiff(), []float32{0.1, 0.2, 0.3, 0.4}, 2, 2).RequireGrad()
	return w.Square().Sum().Backward()
}

func xBuffer(dt backends.DType) backends.Buffer {
	b, err := tensor.CPU().Backend().Alloc(dt, 4)
	if err != nil {
		panic(err)
	}
	return b
}

func xView(dt backends.DType) backends.View { return backends.Contiguous(xBuffer(dt), dt, 2, 2) }

func xCPUDriver() backends.Driver {
	d, err := backends.Lookup("cpu")
	if err != nil {
		panic(err)
	}
	return d
}

// xModel is a model declared in a cell: nn and optim walk it.
type xModelT struct {
	nn.Mode
	L1 *nn.Linear
	l2 *nn.Linear
}

func (m *xModelT) Forward(x *tensor.Tensor) *tensor.Tensor { return m.l2.Forward(m.L1.Forward(x)) }

func xModel() *xModelT { return &xModelT{L1: nn.NewLinear(xDev, 2, 2), l2: nn.NewLinear(xDev, 2, 2)} }

// xPageT is a value declared in a cell that display renders.
type xPageT struct{ s string }

func (p xPageT) HTML() string   { return "<b>" + p.s + "</b>" }
func (p xPageT) String() string { return p.s }
`

// exportProbe is the compiled side of the calls (see the file comment).
type exportProbe struct {
	mu      sync.Mutex
	entered bool
	results map[string]*exportOutcome
}

type exportOutcome struct {
	reached bool   // the call got into compiled code
	msg     string // panic value or failure, if any
	origin  string // function the panic started in
	setup   bool   // failed before the call (receiver or arguments)
}

func (p *exportProbe) run(name string, f func()) {
	p.mu.Lock()
	p.entered = false
	out := &exportOutcome{}
	p.results[name] = out
	p.mu.Unlock()
	defer func() {
		r := recover()
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case r == nil:
			out.reached = p.entered
			if !p.entered {
				out.msg = "the closure returned before the call"
			}
		case !p.entered:
			out.setup = true
			out.msg = fmt.Sprint(r)
			out.origin = panicOrigin(debug.Stack())
		default:
			out.msg = fmt.Sprint(r)
			out.origin = panicOrigin(debug.Stack())
			out.reached = kilnFrame(out.origin)
		}
	}()
	tensor.Scope(f)
}

func (p *exportProbe) enter() {
	p.mu.Lock()
	p.entered = true
	p.mu.Unlock()
}

// panicOrigin returns the function the first panic on a goroutine's stack
// started in: the first non-runtime frame below the deepest panic frame
// (a panic raised again in a deferred call leaves the frames of the first
// one on the stack).
func panicOrigin(stack []byte) string {
	var funcs []string
	for _, l := range strings.Split(string(stack), "\n") {
		if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "goroutine ") {
			continue
		}
		funcs = append(funcs, l)
	}
	last := -1
	for i, f := range funcs {
		if strings.HasPrefix(f, "panic(") || strings.HasPrefix(f, "runtime.gopanic(") {
			last = i
		}
	}
	for _, f := range funcs[last+1:] {
		if !strings.HasPrefix(f, "runtime.") {
			return f
		}
	}
	return "?"
}

// kilnFrame reports whether a stack frame is in one of Kiln's API packages
// (not in the symbol tables' wrappers, the kernel or this test).
func kilnFrame(f string) bool {
	for _, p := range []string{"tensor.", "backends.", "backends/", "autodiff.", "nn.", "onnx.", "optim.", "data.", "metrics.", "store.", "train.", "viz.", "kernel/display."} {
		if strings.HasPrefix(f, kilnModule+p) {
			return true
		}
	}
	return false
}

// exportGen generates the cells.
type exportGen struct {
	pkgs    []string                            // import paths, sorted
	syms    map[string]map[string]reflect.Value // short name → table
	params  map[string][]string                 // "pkg.Func", "pkg.Type.Method" → names
	methods map[string][]string                 // method name → names (promoted methods)
	ifaces  []reflect.Type                      // Kiln interfaces with methods, sorted
	types   []reflect.Type                      // Kiln non-interface types, sorted
	notes   []string                            // what the log should say
}

// exportCall is one generated call.
type exportCall struct {
	name string // "tensor.Tensor.Add"
	src  string // the probe.Run statement
	err  string // why it could not be generated
}

var (
	tensorPtrType = reflect.TypeOf((*tensor.Tensor)(nil))
	gradsPtrType  = reflect.TypeOf((*tensor.Gradients)(nil))
	deviceType    = reflect.TypeOf(tensor.Device{})
	errorType     = reflect.TypeOf((*error)(nil)).Elem()
)

func newExportGen(t *testing.T) *exportGen {
	g := &exportGen{syms: map[string]map[string]reflect.Value{}, params: map[string][]string{},
		methods: map[string][]string{}}
	g.pkgs = symbols.Packages()
	for _, p := range g.pkgs {
		short := path.Base(p)
		g.syms[short] = symbols.Symbols[p+"/"+short]
		g.readParams(t, p)
		for _, name := range sortedKeys(g.syms[short]) {
			if rt, ok := typeSymbol(g.syms[short][name]); ok && !strings.HasPrefix(name, "_") {
				if rt.Kind() == reflect.Interface {
					if rt.NumMethod() > 0 {
						g.ifaces = append(g.ifaces, rt)
					}
				} else {
					g.types = append(g.types, rt)
				}
			}
		}
	}
	return g
}

// typeSymbol reports whether a symbol-table value stands for a type (yaegi
// extract writes reflect.ValueOf((*T)(nil))), and returns the type.
func typeSymbol(v reflect.Value) (reflect.Type, bool) {
	if v.Kind() == reflect.Pointer && v.IsNil() && !v.CanAddr() {
		return v.Type().Elem(), true
	}
	return nil, false
}

// readParams records the parameter names of the package's exported
// functions and methods, from its Go files in the module.
func (g *exportGen) readParams(t *testing.T, importPath string) {
	dir := filepath.Join("..", strings.TrimPrefix(importPath, kilnModule))
	if importPath == kilnModule+"kernel/display" {
		dir = "display"
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading the sources of %s: %v", importPath, err)
	}
	short := path.Base(importPath)
	names := func(fl *ast.FieldList) []string {
		var out []string
		if fl == nil {
			return out
		}
		for _, f := range fl.List {
			if len(f.Names) == 0 {
				out = append(out, "")
			}
			for _, n := range f.Names {
				out = append(out, n.Name)
			}
		}
		return out
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				ps := names(d.Type.Params)
				if d.Recv == nil {
					g.params[short+"."+d.Name.Name] = ps
					continue
				}
				rt := d.Recv.List[0].Type
				if s, ok := rt.(*ast.StarExpr); ok {
					rt = s.X
				}
				if id, ok := rt.(*ast.Ident); ok {
					g.params[short+"."+id.Name+"."+d.Name.Name] = ps
				}
				g.methods[d.Name.Name] = ps
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					it, ok := ts.Type.(*ast.InterfaceType)
					if !ok {
						continue
					}
					for _, m := range it.Methods.List {
						ft, ok := m.Type.(*ast.FuncType)
						if !ok || len(m.Names) == 0 {
							continue
						}
						g.params[short+"."+ts.Name.Name+"."+m.Names[0].Name] = names(ft.Params)
					}
				}
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func shortPkg(t reflect.Type) string { return path.Base(t.PkgPath()) }

func isKiln(t reflect.Type) bool { return strings.HasPrefix(t.PkgPath(), kilnModule) }

// typeExpr writes t as interpreted code names it.
func typeExpr(t reflect.Type) (string, error) {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name(), nil
		}
		if strings.Contains(t.PkgPath(), "/internal") {
			return "", fmt.Errorf("type %s is internal", t)
		}
		return shortPkg(t) + "." + t.Name(), nil
	}
	switch t.Kind() {
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return "any", nil
		}
	case reflect.Pointer:
		e, err := typeExpr(t.Elem())
		return "*" + e, err
	case reflect.Slice:
		e, err := typeExpr(t.Elem())
		return "[]" + e, err
	case reflect.Array:
		e, err := typeExpr(t.Elem())
		return fmt.Sprintf("[%d]%s", t.Len(), e), err
	case reflect.Map:
		k, err := typeExpr(t.Key())
		if err != nil {
			return "", err
		}
		v, err := typeExpr(t.Elem())
		return "map[" + k + "]" + v, err
	case reflect.Func:
		return funcTypeExpr(t, nil)
	}
	return "", fmt.Errorf("cannot write type %s", t)
}

// funcTypeExpr writes func type t, naming the parameters when names is not
// nil.
func funcTypeExpr(t reflect.Type, names []string) (string, error) {
	var ps, rs []string
	for i := range t.NumIn() {
		in := t.In(i)
		prefix := ""
		if t.IsVariadic() && i == t.NumIn()-1 {
			in, prefix = in.Elem(), "..."
		}
		e, err := typeExpr(in)
		if err != nil {
			return "", err
		}
		e = prefix + e
		if names != nil {
			e = names[i] + " " + e
		}
		ps = append(ps, e)
	}
	for i := range t.NumOut() {
		e, err := typeExpr(t.Out(i))
		if err != nil {
			return "", err
		}
		rs = append(rs, e)
	}
	s := "func(" + strings.Join(ps, ", ") + ")"
	switch len(rs) {
	case 0:
	case 1:
		s += " " + rs[0]
	default:
		s += " (" + strings.Join(rs, ", ") + ")"
	}
	return s, nil
}

// implName is the cell-declared implementation of Kiln interface t.
func implName(t reflect.Type) string { return "xImpl_" + shortPkg(t) + "_" + t.Name() }

// implementations declares a cell type implementing every Kiln interface.
func (g *exportGen) implementations() (string, error) {
	var b strings.Builder
	for _, it := range g.ifaces {
		name := implName(it)
		fmt.Fprintf(&b, "type %s struct{ n int }\n\n", name)
		for i := range it.NumMethod() {
			m := it.Method(i)
			names := make([]string, m.Type.NumIn())
			for j := range names {
				names[j] = "a" + strconv.Itoa(j)
			}
			sig, err := funcTypeExpr(m.Type, names)
			if err != nil {
				return "", fmt.Errorf("%s.%s: %v", it, m.Name, err)
			}
			body, ok := exportImplBodies[shortPkg(it)+"."+it.Name()+"."+m.Name]
			if !ok {
				body, err = g.returnStmt(m.Type)
				if err != nil {
					return "", fmt.Errorf("%s.%s: %v", it, m.Name, err)
				}
			}
			fmt.Fprintf(&b, "func (x *%s) %s%s {\n\t%s\n}\n\n", name, m.Name, strings.TrimPrefix(sig, "func"), body)
		}
	}
	return b.String(), nil
}

// returnStmt returns plausible values for the results of func type t,
// whose parameters are named a0, a1, ….
func (g *exportGen) returnStmt(t reflect.Type) (string, error) {
	if t.NumOut() == 0 {
		return "", nil
	}
	var rs []string
	for i := range t.NumOut() {
		out := t.Out(i)
		switch {
		case out == tensorPtrType:
			r := "xF32()"
			for j := range t.NumIn() {
				if t.In(j) == tensorPtrType {
					r = "a" + strconv.Itoa(j)
					break
				}
			}
			rs = append(rs, r)
		case out == errorType:
			rs = append(rs, "nil")
		default:
			z, err := zeroExpr(out)
			if err != nil {
				return "", err
			}
			rs = append(rs, z)
		}
	}
	return "return " + strings.Join(rs, ", "), nil
}

// zeroExpr is a plausible constant or zero value of t.
func zeroExpr(t reflect.Type) (string, error) {
	switch t.Kind() {
	case reflect.Bool:
		return "false", nil
	case reflect.String:
		return `"exportstest"`, nil
	case reflect.Float32, reflect.Float64:
		return "0.1", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "0", nil
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Func, reflect.Interface, reflect.Chan:
		return "nil", nil
	case reflect.Struct, reflect.Array:
		e, err := typeExpr(t)
		return e + "{}", err
	}
	return "", fmt.Errorf("no zero value for %s", t)
}

// recipe returns an expression of type T or *T for Kiln type t (the
// receiver of its methods; see the file comment for the order tried).
func (g *exportGen) recipe(t reflect.Type, depth int) (string, error) {
	key := shortPkg(t) + "." + t.Name()
	if r, ok := exportRecipes[key]; ok {
		return r, nil
	}
	if depth > 3 {
		return "", fmt.Errorf("no recipe for %s (too deep)", key)
	}
	syms := g.syms[shortPkg(t)]
	returnsT := func(ft reflect.Type) bool {
		return ft.NumOut() == 1 && (ft.Out(0) == t || ft.Out(0) == reflect.PointerTo(t))
	}
	candidates := []string{"New" + t.Name()}
	for _, name := range sortedKeys(syms) {
		if name != "New"+t.Name() && !strings.HasPrefix(name, "_") {
			candidates = append(candidates, name)
		}
	}
	for _, name := range candidates {
		v, ok := syms[name]
		if !ok || v.Kind() != reflect.Func || !returnsT(v.Type()) {
			continue
		}
		args, err := g.inlineArgs(shortPkg(t)+"."+name, v.Type(), 0, depth+1)
		if err != nil {
			continue
		}
		return shortPkg(t) + "." + name + "(" + strings.Join(args, ", ") + ")", nil
	}
	te, err := typeExpr(t)
	if err != nil {
		return "", err
	}
	switch t.Kind() {
	case reflect.Struct:
		return "&" + te + "{}", nil
	case reflect.Slice, reflect.Map:
		return te + "{}", nil
	case reflect.Func:
		lit, err := g.funcLiteral(t)
		if err != nil {
			return "", err
		}
		return te + "(" + lit + ")", nil
	}
	// A named basic type: one of the package's constants of it.
	for _, name := range sortedKeys(syms) {
		if v := syms[name]; v.IsValid() && v.Type() == t && !v.CanAddr() {
			return shortPkg(t) + "." + name, nil
		}
	}
	z, err := zeroExpr(t)
	if err != nil {
		return "", err
	}
	return te + "(" + z + ")", nil
}

// inlineArgs builds arguments of func type ft as expressions (for
// recipes), skipping the first skip parameters.
func (g *exportGen) inlineArgs(target string, ft reflect.Type, skip, depth int) ([]string, error) {
	var args []string
	names := g.paramNames(target, ft.NumIn()-skip)
	for i := skip; i < ft.NumIn(); i++ {
		in := ft.In(i)
		if ft.IsVariadic() && i == ft.NumIn()-1 {
			continue // none needed
		}
		e, _, err := g.value(target, names[i-skip], in, depth)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	return args, nil
}

// paramNames returns the parameter names of target, "" where unknown.
func (g *exportGen) paramNames(target string, n int) []string {
	ps, ok := g.params[target]
	if !ok {
		if i := strings.LastIndexByte(target, '.'); i >= 0 {
			ps = g.methods[target[i+1:]]
		}
	}
	out := make([]string, n)
	if len(ps) == n {
		copy(out, ps)
	}
	return out
}

var (
	indexHint = regexp.MustCompile(`(?i)^(index|indices|idx|lengths?|inputlengths|targetlengths)$`)
	// labelHint names targets that are class indices for the losses in
	// classHint (the others take float targets).
	labelHint = regexp.MustCompile(`(?i)^(target|targets|labels?|classes|y)$`)
	classHint = regexp.MustCompile(`CrossEntropy|NLL|CTC|CosineEmbedding|MarginRanking`)
	maskHint  = regexp.MustCompile(`(?i)mask|cond`)
)

// value returns an expression of type t for parameter name of target, and
// whether the expression's static type is t itself (else it is a concrete
// type the call converts, as for interfaces).
func (g *exportGen) value(target, name string, t reflect.Type, depth int) (expr string, exact bool, err error) {
	lname := strings.ToLower(name)
	pkg := target[:strings.IndexByte(target, '.')]
	switch {
	case t == tensorPtrType:
		switch {
		case indexHint.MatchString(name), labelHint.MatchString(name) && classHint.MatchString(target):
			return "xI64()", true, nil
		case maskHint.MatchString(name):
			return "xBool()", true, nil
		}
		return "xF32()", true, nil
	case t == deviceType:
		return "xDev", true, nil
	case t == gradsPtrType:
		return "xGrads()", true, nil
	case t == reflect.TypeFor[*exec.Cmd]():
		// Cells cannot import os/exec (restricted mode): a typed nil from
		// train.KilnCommand (KILN_BIN names a file that is not a program),
		// which FollowCommand refuses before it starts anything.
		return "xCmd", false, nil
	case shortPkg(t) == "backends" && t.Name() == "View":
		switch {
		case indexHint.MatchString(name):
			return "xView(backends.Int64)", true, nil
		case maskHint.MatchString(name):
			return "xView(backends.Bool)", true, nil
		}
		return "xView(backends.Float32)", true, nil
	case t.Kind() == reflect.Interface && t.NumMethod() == 0:
		switch pkg {
		case "nn", "optim":
			return "xModel()", false, nil
		case "display":
			return `xPageT{"x"}`, false, nil
		}
		return "xF32()", false, nil
	case t.Kind() == reflect.Interface && isKiln(t):
		return "&" + implName(t) + "{}", false, nil
	case t == errorType:
		return `errors.New("exportstest")`, false, nil
	case t.Kind() == reflect.Interface:
		switch t.String() {
		case "image.Image":
			return "image.NewRGBA(image.Rect(0, 0, 2, 2))", false, nil
		case "context.Context":
			return "ctx", false, nil
		case "io.Writer":
			return "io.Discard", false, nil
		}
		return "", false, fmt.Errorf("no value for interface %s", t)
	case t.Kind() == reflect.Func:
		lit, err := g.funcLiteral(t)
		if err != nil {
			return "", false, err
		}
		if t.Name() != "" {
			te, err := typeExpr(t)
			return te + "(" + lit + ")", true, err
		}
		return lit, true, nil
	case t.Kind() == reflect.Pointer && isKiln(t.Elem()) && t.Elem().Kind() == reflect.Struct:
		r, err := g.recipe(t.Elem(), depth)
		if err != nil {
			return "", false, err
		}
		if !strings.HasPrefix(r, "&") && !g.returnsPointer(r, t) {
			// A recipe giving a value: take a pointer to a copy.
			return "func() " + mustType(t) + " { v := " + r + "; return &v }()", true, nil
		}
		return r, true, nil
	case t.Kind() == reflect.Struct && isKiln(t):
		if strings.HasSuffix(t.Name(), "Config") || strings.HasSuffix(t.Name(), "Options") ||
			strings.HasSuffix(t.Name(), "Masks") || strings.HasSuffix(t.Name(), "State") {
			return mustType(t) + "{}", true, nil
		}
		if r, ok := exportRecipes[shortPkg(t)+"."+t.Name()]; ok {
			return r, true, nil
		}
		return mustType(t) + "{}", true, nil
	case t.Name() != "" && isKiln(t) && t.Kind() != reflect.Slice && t.Kind() != reflect.Map:
		r, err := g.recipe(t, depth)
		return r, true, err
	}
	if t == reflect.TypeFor[time.Time]() {
		return "time.Unix(1e9, 0)", true, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return "false", true, nil
	case reflect.String:
		if s, ok := exportStrings[target+"/"+name]; ok {
			return strconv.Quote(s), true, nil
		}
		for _, h := range exportStringHints {
			if strings.Contains(lname, h.sub) {
				return strconv.Quote(h.value), true, nil
			}
		}
		return `"x"`, true, nil
	case reflect.Float32, reflect.Float64:
		return "0.5", true, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch {
		case strings.HasPrefix(target[strings.LastIndexByte(target, '.')+1:], "New"):
			return "2", true, nil // sizes of a layer
		case strings.Contains(lname, "index") || lname == "i":
			return "0", true, nil
		case strings.HasPrefix(lname, "dim") || strings.Contains(lname, "axis"):
			return "1", true, nil
		}
		return "2", true, nil
	case reflect.Slice:
		te, err := typeExpr(t)
		if err != nil {
			return "", false, err
		}
		n := 2
		switch t.Elem().Kind() {
		case reflect.Float32, reflect.Float64, reflect.Int32, reflect.Int64, reflect.Bool, reflect.Uint8:
			n = 4 // data for a 2×2 tensor
		case reflect.Int:
			if strings.Contains(lname, "axes") || strings.Contains(lname, "dims") {
				n = 1
			}
		}
		if t.Elem().Kind() == reflect.Struct && t.Elem().Name() == "NamedParam" {
			return "nn.Params(xModel())", true, nil
		}
		var elems []string
		for range n {
			e, _, err := g.value(target, name, t.Elem(), depth)
			if err != nil {
				return "", false, err
			}
			elems = append(elems, e)
		}
		return te + "{" + strings.Join(elems, ", ") + "}", true, nil
	case reflect.Array:
		te, err := typeExpr(t)
		if err != nil {
			return "", false, err
		}
		var elems []string
		for range t.Len() {
			e, _, err := g.value(target, name, t.Elem(), depth)
			if err != nil {
				return "", false, err
			}
			elems = append(elems, e)
		}
		return te + "{" + strings.Join(elems, ", ") + "}", true, nil
	case reflect.Map:
		te, err := typeExpr(t)
		if err != nil {
			return "", false, err
		}
		if t.Key().Kind() != reflect.String {
			return te + "{}", true, nil
		}
		key := `"x"`
		if t.Elem() == tensorPtrType {
			key = `"L1.weight"`
		}
		v, _, err := g.value(target, "", t.Elem(), depth)
		if err != nil {
			return "", false, err
		}
		return te + "{" + key + ": " + v + "}", true, nil
	case reflect.Pointer:
		e, _, err := g.value(target, name, t.Elem(), depth)
		if err != nil {
			return "", false, err
		}
		return "func() " + mustType(t) + " { v := " + e + "; return &v }()", true, nil
	}
	return "", false, fmt.Errorf("no value for %s", t)
}

func mustType(t reflect.Type) string {
	s, err := typeExpr(t)
	if err != nil {
		return "?" + t.String()
	}
	return s
}

// returnsPointer reports whether recipe r is a call of a function whose
// result is the pointer type t.
func (g *exportGen) returnsPointer(r string, t reflect.Type) bool {
	i := strings.IndexByte(r, '(')
	if i < 0 {
		return false
	}
	name := r[:i]
	dot := strings.IndexByte(name, '.')
	if dot < 0 {
		return false
	}
	v, ok := g.syms[name[:dot]][name[dot+1:]]
	return ok && v.Kind() == reflect.Func && v.Type().NumOut() >= 1 && v.Type().Out(0) == t
}

// funcLiteral writes a func literal of type t returning plausible values.
func (g *exportGen) funcLiteral(t reflect.Type) (string, error) {
	names := make([]string, t.NumIn())
	for i := range names {
		names[i] = "a" + strconv.Itoa(i)
	}
	sig, err := funcTypeExpr(t, names)
	if err != nil {
		return "", err
	}
	body, err := g.returnStmt(t)
	if err != nil {
		return "", err
	}
	for i := range names {
		body = "_ = a" + strconv.Itoa(i) + "; " + body
	}
	return sig + " { " + body + " }", nil
}

// calls generates every call of package importPath.
func (g *exportGen) calls(importPath string) []exportCall {
	short := path.Base(importPath)
	syms := g.syms[short]
	var out []exportCall
	for _, name := range sortedKeys(syms) {
		if strings.HasPrefix(name, "_") {
			continue
		}
		v := syms[name]
		target := short + "." + name
		if rt, ok := typeSymbol(v); ok {
			out = append(out, g.methodCalls(rt)...)
			continue
		}
		if v.Kind() != reflect.Func || v.CanAddr() {
			out = append(out, exportCall{name: target, src: fmt.Sprintf("probe.Run(%q, func() {\n\tprobe.Enter()\n\t_ = %s\n})\n", target, target)})
			continue
		}
		out = append(out, g.call(target, "", target, v.Type(), 0))
	}
	return out
}

// methodCalls generates the calls of every method of type t.
func (g *exportGen) methodCalls(t reflect.Type) []exportCall {
	typeName := shortPkg(t) + "." + t.Name()
	var out []exportCall
	if t.Kind() == reflect.Interface {
		recv, impl := g.interfaceReceiver(t)
		if impl != "" {
			g.notes = append(g.notes, impl)
		}
		for i := range t.NumMethod() {
			m := t.Method(i)
			target := typeName + "." + m.Name
			pre := "var r " + typeName + " = " + recv
			out = append(out, g.call(target, pre, "r."+m.Name, m.Type, 0))
		}
		return out
	}
	recv, err := g.recipe(t, 0)
	pt := reflect.PointerTo(t)
	for i := range pt.NumMethod() {
		m := pt.Method(i)
		target := typeName + "." + m.Name
		if err != nil {
			out = append(out, exportCall{name: target, err: "no receiver: " + err.Error()})
			continue
		}
		out = append(out, g.call(target, "r := "+recv, "r."+m.Name, m.Type, 1))
	}
	return out
}

// interfaceReceiver returns an expression holding a compiled
// implementation of interface t, and a note when there is none.
func (g *exportGen) interfaceReceiver(t reflect.Type) (string, string) {
	if r, ok := exportRecipes[shortPkg(t)+"."+t.Name()]; ok {
		return r, ""
	}
	var found []reflect.Type
	for _, c := range g.types {
		if c.Implements(t) || reflect.PointerTo(c).Implements(t) {
			found = append(found, c)
		}
	}
	// Prefer the interface's own package, then the first in order.
	slices.SortStableFunc(found, func(a, b reflect.Type) int {
		ai, bi := a.PkgPath() != t.PkgPath(), b.PkgPath() != t.PkgPath()
		switch {
		case ai == bi:
			return 0
		case !ai:
			return -1
		}
		return 1
	})
	for _, c := range found {
		r, err := g.recipe(c, 0)
		if err != nil {
			continue
		}
		isPtr := strings.HasPrefix(r, "&") || g.returnsPointer(r, reflect.PointerTo(c))
		switch {
		case isPtr || c.Implements(t):
			return r, ""
		default: // only *c implements t: take a pointer to a copy
			return "func() *" + mustType(c) + " { v := " + r + "; return &v }()", ""
		}
	}
	return "&" + implName(t) + "{}", fmt.Sprintf("%s.%s: no compiled Kiln type implements it; its methods are called on a cell-declared implementation",
		shortPkg(t), t.Name())
}

// call generates one call: pre builds the receiver (if any), fn is the
// callee, ft its type, whose first skip parameters are not arguments.
func (g *exportGen) call(target, pre, fn string, ft reflect.Type, skip int) exportCall {
	c := exportCall{name: target}
	var lines []string
	if pre != "" {
		lines = append(lines, pre)
	}
	if cl, ok := exportCleanup[target]; ok {
		lines = append(lines, cl)
	}
	names := g.paramNames(target, ft.NumIn()-skip)
	var args []string
	for i := skip; i < ft.NumIn(); i++ {
		in := ft.In(i)
		variadic := ft.IsVariadic() && i == ft.NumIn()-1
		count := 1
		if variadic {
			in = in.Elem()
			if in.Kind() == reflect.Int && strings.Contains(strings.ToLower(names[i-skip]), "shape") {
				count = 2
			}
		}
		for range count {
			e, exact, err := g.value(target, names[i-skip], in, 0)
			if err != nil {
				c.err = fmt.Sprintf("argument %d (%s): %v", i-skip, in, err)
				return c
			}
			v := fmt.Sprintf("a%d", len(args))
			if exact {
				te, err := typeExpr(in)
				if err != nil {
					c.err = fmt.Sprintf("argument %d: %v", i-skip, err)
					return c
				}
				lines = append(lines, fmt.Sprintf("var %s %s = %s", v, te, e))
			} else {
				lines = append(lines, fmt.Sprintf("%s := %s", v, e))
			}
			args = append(args, v)
		}
	}
	callExpr := fn + "(" + strings.Join(args, ", ") + ")"
	switch ft.NumOut() {
	case 0:
	case 1:
		callExpr = "_ = " + callExpr
	default:
		callExpr = strings.Repeat("_, ", ft.NumOut()-1) + "_ = " + callExpr
	}
	lines = append(lines, "probe.Enter()", callExpr)
	c.src = fmt.Sprintf("probe.Run(%q, func() {\n\t%s\n})\n", target, strings.Join(lines, "\n\t"))
	return c
}

// prelude is the import block of the declarations cell.
func (g *exportGen) prelude() string {
	var b strings.Builder
	b.WriteString("import (\n\t\"errors\"\n\t\"image\"\n\t\"time\"\n\tprobe \"" + probeImport + "\"\n")
	for _, p := range g.pkgs {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n")
	return b.String()
}

var cellLine = regexp.MustCompile(`^(\d+):(\d+): `)

func TestEveryExportCallable(t *testing.T) {
	t.Setenv("KILN_BIN", "testdata/exports/hello.txt") // not a program: train.KilnCommand fails, runs nothing
	g := newExportGen(t)
	pr := &exportProbe{results: map[string]*exportOutcome{}}
	s := newSession(t, kernel.Options{Symbols: []interp.Exports{{
		probeImport + "/probe": {
			"Run":           reflect.ValueOf(pr.run),
			"Enter":         reflect.ValueOf(pr.enter),
			"NoModuleScope": reflect.ValueOf(func() string { return "" }),
		},
	}}})
	impls, err := g.implementations()
	if err != nil {
		t.Fatalf("cell-declared implementations of Kiln's interfaces: %v", err)
	}
	decls := g.prelude() + exportDeclarations + impls
	if dir := os.Getenv("KILN_EXPORTS_DUMP"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "declarations.go.txt"), []byte(decls), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Execute(context.Background(), decls, nil); err != nil {
		t.Fatalf("declarations cell: %v\n%s", describe(err), numbered(decls))
	}

	failures := map[string]string{}
	total := 0
	for _, p := range g.pkgs {
		calls := g.calls(p)
		var runnable []exportCall
		for _, c := range calls {
			total++
			if c.err != "" {
				failures[c.name] = "not generated: " + c.err
				continue
			}
			runnable = append(runnable, c)
		}
		if dir := os.Getenv("KILN_EXPORTS_DUMP"); dir != "" {
			var b strings.Builder
			for _, c := range runnable {
				b.WriteString(c.src)
			}
			if err := os.WriteFile(filepath.Join(dir, path.Base(p)+".go.txt"), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for name, why := range runBatch(t, s, runnable) {
			failures[name] = why
		}
		for _, c := range runnable {
			if _, failed := failures[c.name]; failed {
				continue
			}
			out, ok := pr.results[c.name]
			switch {
			case !ok:
				failures[c.name] = "did not run"
			case out.setup:
				failures[c.name] = fmt.Sprintf("building the receiver or arguments panicked in %s: %s", out.origin, out.msg)
			case !out.reached:
				failures[c.name] = fmt.Sprintf("panicked in %s: %s", out.origin, out.msg)
			case out.msg != "":
				t.Logf("reached %s, which panicked in %s: %s", c.name, out.origin, firstLineOf(out.msg))
			}
		}
	}
	for _, n := range g.notes {
		t.Log(n)
	}
	t.Logf("%d exported functions, methods, variables and constants; %d reached compiled code", total, total-len(failures))
	if len(failures) > 0 {
		var b strings.Builder
		for _, name := range sortedKeys(failures) {
			fmt.Fprintf(&b, "\n  %s: %s", name, failures[name])
		}
		t.Errorf("%d exports cannot be called from interpreted code:%s", len(failures), b.String())
	}
}

// runBatch runs calls in one cell; a call the cell cannot compile is
// dropped (and reported) and the rest run again. Where a failure cannot be
// placed, the calls run one cell each.
func runBatch(t *testing.T, s *kernel.Session, calls []exportCall) map[string]string {
	failed := map[string]string{}
	pending := calls
	for len(pending) > 0 {
		var b strings.Builder
		starts := make([]int, len(pending))
		line := 1
		for i, c := range pending {
			starts[i] = line
			b.WriteString(c.src)
			line += strings.Count(c.src, "\n")
		}
		_, err := s.Execute(context.Background(), b.String(), nil)
		if err == nil {
			return failed
		}
		var ke *kernel.Error
		if errors.As(err, &ke) && ke.Name != "panic" {
			if m := cellLine.FindStringSubmatch(ke.Value); m != nil {
				l, _ := strconv.Atoi(m[1])
				i := sort.SearchInts(starts, l+1) - 1
				if i >= 0 && i < len(pending) {
					failed[pending[i].name] = fmt.Sprintf("%s at line %d of:\n%s: %s", ke.Name, l-starts[i]+1,
						pending[i].src, strings.TrimPrefix(ke.Value, m[0]))
					pending = slices.Delete(slices.Clone(pending), i, i+1)
					continue
				}
			}
		}
		t.Logf("a batch failed as a whole (%v); running its calls one by one", describe(err))
		for _, c := range pending {
			if _, err := s.Execute(context.Background(), c.src, nil); err != nil {
				failed[c.name] = describe(err)
			}
		}
		return failed
	}
	return failed
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%4d %s\n", i+1, l)
	}
	return b.String()
}

// The tests below check, from notebook cells, that values of types declared
// in cells satisfy what compiled Kiln code asserts on them (the MapTypes
// entries of package symbols and nn's handling of yaegi's wrappers).

// kilnImports is the import cell of the tests below.
const kilnImports = `import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)
var _ = io.EOF
var _ = sort.Strings
var _ = strings.Join
var _ = display.HTML
var _ = optim.Float
`

// A notebook-declared model of compiled layers is named as PyTorch names it
// and trains with an optimizer, from interpreted code.
func TestInterpretedMLPTrains(t *testing.T) {
	s := newSession(t, kernel.Options{})
	got := run(t, s, kilnImports, `type MLP struct {
	L1, L2 *nn.Linear
}

func (m *MLP) Forward(x *tensor.Tensor) *tensor.Tensor {
	return m.L2.Forward(m.L1.Forward(x).Tanh())
}

seed, pos := tensor.CPU().RNGState()
tensor.CPU().Seed(7)
dev := tensor.CPU().Autodiff()
model := &MLP{L1: nn.NewLinear(dev, 3, 8), L2: nn.NewLinear(dev, 8, 1)}
tensor.CPU().SetRNGState(seed, pos)
names := []string{}
for _, p := range nn.Params(model) {
	names = append(names, p.Name)
}
keys := []string{}
for k := range nn.StateDict(model) {
	keys = append(keys, k)
}
sort.Strings(keys)
strings.Join(names, " ") + " | " + strings.Join(keys, " ")`)
	const want = "L1.weight L1.bias L2.weight L2.bias | L1.bias L1.weight L2.bias L2.weight"
	if got != want {
		t.Errorf("names of a cell-declared MLP: %q, want %q", got, want)
	}
	got = run(t, s, `x := tensor.FromFloat32s(dev, []float32{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, 4, 3)
y := tensor.FromFloat32s(dev, []float32{0.5, -0.5, 0.25, 1}, 4, 1)
opt := optim.NewAdamW(optim.AdamWConfig{LR: 0.05})
losses := []float64{}
for i := 0; i < 80; i++ {
	tensor.Scope(func() {
		loss := nn.MSE(model.Forward(x), y, nn.MSEOptions{})
		losses = append(losses, loss.Item())
		opt.Step(model, loss.Backward())
	})
}
st, err := opt.State()
if err != nil {
	panic(err)
}
slots := []string{}
for k := range st.Tensors {
	slots = append(slots, k)
}
sort.Strings(slots)
fmt.Sprint(losses[0], " ", losses[len(losses)-1], " ", strings.Join(slots, " "))`)
	var first, last float64
	var slots string
	fields := strings.SplitN(got, " ", 3)
	if len(fields) == 3 {
		first, _ = strconv.ParseFloat(fields[0], 64)
		last, _ = strconv.ParseFloat(fields[1], 64)
		slots = fields[2]
	}
	if !(first > 0 && last < first/10) {
		t.Errorf("training a cell-declared MLP with AdamW: loss went from %v to %v, want it to fall tenfold (cell result %q)", first, last, got)
	}
	if !strings.HasPrefix(slots, "L1.bias.exp_avg L1.bias.exp_avg_sq L1.weight.exp_avg") {
		t.Errorf("optimizer state keys %q, want them named after the cell-declared fields", slots)
	}
}

// Cell-declared layers in an nn.Sequential (a variadic nn.Module
// parameter) run, are named by position without yaegi's wrapper showing,
// and have their modes set by nn.Train and nn.Eval: their own SetTraining
// (wrapped with it, through MapTypes), or an embedded nn.Mode.
func TestInterpretedLayersInSequential(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, kilnImports, `dev := tensor.CPU()

type Scale struct{ W *nn.Param }

func (s *Scale) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Mul(s.W.Tensor) }

// Noise has a mode of its own.
type Noise struct{ on bool }

func (n *Noise) Forward(x *tensor.Tensor) *tensor.Tensor { return x }
func (n *Noise) SetTraining(on bool)                     { n.on = on }
func (n *Noise) Training() bool                          { return n.on }

// Drop embeds nn.Mode.
type Drop struct {
	nn.Mode
	P float64
}

func (d *Drop) Forward(x *tensor.Tensor) *tensor.Tensor { return x }

type Net struct {
	Body nn.Sequential
	Head *nn.Linear
	Gate nn.Module // a cell-declared module in a field of interface type
}

noise, gate, drop := &Noise{on: true}, &Noise{on: true}, &Drop{}
net := &Net{
	Body: nn.NewSequential(&Scale{W: nn.NewParam(tensor.Ones(dev, 2))}, noise, drop, nn.NewLinear(dev, 2, 2)),
	Head: nn.NewLinear(dev, 2, 1),
	Gate: gate,
}`)
	names := run(t, s, `names := []string{}
for _, p := range nn.Params(net) {
	names = append(names, p.Name)
}
strings.Join(names, " ")`)
	if want := "Body.0.W Body.3.weight Body.3.bias Head.weight Head.bias"; names != want {
		t.Errorf("names %q, want %q", names, want)
	}
	if got := run(t, s, `net.Head.Forward(net.Body.Forward(tensor.Ones(dev, 3, 2))).Shape()`); got != "[3 1]" {
		t.Errorf("forward through the Sequential gives shape %s, want [3 1]", got)
	}
	if got := run(t, s, `nn.Eval(net)
fmt.Sprint(noise.on, gate.on, drop.Training(), nn.IsTraining(net))`); got != "false false false false" {
		t.Errorf("after nn.Eval: Noise, Gate, Drop and IsTraining are %s, want all false", got)
	}
	if got := run(t, s, `nn.Train(net)
fmt.Sprint(noise.on, gate.on, drop.Training(), nn.IsTraining(net))`); got != "true true true true" {
		t.Errorf("after nn.Train: Noise, Gate, Drop and IsTraining are %s, want all true", got)
	}
	if got := run(t, s, `sum := nn.Summary(net).String()
strings.Contains(sum, "IValue")`); got != "false" {
		t.Errorf("the summary shows yaegi's wrapper field IValue")
	}
}

// A cell-declared model with a mode of its own, or an embedded nn.Mode, is
// switched by nn.Train and nn.Eval given the model itself.
func TestInterpretedModelModes(t *testing.T) {
	s := newSession(t, kernel.Options{})
	got := run(t, s, kilnImports, `dev := tensor.CPU()

type Gated struct {
	on bool
	L  *nn.Linear
}

func (g *Gated) SetTraining(on bool) { g.on = on }
func (g *Gated) Training() bool      { return g.on }

type Plain struct {
	nn.Mode
	L *nn.Linear
}

g, p := &Gated{on: true, L: nn.NewLinear(dev, 2, 2)}, &Plain{L: nn.NewLinear(dev, 2, 2)}
nn.Eval(g)
nn.Eval(p)
a := fmt.Sprint(g.on, nn.IsTraining(g), p.Training(), nn.IsTraining(p))
nn.Train(g)
nn.Train(p)
a + " " + fmt.Sprint(g.on, nn.IsTraining(g), p.Training(), nn.IsTraining(p))`)
	if want := "false false false false true true true true"; got != want {
		t.Errorf("modes after Eval then Train: %s, want %s", got, want)
	}
}

// optim asserts schedules to MomentumSchedule and to its validator, and
// optimizers to MomentumSetter: cell-declared ones keep those methods.
func TestInterpretedSchedulesAndOptimizers(t *testing.T) {
	s := newSession(t, kernel.Options{})
	got := run(t, s, kilnImports, `type Cyclic struct{ validated bool }

func (c *Cyclic) LR(step int) float64                { return 0.1 / float64(step+1) }
func (c *Cyclic) Momentum(step int) (float64, bool) { return 0.5 + 0.1*float64(step), true }
func (c *Cyclic) Validate() error                    { c.validated = true; return nil }

opt := optim.NewSGD(optim.SGDConfig{LR: 1, Momentum: 0.9})
c := &Cyclic{}
sched := optim.NewScheduler(opt, c)
sched.Step()
c2 := &Cyclic{}
seq := optim.NewSequentialLR([]optim.Schedule{c2, optim.NewStepLR(0.1, 2, 0.5)}, []int{3})
m, ok := seq.Momentum(1)
fmt.Sprint(opt.LR(), opt.Momentum(), c.validated, c2.validated, m, ok)`)
	if want := "0.05 0.6 true true 0.6 true"; got != want {
		t.Errorf("cell-declared schedule: LR, momentum, validated (twice), SequentialLR momentum: %s, want %s", got, want)
	}
	got = run(t, s, `type MyOpt struct{ lr, m float64 }

func (o *MyOpt) Step(model any, grads *tensor.Gradients)                    {}
func (o *MyOpt) StepParams(params []nn.NamedParam, grads *tensor.Gradients) {}
func (o *MyOpt) ZeroState()                                                 {}
func (o *MyOpt) LR() float64                                                { return o.lr }
func (o *MyOpt) SetLR(lr float64)                                           { o.lr = lr }
func (o *MyOpt) State() (*optim.State, error)                               { return &optim.State{}, nil }
func (o *MyOpt) LoadState(s *optim.State) error                             { return nil }
func (o *MyOpt) Momentum() float64                                          { return o.m }
func (o *MyOpt) SetMomentum(m float64)                                      { o.m = m }

mine := &MyOpt{}
optim.NewScheduler(mine, optim.OneCycleLR{MaxLR: 1, TotalSteps: 10})
fmt.Sprint(mine.lr > 0, mine.m)`)
	if want := "true 0.95"; got != want {
		t.Errorf("cell-declared optimizer under OneCycleLR: rate set, momentum %s, want %s", got, want)
	}
}

// display's hooks see the methods of cell-declared values: errors, readers,
// JSON marshalers (HTML and the other renderers are tested in package
// symbols).
func TestInterpretedDisplayValues(t *testing.T) {
	s := newSession(t, kernel.Options{})
	got := run(t, s, kilnImports, `type Oops struct{}

func (Oops) Error() string { return "oops" }

type Reader struct{ done bool }

func (r *Reader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	return copy(p, "read me"), nil
}

type Doc struct{}

func (Doc) MarshalJSON() ([]byte, error) { return []byte("{\"a\":1}"), nil }

// (A cell's "x := f().Data[k]" trips yaegi's global initialisers: one
// step at a time.)
text := display.Text(Oops{})
rendered := display.Render(Oops{})
read := display.Any("text/plain", &Reader{})
js := display.JSON(Doc{})
fmt.Sprintf("%s|%v|%v|%v", text, rendered.Data["text/plain"], read.Data["text/plain"],
	strings.Join(strings.Fields(fmt.Sprint(js.Data["text/plain"])), ""))`)
	if want := `oops|oops|read me|{"a":1}`; got != want {
		t.Errorf("display of cell-declared error, reader and JSON marshaler: %q, want %q", got, want)
	}
}

// A cell-declared nn.Initializer configures a layer. yaegi v0.16.1 does not
// wrap a cell value placed directly in a composite literal of a compiled
// type (nn.LinearConfig{WeightInit: &Init{}}, nn.Sequential{&Layer{}}):
// "reflect.Set: value of type … is not assignable". Going through a
// variable of the interface type works; this test keeps both facts, so that
// the day yaegi wraps literals, advice about the workaround can go.
func TestInterpretedValuesInCompiledLiterals(t *testing.T) {
	s := newSession(t, kernel.Options{})
	got := run(t, s, kilnImports, `dev := tensor.CPU()

type Threes struct{}

func (Threes) Init(dev tensor.Device, shape []int, fanIn, fanOut int) *tensor.Tensor {
	return tensor.Full(dev, 3, shape...)
}

type Same struct{}

func (Same) Forward(x *tensor.Tensor) *tensor.Tensor { return x }

var init3 nn.Initializer = Threes{}
l := nn.NewLinear(dev, 2, 2, nn.LinearConfig{WeightInit: init3})
var same nn.Module = Same{}
seq := nn.Sequential{same, nn.ReLU{}}
fmt.Sprint(l.Weight.Float32s(), len(seq))`)
	if want := "[3 3 3 3] 2"; got != want {
		t.Errorf("cell-declared Initializer and Module through variables: %q, want %q", got, want)
	}
	for _, cell := range []string{
		`nn.NewLinear(dev, 2, 2, nn.LinearConfig{WeightInit: Threes{}})`,
		`nn.Sequential{Same{}, nn.ReLU{}}`,
	} {
		_, err := s.Execute(context.Background(), cell, nil)
		var ke *kernel.Error
		if err == nil || !errors.As(err, &ke) || !strings.Contains(ke.Value, "is not assignable") {
			t.Errorf("%s: %v; yaegi no longer refuses cell values in compiled composite literals: "+
				"update this test and drop any advice about the workaround", cell, err)
		}
	}
}

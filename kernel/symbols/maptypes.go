package symbols

import (
	"encoding"
	"encoding/json"
	"fmt"
	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/metrics"
	"image"
	"io"
	"reflect"

	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/viz"
)

// Why MapTypes: when interpreted code passes a value of a type declared in a
// cell to compiled code, yaegi hands over either the bare value (no methods:
// reflect cannot build types with methods at run time) or a generated
// wrapper struct implementing the interface the compiled side declared. A
// compiled `v.(display.HTMLer)` on an `any` parameter, or an
// `s.(optim.MomentumSchedule)` on an optim.Schedule parameter, therefore
// fails unless yaegi was told to build a richer wrapper. MapTypes tells it,
// in two ways (yaegi v0.16.1, interp/run.go callBin and interp/use.go
// getWrapper):
//
//   - Keyed by a compiled function: for each argument of a call to it, the
//     interfaces tried in order; the first one the argument's interpreted
//     type implements is the wrapper it is passed in (so put combined
//     interfaces first). Each of these interfaces needs its wrapper
//     registered under its own package path as "_Name" (yaegi extract
//     generates those for exported interfaces; the combined ones below are
//     hand-written and registered in init). This is how `any` parameters
//     get methods. Only values whose static type at the call is the
//     declared (concrete) type are wrapped: an interpreted value already
//     stored in an `any` variable reaches compiled code bare. Methods cannot
//     be keyed, only functions.
//   - Keyed by an interface's generated wrapper ("_Name"): wrapper struct
//     types with more methods, tried in order, used instead of the plain
//     wrapper wherever yaegi converts an interpreted value to that
//     interface (arguments, composite literals, assignments), when the
//     value has every method of the richer one. This is how a cell-declared
//     optim.Schedule keeps its Momentum method for optim's
//     MomentumSchedule assertion.
//
// yaegi v0.16.1 also leaves the elements of a variadic parameter of
// interface type unwrapped (nn.NewSequential(layers ...Module) fails with
// "reflect: cannot use *struct {…} as type nn.Module"); a function-keyed
// entry naming the interface makes it wrap them.
//
// To add an entry: MapTypes[reflect.ValueOf(pkg.Func)] = []reflect.Type{
// reflect.TypeOf((*pkg.Iface)(nil)).Elem(), …}, or MapTypes[wrapperKey[…]]
// = []reflect.Type{reflect.TypeOf(wrapStruct{})}. Wrapper structs have the
// generated layout: field IValue, then one func field per method, named W
// followed by the method name, and methods calling those fields.

// MapTypes lists, per compiled function or interface wrapper, the
// interfaces or wrappers interpreted values are passed in (see above). It is
// registered under Symbols["."].
var MapTypes = map[reflect.Value][]reflect.Type{}

// RenderInterfaces are the interfaces a value shown as a cell result can be
// wrapped in so that display.Render sees its methods, most specific first.
// The kernel uses the same list for the function that receives cell results.
var RenderInterfaces = []reflect.Type{
	reflect.TypeOf((*mimeStringer)(nil)).Elem(),
	reflect.TypeOf((*htmlStringer)(nil)).Elem(),
	reflect.TypeOf((*display.MIMEr)(nil)).Elem(),
	reflect.TypeOf((*display.Renderer)(nil)).Elem(),
	reflect.TypeOf((*display.SimpleRenderer)(nil)).Elem(),
	reflect.TypeOf((*display.HTMLer)(nil)).Elem(),
	reflect.TypeOf((*display.Markdowner)(nil)).Elem(),
	reflect.TypeOf((*display.SVGer)(nil)).Elem(),
	reflect.TypeOf((*display.PNGer)(nil)).Elem(),
	reflect.TypeOf((*display.JPEGer)(nil)).Elem(),
	reflect.TypeOf((*display.PDFer)(nil)).Elem(),
	reflect.TypeOf((*display.Latexer)(nil)).Elem(),
	reflect.TypeOf((*display.JSONer)(nil)).Elem(),
	reflect.TypeOf((*display.JavaScripter)(nil)).Elem(),
	reflect.TypeOf((*image.Image)(nil)).Elem(),
	reflect.TypeOf((*fmt.Stringer)(nil)).Elem(),
	reflect.TypeOf((*errorer)(nil)).Elem(),
}

// anyInterfaces are what display.Any and display.Auto look for: the
// rendering interfaces, then content to read.
var anyInterfaces = append(append([]reflect.Type(nil), RenderInterfaces...),
	reflect.TypeOf((*io.Reader)(nil)).Elem(),
	reflect.TypeOf((*io.WriterTo)(nil)).Elem(),
)

// jsonInterfaces are what encoding/json looks for in a value that display
// keeps and serialises later.
var jsonInterfaces = []reflect.Type{
	reflect.TypeOf((*json.Marshaler)(nil)).Elem(),
	reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem(),
}

// modeInterfaces are what nn.Train, nn.Eval and nn.IsTraining look for on
// the model they are given (nn's walk then goes on inside the wrapper).
var modeInterfaces = []reflect.Type{
	reflect.TypeOf((*modeful)(nil)).Elem(),
	reflect.TypeOf((*nn.ModeSetter)(nil)).Elem(),
	reflect.TypeOf((*trainingGetter)(nil)).Elem(),
}

// mimeStringer and htmlStringer let a cell-declared type with both a rich
// method and String() keep both: yaegi wraps a value in one interface only.
// errorer is error under a name yaegi can find a wrapper for (it has none
// for the predeclared error), so that display.Text and Render see Error().
// modeful and trainingGetter are what nn's mode functions call.
type (
	mimeStringer interface {
		MIME() map[string]string
		String() string
	}
	htmlStringer interface {
		HTML() string
		String() string
	}
	errorer interface {
		Error() string
	}
	modeful interface {
		SetTraining(training bool)
		Training() bool
	}
	trainingGetter interface {
		Training() bool
	}
)

type wrapMIMEStringer struct {
	IValue  any
	WMIME   func() map[string]string
	WString func() string
}

func (w wrapMIMEStringer) MIME() map[string]string { return w.WMIME() }
func (w wrapMIMEStringer) String() string          { return w.WString() }

type wrapHTMLStringer struct {
	IValue  any
	WHTML   func() string
	WString func() string
}

func (w wrapHTMLStringer) HTML() string   { return w.WHTML() }
func (w wrapHTMLStringer) String() string { return w.WString() }

type wrapErrorer struct {
	IValue any
	WError func() string
}

func (w wrapErrorer) Error() string { return w.WError() }

type wrapModeful struct {
	IValue       any
	WSetTraining func(training bool)
	WTraining    func() bool
}

func (w wrapModeful) SetTraining(training bool) { w.WSetTraining(training) }
func (w wrapModeful) Training() bool            { return w.WTraining() }

type wrapTrainingGetter struct {
	IValue    any
	WTraining func() bool
}

func (w wrapTrainingGetter) Training() bool { return w.WTraining() }

// Richer nn.Module wrappers: a cell-declared layer with a mode keeps
// SetTraining and Training inside an nn.Sequential, so nn.Train, nn.Eval
// and nn.IsTraining reach it.
type (
	wrapModuleModeful struct {
		IValue       any
		WForward     func(x *tensor.Tensor) *tensor.Tensor
		WSetTraining func(training bool)
		WTraining    func() bool
	}
	wrapModuleSetter struct {
		IValue       any
		WForward     func(x *tensor.Tensor) *tensor.Tensor
		WSetTraining func(training bool)
	}
	wrapModuleTraining struct {
		IValue    any
		WForward  func(x *tensor.Tensor) *tensor.Tensor
		WTraining func() bool
	}
)

func (w wrapModuleModeful) Forward(x *tensor.Tensor) *tensor.Tensor { return w.WForward(x) }
func (w wrapModuleModeful) SetTraining(training bool)               { w.WSetTraining(training) }
func (w wrapModuleModeful) Training() bool                          { return w.WTraining() }

func (w wrapModuleSetter) Forward(x *tensor.Tensor) *tensor.Tensor { return w.WForward(x) }
func (w wrapModuleSetter) SetTraining(training bool)               { w.WSetTraining(training) }

func (w wrapModuleTraining) Forward(x *tensor.Tensor) *tensor.Tensor { return w.WForward(x) }
func (w wrapModuleTraining) Training() bool                          { return w.WTraining() }

// Richer optim.Schedule wrappers: optim asserts a schedule to
// MomentumSchedule (OneCycleLR-style momentum cycling) and to its
// unexported validator (Validate() error), in NewScheduler, Scheduler.Step
// and SequentialLR.
type (
	wrapScheduleMomentumValidate struct {
		IValue    any
		WLR       func(step int) float64
		WMomentum func(step int) (float64, bool)
		WValidate func() error
	}
	wrapScheduleMomentum struct {
		IValue    any
		WLR       func(step int) float64
		WMomentum func(step int) (float64, bool)
	}
	wrapScheduleValidate struct {
		IValue    any
		WLR       func(step int) float64
		WValidate func() error
	}
)

func (w wrapScheduleMomentumValidate) LR(step int) float64 { return w.WLR(step) }
func (w wrapScheduleMomentumValidate) Momentum(step int) (float64, bool) {
	return w.WMomentum(step)
}
func (w wrapScheduleMomentumValidate) Validate() error { return w.WValidate() }

func (w wrapScheduleMomentum) LR(step int) float64               { return w.WLR(step) }
func (w wrapScheduleMomentum) Momentum(step int) (float64, bool) { return w.WMomentum(step) }

func (w wrapScheduleValidate) LR(step int) float64 { return w.WLR(step) }
func (w wrapScheduleValidate) Validate() error     { return w.WValidate() }

// wrapOptimizerMomentum is a cell-declared optim.Optimizer that also has
// momentum (optim.MomentumSetter), which schedules that cycle momentum set.
type wrapOptimizerMomentum struct {
	IValue       any
	WLR          func() float64
	WLoadState   func(s *optim.State) error
	WMomentum    func() float64
	WSetLR       func(lr float64)
	WSetMomentum func(m float64)
	WState       func() (*optim.State, error)
	WStep        func(model any, grads *tensor.Gradients)
	WStepParams  func(params []nn.NamedParam, grads *tensor.Gradients)
	WZeroState   func()
}

func (w wrapOptimizerMomentum) LR() float64                         { return w.WLR() }
func (w wrapOptimizerMomentum) LoadState(s *optim.State) error      { return w.WLoadState(s) }
func (w wrapOptimizerMomentum) Momentum() float64                   { return w.WMomentum() }
func (w wrapOptimizerMomentum) SetLR(lr float64)                    { w.WSetLR(lr) }
func (w wrapOptimizerMomentum) SetMomentum(m float64)               { w.WSetMomentum(m) }
func (w wrapOptimizerMomentum) State() (*optim.State, error)        { return w.WState() }
func (w wrapOptimizerMomentum) Step(model any, g *tensor.Gradients) { w.WStep(model, g) }
func (w wrapOptimizerMomentum) StepParams(ps []nn.NamedParam, g *tensor.Gradients) {
	w.WStepParams(ps, g)
}
func (w wrapOptimizerMomentum) ZeroState() { w.WZeroState() }

// wrapperKey returns the MapTypes key of an interface's generated wrapper:
// the value yaegi extract registers as "_Name" (a nil pointer to it), made
// here so that it does not depend on the order of the files' init.
func wrapperKey(nilPtr any) reflect.Value { return reflect.ValueOf(nilPtr) }

func init() {
	Symbols["github.com/kiln-ml/kiln/kernel/symbols/symbols"] = map[string]reflect.Value{
		"_mimeStringer":   reflect.ValueOf((*wrapMIMEStringer)(nil)),
		"_htmlStringer":   reflect.ValueOf((*wrapHTMLStringer)(nil)),
		"_errorer":        reflect.ValueOf((*wrapErrorer)(nil)),
		"_modeful":        reflect.ValueOf((*wrapModeful)(nil)),
		"_trainingGetter": reflect.ValueOf((*wrapTrainingGetter)(nil)),
	}

	// display: rendering hooks, readers, JSON marshalers.
	for _, fn := range []any{display.Render, display.Text, display.IsRich} {
		MapTypes[reflect.ValueOf(fn)] = RenderInterfaces
	}
	for _, fn := range []any{display.Any, display.Auto} {
		MapTypes[reflect.ValueOf(fn)] = anyInterfaces
	}
	for _, fn := range []any{display.JSON, display.MakeData, display.MakeData3} {
		MapTypes[reflect.ValueOf(fn)] = jsonInterfaces
	}

	// nn: modes of a cell-declared model, cell-declared layers in a
	// Sequential (a variadic interface parameter: see above).
	for _, fn := range []any{nn.Train, nn.Eval, nn.IsTraining} {
		MapTypes[reflect.ValueOf(fn)] = modeInterfaces
	}
	MapTypes[reflect.ValueOf(nn.NewSequential)] = []reflect.Type{reflect.TypeOf((*nn.Module)(nil)).Elem()}
	MapTypes[reflect.ValueOf(data.Concat)] = []reflect.Type{reflect.TypeOf((*data.Dataset)(nil)).Elem()}
	MapTypes[reflect.ValueOf(metrics.ResetAll)] = []reflect.Type{reflect.TypeOf((*metrics.Metric)(nil)).Elem()}
	MapTypes[reflect.ValueOf(metrics.Snapshot)] = []reflect.Type{reflect.TypeOf((*metrics.Metric)(nil)).Elem()}
	MapTypes[wrapperKey((*_github_com_kiln_ml_kiln_nn_Module)(nil))] = []reflect.Type{
		reflect.TypeOf(wrapModuleModeful{}),
		reflect.TypeOf(wrapModuleSetter{}),
		reflect.TypeOf(wrapModuleTraining{}),
	}
	MapTypes[wrapperKey((*_github_com_kiln_ml_kiln_nn_ModeSetter)(nil))] = []reflect.Type{
		reflect.TypeOf(wrapModeful{}),
	}

	// optim: schedules with momentum or validation, optimizers with
	// momentum.
	MapTypes[wrapperKey((*_github_com_kiln_ml_kiln_optim_Schedule)(nil))] = []reflect.Type{
		reflect.TypeOf(wrapScheduleMomentumValidate{}),
		reflect.TypeOf(wrapScheduleMomentum{}),
		reflect.TypeOf(wrapScheduleValidate{}),
	}
	MapTypes[wrapperKey((*_github_com_kiln_ml_kiln_optim_MomentumSchedule)(nil))] = []reflect.Type{
		reflect.TypeOf(wrapScheduleMomentumValidate{}),
	}
	MapTypes[wrapperKey((*_github_com_kiln_ml_kiln_optim_Optimizer)(nil))] = []reflect.Type{
		reflect.TypeOf(wrapOptimizerMomentum{}),
	}

	// viz: For returns a cell-declared Visual as it is.
	MapTypes[reflect.ValueOf(viz.For)] = []reflect.Type{reflect.TypeOf((*viz.Visual)(nil)).Elem()}

	Symbols["."] = map[string]reflect.Value{"MapTypes": reflect.ValueOf(MapTypes)}
}

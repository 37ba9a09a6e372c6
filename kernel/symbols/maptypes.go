package symbols

import (
	"fmt"
	"image"
	"reflect"

	"github.com/kiln-ml/kiln/kernel/display"
)

// Why MapTypes: when interpreted code passes a value of a type declared in a
// cell to a compiled function, yaegi hands the function either the bare
// value (no methods: reflect cannot build types with methods at run time) or
// a generated wrapper struct implementing the parameter's interface. A
// compiled `v.(display.HTMLer)` on an `any` parameter therefore fails unless
// yaegi was told, for that function, which further interfaces to wrap the
// value in: that is MapTypes, function value → interfaces, tried in order,
// the first one the value implements wins (so put combined interfaces
// first). Each interface also needs its wrapper registered under its own
// package path as "_Name" (yaegi extract generates those for exported
// interfaces; the combined ones below are hand-written).
//
// To add an entry: MapTypes[reflect.ValueOf(pkg.Func)] = []reflect.Type{
// reflect.TypeOf((*pkg.Iface)(nil)).Elem(), …}. Only values whose static
// type at the call is the declared type are wrapped: an interpreted value
// already stored in an `any` variable reaches compiled code bare.

// MapTypes lists, per compiled function, the interfaces that interpreted
// arguments are wrapped in (see above). It is registered under Symbols["."].
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
}

// mimeStringer and htmlStringer let a cell-declared type with both a rich
// method and String() keep both: yaegi wraps a value in one interface only.
type (
	mimeStringer interface {
		MIME() map[string]string
		String() string
	}
	htmlStringer interface {
		HTML() string
		String() string
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

func init() {
	Symbols["github.com/kiln-ml/kiln/kernel/symbols/symbols"] = map[string]reflect.Value{
		"_mimeStringer": reflect.ValueOf((*wrapMIMEStringer)(nil)),
		"_htmlStringer": reflect.ValueOf((*wrapHTMLStringer)(nil)),
	}
	for _, fn := range []any{display.Render, display.Any, display.Auto, display.Text, display.IsRich} {
		MapTypes[reflect.ValueOf(fn)] = RenderInterfaces
	}
	Symbols["."] = map[string]reflect.Value{"MapTypes": reflect.ValueOf(MapTypes)}
}

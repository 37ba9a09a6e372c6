package symbols_test

import (
	"path"
	"reflect"
	"slices"
	"testing"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/kernel/symbols"
)

func TestPackages(t *testing.T) {
	want := []string{
		"github.com/kiln-ml/kiln/autodiff",
		"github.com/kiln-ml/kiln/backends",
		"github.com/kiln-ml/kiln/data",
		"github.com/kiln-ml/kiln/kernel/display",
		"github.com/kiln-ml/kiln/metrics",
		"github.com/kiln-ml/kiln/nn",
		"github.com/kiln-ml/kiln/onnx",
		"github.com/kiln-ml/kiln/optim",
		"github.com/kiln-ml/kiln/store",
		"github.com/kiln-ml/kiln/tensor",
		"github.com/kiln-ml/kiln/train",
		"github.com/kiln-ml/kiln/viz",
	}
	if got := symbols.Packages(); !slices.Equal(got, want) {
		t.Errorf("Packages() = %v, want %v", got, want)
	}
	for key, syms := range symbols.Symbols {
		if key == "." {
			continue
		}
		if path.Dir(key) == "." || len(syms) == 0 {
			t.Errorf("Symbols[%q]: want a non-empty importpath/name entry", key)
		}
	}
	if _, ok := symbols.Symbols["github.com/kiln-ml/kiln/tensor/tensor"]["Zeros"]; !ok {
		t.Error("tensor.Zeros missing from the symbol tables")
	}
}

// Every interface results are wrapped in needs its wrapper registered under
// the interface's own package, or yaegi crashes wrapping a value in it.
func TestRenderInterfacesHaveWrappers(t *testing.T) {
	all := map[string]map[string]reflect.Value{}
	for k, v := range stdlib.Symbols {
		all[path.Dir(k)] = v
	}
	for k, v := range symbols.Symbols {
		all[path.Dir(k)] = v
	}
	for _, it := range symbols.RenderInterfaces {
		if it.Kind() != reflect.Interface {
			t.Errorf("%v is not an interface", it)
			continue
		}
		if _, ok := all[it.PkgPath()]["_"+it.Name()]; !ok {
			t.Errorf("no wrapper _%s registered for %s", it.Name(), it.PkgPath())
		}
	}
	for _, fn := range []any{display.Render, display.Any, display.Auto} {
		if _, ok := symbols.MapTypes[reflect.ValueOf(fn)]; !ok {
			t.Errorf("no MapTypes entry for %T", fn)
		}
	}
}

func TestLoadsIntoTheInterpreter(t *testing.T) {
	i := interp.New(interp.Options{})
	if err := i.Use(stdlib.Symbols); err != nil {
		t.Fatal(err)
	}
	if err := i.Use(symbols.Symbols); err != nil {
		t.Fatal(err)
	}
	v, err := i.Eval(`import "github.com/kiln-ml/kiln/kernel/display"`)
	if err != nil {
		t.Fatal(err, v)
	}
	// A type declared in interpreted code reaches display.Render wrapped
	// in the interface it implements (MapTypes at work).
	for _, src := range []string{
		"type page struct{ t string }",
		`func (p page) HTML() string { return "<h1>" + p.t + "</h1>" }`,
		`func (p page) String() string { return "page " + p.t }`,
	} {
		if _, err := i.Eval(src); err != nil {
			t.Fatal(err)
		}
	}
	v, err = i.Eval(`display.Render(page{"x"})`)
	if err != nil {
		t.Fatal(err)
	}
	d := v.Interface().(display.Data)
	if d.Data["text/html"] != "<h1>x</h1>" || d.Data["text/plain"] != "page x" {
		t.Errorf("Render of an interpreted HTMLer and Stringer = %#v", d.Data)
	}
}

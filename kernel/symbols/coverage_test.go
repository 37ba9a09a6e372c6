package symbols_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/kernel/symbols"
)

const module = "github.com/kiln-ml/kiln/"

// exportedDecls returns the exported top-level names declared in the Go
// files (tests excluded) of the package at importPath, and those that are
// generic (yaegi extract leaves them out silently).
func exportedDecls(t *testing.T, importPath string) (names, generic []string) {
	t.Helper()
	dir := filepath.Join("..", "..", strings.TrimPrefix(importPath, module))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
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
				if d.Recv != nil || !d.Name.IsExported() {
					continue
				}
				names = append(names, d.Name.Name)
				if d.Type.TypeParams != nil {
					generic = append(generic, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
							if s.TypeParams != nil {
								generic = append(generic, s.Name.Name)
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names, generic
}

// Every exported name of every Kiln package in the tables is there: yaegi
// extract drops generic functions and types without a word, and the public
// API must have none.
func TestTablesHoldEveryExport(t *testing.T) {
	for _, p := range symbols.Packages() {
		names, generic := exportedDecls(t, p)
		if len(generic) > 0 {
			t.Errorf("%s exports generic names, which notebook cells cannot use: %v", p, generic)
		}
		table := symbols.Symbols[p+"/"+path.Base(p)]
		var missing []string
		for _, n := range names {
			if _, ok := table[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s: %v missing from the symbol tables (run go generate ./kernel/symbols)", p, missing)
		}
		if len(names) == 0 {
			t.Errorf("%s: no exported names found in its sources", p)
		}
	}
}

// allSymbols merges the standard library's tables and Kiln's by import path.
func allSymbols() map[string]map[string]reflect.Value {
	all := map[string]map[string]reflect.Value{}
	for k, v := range stdlib.Symbols {
		all[path.Dir(k)] = v
	}
	for k, v := range symbols.Symbols {
		all[path.Dir(k)] = v
	}
	return all
}

// The MapTypes entries are well formed: a function's entries are
// interfaces with registered wrappers, an interface wrapper's entries are
// wrapper structs (IValue, then a W field per method) implementing the
// interface with more methods.
func TestMapTypesWellFormed(t *testing.T) {
	all := allSymbols()
	wrappers := map[reflect.Value]reflect.Type{} // "_Name" value → interface
	for pkg, table := range all {
		if !strings.HasPrefix(pkg, module) {
			continue
		}
		for name, v := range table {
			if strings.HasPrefix(name, "_") {
				if it, ok := table[name[1:]]; ok {
					wrappers[v] = it.Type().Elem()
				}
			}
		}
	}
	for key, entries := range symbols.MapTypes {
		if key.Kind() == reflect.Func {
			for _, it := range entries {
				if it.Kind() != reflect.Interface {
					t.Errorf("MapTypes[%s]: %s is not an interface", key.Type(), it)
					continue
				}
				if _, ok := all[it.PkgPath()]["_"+it.Name()]; !ok {
					t.Errorf("MapTypes[%s]: no wrapper _%s registered under %s", key.Type(), it.Name(), it.PkgPath())
				}
			}
			continue
		}
		iface, ok := wrappers[key]
		if !ok {
			t.Errorf("MapTypes key %s is neither a function nor a registered interface wrapper", key.Type())
			continue
		}
		for _, w := range entries {
			if w.Kind() != reflect.Struct || w.NumField() < 2 || w.Field(0).Name != "IValue" {
				t.Errorf("MapTypes[_%s]: %s is not a wrapper struct", iface.Name(), w)
				continue
			}
			if !w.Implements(iface) {
				t.Errorf("MapTypes[_%s]: %s does not implement %s", iface.Name(), w, iface)
			}
			if w.NumField()-1 <= iface.NumMethod() {
				t.Errorf("MapTypes[_%s]: %s adds no method", iface.Name(), w)
			}
			for i := 1; i < w.NumField(); i++ {
				f := w.Field(i)
				m, ok := w.MethodByName(strings.TrimPrefix(f.Name, "W"))
				if !strings.HasPrefix(f.Name, "W") || !ok || !sameSignature(f.Type, m.Type) {
					t.Errorf("MapTypes[_%s]: field %s of %s does not match a method", iface.Name(), f.Name, w)
				}
			}
			if w.NumMethod() != w.NumField()-1 {
				t.Errorf("MapTypes[_%s]: %s has %d methods for %d W fields", iface.Name(), w, w.NumMethod(), w.NumField()-1)
			}
		}
	}
}

// yaegi v0.16.1 leaves interpreted values in a variadic parameter of
// interface type unwrapped unless the function has a MapTypes entry naming
// that interface: every such Kiln function needs one. Methods cannot have
// entries, so no Kiln method may take a variadic interface.
func TestVariadicInterfacesMapped(t *testing.T) {
	variadicIface := func(ft reflect.Type, skip int) reflect.Type {
		if !ft.IsVariadic() || ft.NumIn() <= skip {
			return nil
		}
		if e := ft.In(ft.NumIn() - 1).Elem(); e.Kind() == reflect.Interface && e.NumMethod() > 0 {
			return e
		}
		return nil
	}
	for _, p := range symbols.Packages() {
		for name, v := range symbols.Symbols[p+"/"+path.Base(p)] {
			switch {
			case v.Kind() == reflect.Func && !v.CanAddr():
				it := variadicIface(v.Type(), 0)
				if it == nil {
					continue
				}
				found := false
				for _, e := range symbols.MapTypes[v] {
					found = found || e == it
				}
				if !found {
					t.Errorf("%s.%s takes ...%s: add MapTypes[%s.%s] = [%s]", path.Base(p), name, it, path.Base(p), name, it)
				}
			case v.Kind() == reflect.Pointer && v.IsNil() && !strings.HasPrefix(name, "_"):
				pt := v.Type()
				if pt.Elem().Kind() == reflect.Interface {
					continue
				}
				for i := range pt.NumMethod() {
					if it := variadicIface(pt.Method(i).Type, 1); it != nil {
						t.Errorf("method %s.%s.%s takes ...%s, which interpreted values cannot be passed in", path.Base(p), name, pt.Method(i).Name, it)
					}
				}
			}
		}
	}
}

// sameSignature reports whether func type f is method type m (whose first
// parameter is the receiver) without its receiver.
func sameSignature(f, m reflect.Type) bool {
	if f.Kind() != reflect.Func || f.NumIn() != m.NumIn()-1 || f.NumOut() != m.NumOut() || f.IsVariadic() != m.IsVariadic() {
		return false
	}
	for i := range f.NumIn() {
		if f.In(i) != m.In(i+1) {
			return false
		}
	}
	for i := range f.NumOut() {
		if f.Out(i) != m.Out(i) {
			return false
		}
	}
	return true
}

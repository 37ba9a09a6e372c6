package kernel

import (
	"go/ast"
	"go/constant"
	"go/token"
	"reflect"
)

// A small, best-effort static typing of expressions, from the parser's
// resolution of local names, the interpreter's global variables and the
// reflect types of the symbol tables. It answers "is this an integer?" for
// the range-over-int rewrite, "does this call return anything?" for the
// cell's result, and "what is x?" for completion and inspection. Unknown is
// always an acceptable answer.

type typer struct {
	k       *knowledge
	globals map[string]reflect.Value
}

var basicTypes = map[string]reflect.Type{
	"bool": reflect.TypeOf(false), "string": reflect.TypeOf(""),
	"int": reflect.TypeOf(0), "int8": reflect.TypeOf(int8(0)), "int16": reflect.TypeOf(int16(0)),
	"int32": reflect.TypeOf(int32(0)), "rune": reflect.TypeOf(int32(0)), "int64": reflect.TypeOf(int64(0)),
	"uint": reflect.TypeOf(uint(0)), "uint8": reflect.TypeOf(uint8(0)), "byte": reflect.TypeOf(uint8(0)),
	"uint16": reflect.TypeOf(uint16(0)), "uint32": reflect.TypeOf(uint32(0)), "uint64": reflect.TypeOf(uint64(0)),
	"uintptr": reflect.TypeOf(uintptr(0)), "float32": reflect.TypeOf(float32(0)), "float64": reflect.TypeOf(0.0),
	"complex64": reflect.TypeOf(complex64(0)), "complex128": reflect.TypeOf(complex128(0)),
	"error": reflect.TypeOf((*error)(nil)).Elem(), "any": reflect.TypeOf((*any)(nil)).Elem(),
}

var intType = reflect.TypeOf(0)

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// intness says whether x is an integer.
func (t *typer) intness(x ast.Expr) tri {
	typ := t.typeOf(x, 0)
	if typ == nil {
		return unknown
	}
	if isInteger(typ) {
		return yes
	}
	return no
}

// global returns the interpreter's global variable or constant name, if the
// cell does not declare it itself.
func (t *typer) global(id *ast.Ident) (reflect.Value, bool) {
	if id.Obj != nil {
		return reflect.Value{}, false
	}
	v, ok := t.globals[id.Name]
	return v, ok && v.IsValid()
}

// pkg returns the package an identifier denotes, if any.
func (t *typer) pkg(id *ast.Ident) *pkgInfo {
	if id.Obj != nil {
		return nil
	}
	return t.k.pkgOf(id.Name, t.globals)
}

// typeOf returns the type of x, or nil when it cannot tell.
func (t *typer) typeOf(x ast.Expr, depth int) reflect.Type {
	if depth > 20 {
		return nil
	}
	depth++
	switch x := x.(type) {
	case *ast.BasicLit:
		switch x.Kind {
		case token.INT:
			return intType
		case token.CHAR:
			return basicTypes["rune"]
		case token.FLOAT:
			return basicTypes["float64"]
		case token.STRING:
			return basicTypes["string"]
		}
	case *ast.ParenExpr:
		return t.typeOf(x.X, depth)
	case *ast.UnaryExpr:
		switch x.Op {
		case token.ADD, token.SUB, token.XOR:
			return t.typeOf(x.X, depth)
		case token.NOT:
			return basicTypes["bool"]
		case token.AND:
			if e := t.typeOf(x.X, depth); e != nil {
				return reflect.PointerTo(e)
			}
		case token.ARROW:
			if e := t.typeOf(x.X, depth); e != nil && e.Kind() == reflect.Chan {
				return e.Elem()
			}
		}
	case *ast.BinaryExpr:
		switch x.Op {
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ, token.LAND, token.LOR:
			return basicTypes["bool"]
		case token.SHL, token.SHR:
			return t.typeOf(x.X, depth)
		}
		// An untyped constant operand takes the other operand's type.
		_, litX := x.X.(*ast.BasicLit)
		if litX {
			if y := t.typeOf(x.Y, depth); y != nil {
				return y
			}
		}
		if tx := t.typeOf(x.X, depth); tx != nil {
			return tx
		}
		return t.typeOf(x.Y, depth)
	case *ast.StarExpr:
		if e := t.typeOf(x.X, depth); e != nil && e.Kind() == reflect.Pointer {
			return e.Elem()
		}
	case *ast.IndexExpr:
		if e := t.typeOf(x.X, depth); e != nil {
			switch e.Kind() {
			case reflect.Slice, reflect.Array, reflect.Map:
				return e.Elem()
			case reflect.String:
				return basicTypes["byte"]
			case reflect.Pointer:
				if e.Elem().Kind() == reflect.Array {
					return e.Elem().Elem()
				}
			}
		}
	case *ast.SliceExpr:
		return t.typeOf(x.X, depth)
	case *ast.TypeAssertExpr:
		return t.typeExpr(x.Type)
	case *ast.CompositeLit:
		return t.typeExpr(x.Type)
	case *ast.CallExpr:
		if res := t.results(x, depth); len(res) > 0 {
			return res[0]
		}
	case *ast.Ident:
		return t.identType(x, depth)
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if p := t.pkg(id); p != nil {
				v, ok := t.k.symbol(p, x.Sel.Name)
				if !ok {
					return nil
				}
				return valueType(v)
			}
		}
		if e := t.typeOf(x.X, depth); e != nil {
			return memberType(e, x.Sel.Name)
		}
	}
	return nil
}

// valueType returns the type of a symbol-table value (nil for types and
// functions' own types are returned as func types).
func valueType(v reflect.Value) reflect.Type {
	if !v.IsValid() {
		return nil
	}
	if c, ok := v.Interface().(constant.Value); ok {
		switch c.Kind() {
		case constant.Int:
			return intType
		case constant.Float:
			return basicTypes["float64"]
		case constant.String:
			return basicTypes["string"]
		case constant.Bool:
			return basicTypes["bool"]
		}
		return nil
	}
	if isTypeSymbol(v) {
		return nil
	}
	return v.Type()
}

// isTypeSymbol reports whether a symbol-table value stands for a type (it
// is then a nil pointer to the type).
func isTypeSymbol(v reflect.Value) bool {
	return v.Kind() == reflect.Pointer && v.IsNil() && !v.CanSet()
}

// memberType returns the type of field or method name of a value of type t.
func memberType(t reflect.Type, name string) reflect.Type {
	if m, ok := t.MethodByName(name); ok {
		return methodValueType(m.Type, t.Kind() != reflect.Interface)
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		if m, ok := reflect.PointerTo(t).MethodByName(name); ok {
			return methodValueType(m.Type, true)
		}
	}
	s := t
	if s.Kind() == reflect.Pointer {
		s = s.Elem()
	}
	if s.Kind() == reflect.Struct {
		if f, ok := s.FieldByName(name); ok {
			return f.Type
		}
		// yaegi prefixes unexported fields of interpreted structs with X.
		if f, ok := s.FieldByName("X" + name); ok {
			return f.Type
		}
	}
	return nil
}

// methodValueType drops the receiver from a method's func type.
func methodValueType(ft reflect.Type, hasRecv bool) reflect.Type {
	if !hasRecv {
		return ft
	}
	in := make([]reflect.Type, 0, ft.NumIn())
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	out := make([]reflect.Type, ft.NumOut())
	for i := range out {
		out[i] = ft.Out(i)
	}
	return reflect.FuncOf(in, out, ft.IsVariadic())
}

// results returns the result types of a call, or nil when unknown. A
// conversion counts as a call returning the type.
func (t *typer) results(call *ast.CallExpr, depth int) []reflect.Type {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		if fn.Obj == nil {
			if _, isGlobal := t.globals[fn.Name]; !isGlobal && t.k.funcInfo(fn.Name) == nil {
				switch fn.Name {
				case "len", "cap", "copy":
					return []reflect.Type{intType}
				case "real", "imag":
					return []reflect.Type{basicTypes["float64"]}
				case "append", "min", "max":
					if len(call.Args) > 0 {
						if a := t.typeOf(call.Args[0], depth); a != nil {
							return []reflect.Type{a}
						}
					}
					return nil
				}
				if bt, ok := basicTypes[fn.Name]; ok {
					return []reflect.Type{bt}
				}
			}
			if f := t.k.funcInfo(fn.Name); f != nil {
				return t.fieldTypes(f.results)
			}
		} else if d, ok := fn.Obj.Decl.(*ast.FuncDecl); ok {
			return t.fieldTypes(d.Type.Results)
		}
	case *ast.ParenExpr:
		if te := t.typeExpr(fn.X); te != nil {
			return []reflect.Type{te}
		}
	case *ast.ArrayType, *ast.MapType, *ast.ChanType, *ast.FuncType, *ast.InterfaceType, *ast.StarExpr:
		if te := t.typeExpr(fn); te != nil {
			return []reflect.Type{te}
		}
	case *ast.FuncLit:
		return t.fieldTypes(fn.Type.Results)
	}
	ft := t.typeOf(call.Fun, depth)
	if ft == nil {
		// pkg.T(x) is a conversion.
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if te := t.typeExpr(sel); te != nil {
				return []reflect.Type{te}
			}
		}
		return nil
	}
	if ft.Kind() != reflect.Func {
		return nil
	}
	out := make([]reflect.Type, ft.NumOut())
	for i := range out {
		out[i] = ft.Out(i)
	}
	return out
}

// knownVoid reports whether call certainly returns nothing.
func (t *typer) knownVoid(call *ast.CallExpr) bool {
	if id, ok := call.Fun.(*ast.Ident); ok && id.Obj == nil && t.k.funcInfo(id.Name) == nil {
		if _, isGlobal := t.globals[id.Name]; !isGlobal {
			switch id.Name {
			case "print", "println", "panic", "close", "delete", "clear":
				return true
			}
		}
	}
	if f := t.funcResults(call); f != nil {
		return f.NumFields() == 0
	}
	res := t.results(call, 0)
	if res != nil {
		return len(res) == 0
	}
	// results is nil both for "unknown" and "none": ask the func type.
	if ft := t.typeOf(call.Fun, 0); ft != nil && ft.Kind() == reflect.Func {
		return ft.NumOut() == 0
	}
	return false
}

// funcResults returns the declared results of a call to a function the
// cells declared (nil if it is not one).
func (t *typer) funcResults(call *ast.CallExpr) *ast.FieldList {
	id, ok := call.Fun.(*ast.Ident)
	if !ok {
		return nil
	}
	if id.Obj != nil {
		if d, ok := id.Obj.Decl.(*ast.FuncDecl); ok {
			if d.Type.Results == nil {
				return &ast.FieldList{}
			}
			return d.Type.Results
		}
		return nil
	}
	if f := t.k.funcInfo(id.Name); f != nil {
		if f.results == nil {
			return &ast.FieldList{}
		}
		return f.results
	}
	return nil
}

// quietCall reports whether the result of call is not worth showing:
// fmt.Print* return byte counts nobody wants to see after every print.
func (t *typer) quietCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	p := t.pkg(id)
	if p == nil || p.path != "fmt" {
		return false
	}
	switch sel.Sel.Name {
	case "Print", "Printf", "Println", "Fprint", "Fprintf", "Fprintln":
		return true
	}
	return false
}

func (t *typer) fieldTypes(fl *ast.FieldList) []reflect.Type {
	if fl == nil {
		return []reflect.Type{}
	}
	var out []reflect.Type
	for _, f := range fl.List {
		ft := t.typeExpr(f.Type)
		if ft == nil {
			return nil
		}
		n := max(len(f.Names), 1)
		for range n {
			out = append(out, ft)
		}
	}
	if out == nil {
		return []reflect.Type{}
	}
	return out
}

// identType returns the type of a variable or constant named by id.
func (t *typer) identType(id *ast.Ident, depth int) reflect.Type {
	if id.Obj == nil {
		if v, ok := t.global(id); ok {
			return v.Type()
		}
		switch id.Name {
		case "true", "false":
			return basicTypes["bool"]
		case "iota":
			return intType
		}
		return nil
	}
	switch d := id.Obj.Decl.(type) {
	case *ast.AssignStmt:
		for i, l := range d.Lhs {
			if l, ok := l.(*ast.Ident); ok && l.Name == id.Name {
				if len(d.Rhs) == len(d.Lhs) {
					return t.typeOf(d.Rhs[i], depth)
				}
				if call, ok := d.Rhs[0].(*ast.CallExpr); ok && len(d.Rhs) == 1 {
					if res := t.results(call, depth); i < len(res) {
						return res[i]
					}
				}
			}
		}
	case *ast.ValueSpec:
		if d.Type != nil {
			return t.typeExpr(d.Type)
		}
		for i, n := range d.Names {
			if n.Name == id.Name && i < len(d.Values) {
				return t.typeOf(d.Values[i], depth)
			}
		}
	case *ast.Field:
		return t.typeExpr(d.Type)
	case *ast.RangeStmt:
		if key, ok := d.Key.(*ast.Ident); ok && key.Name == id.Name {
			if x := t.typeOf(d.X, depth); x != nil {
				switch x.Kind() {
				case reflect.Slice, reflect.Array, reflect.String:
					return intType
				case reflect.Map:
					return x.Key()
				}
				if isInteger(x) {
					return x
				}
			}
		}
	}
	return nil
}

// typeExpr returns the type a type expression denotes, for the types the
// symbol tables and Go's basic types can build.
func (t *typer) typeExpr(x ast.Expr) reflect.Type {
	switch x := x.(type) {
	case *ast.Ident:
		if x.Obj == nil {
			return basicTypes[x.Name]
		}
	case *ast.ParenExpr:
		return t.typeExpr(x.X)
	case *ast.StarExpr:
		if e := t.typeExpr(x.X); e != nil {
			return reflect.PointerTo(e)
		}
	case *ast.ArrayType:
		e := t.typeExpr(x.Elt)
		if e == nil {
			return nil
		}
		if x.Len == nil {
			return reflect.SliceOf(e)
		}
		if lit, ok := x.Len.(*ast.BasicLit); ok && lit.Kind == token.INT {
			if n, ok := constant.Int64Val(constant.MakeFromLiteral(lit.Value, token.INT, 0)); ok {
				return reflect.ArrayOf(int(n), e)
			}
		}
	case *ast.MapType:
		k, v := t.typeExpr(x.Key), t.typeExpr(x.Value)
		if k != nil && v != nil {
			return reflect.MapOf(k, v)
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if p := t.pkg(id); p != nil {
				if v, ok := t.k.symbol(p, x.Sel.Name); ok && isTypeSymbol(v) {
					return v.Type().Elem()
				}
			}
		}
	case *ast.InterfaceType:
		if x.Methods == nil || len(x.Methods.List) == 0 {
			return basicTypes["any"]
		}
	}
	return nil
}

func (k *knowledge) funcInfo(name string) *funcInfo {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.funcs[name]
}

package cpu

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/printer"
	"go/token"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// TestKernelConstantsMatchGenerator checks that the constants the scalar
// models of the tests share with the kernel generator, asm/gen (its own
// module, so the two cannot share a declaration), have the same values:
// every package-level const or var that both declare is evaluated on each
// side (literals, arithmetic, conversions to float32 and float64, math's
// constants and a few of its functions, composite literals element by
// element) and the two compared. Declarations it cannot evaluate must be
// written alike (spaces aside). So the models the tests hold to their
// error bounds compute with the kernels' constants.
func TestKernelConstantsMatchGenerator(t *testing.T) {
	gen := parseDecls(t, "asm/gen/*.go")
	here := parseDecls(t, "*.go")
	var shared []string
	for name := range gen.exprs {
		if _, ok := here.exprs[name]; ok {
			shared = append(shared, name)
		}
	}
	sort.Strings(shared)
	evaluated := 0
	for _, name := range shared {
		g, gerr := gen.eval(name, 0)
		h, herr := here.eval(name, 0)
		if gerr != nil || herr != nil {
			if gt, ht := gen.text(name), here.text(name); gt != ht {
				t.Errorf("%s: cannot compare (%v; %v), and declared differently: asm/gen %s, this package %s", name, gerr, herr, gt, ht)
			}
			continue
		}
		evaluated++
		if !g.equal(h) {
			t.Errorf("%s: asm/gen's is %s, this package's %s", name, g, h)
		}
	}
	// the declarations the float32 models depend on, so that a parse that
	// finds nothing cannot pass
	for _, name := range []string{"exp32P", "gelu32HP", "gelu32FQ", "silu32THi", "silu32TLo", "silu32X0", "log32P",
		"geluTanh32K1l", "act32FwdHi", "erfcP5", "ln2Lo32"} {
		if _, err := gen.eval(name, 0); err != nil {
			t.Errorf("%s in asm/gen: %v", name, err)
		}
	}
	t.Logf("%d declarations shared with asm/gen, %d compared by value", len(shared), evaluated)
	if evaluated < 60 {
		t.Errorf("only %d declarations compared by value", evaluated)
	}
}

// decls is a package's package-level const and var declarations with
// one value each.
type decls struct {
	fset   *token.FileSet
	exprs  map[string]ast.Expr
	consts map[string]bool
	types  map[string]ast.Expr // the declared type, nil where none
}

// parseDecls parses the Go files that pattern matches.
func parseDecls(t *testing.T, pattern string) *decls {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no files (%v)", pattern, err)
	}
	d := &decls{fset: token.NewFileSet(), exprs: map[string]ast.Expr{}, consts: map[string]bool{}, types: map[string]ast.Expr{}}
	for _, f := range files {
		file, err := parser.ParseFile(d.fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if len(vs.Values) != len(vs.Names) {
					continue // iota repetition or a multi-value call
				}
				for i, n := range vs.Names {
					d.exprs[n.Name], d.consts[n.Name], d.types[n.Name] = vs.Values[i], gd.Tok == token.CONST, vs.Type
				}
			}
		}
	}
	return d
}

// text returns name's declaration with the spaces taken out.
func (d *decls) text(name string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%v ", d.consts[name])
	for _, n := range []ast.Node{d.types[name], d.exprs[name]} {
		if n != nil {
			printer.Fprint(&b, d.fset, n)
		}
		b.WriteString(" = ")
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, b.String())
}

// cval is an evaluated constant: an exact value, with its type ("" while
// untyped, "float32", "float64", "int", …), or a list of them.
type cval struct {
	typ    string
	v      constant.Value
	list   []cval
	isList bool
}

func (c cval) String() string {
	if c.isList {
		s := make([]string, len(c.list))
		for i, e := range c.list {
			s[i] = e.String()
		}
		return "{" + strings.Join(s, ", ") + "}"
	}
	return c.typ + "(" + c.v.ExactString() + ")"
}

// to converts c to typ: float32 and float64 round to nearest, as Go's
// conversions of constants do.
func (c cval) to(typ string) (cval, error) {
	if c.isList {
		return c, fmt.Errorf("cannot convert a list to %s", typ)
	}
	switch typ {
	case "float32":
		f, _ := constant.Float32Val(constant.ToFloat(c.v))
		return cval{typ: typ, v: constant.MakeFloat64(float64(f))}, nil
	case "float64":
		f, _ := constant.Float64Val(constant.ToFloat(c.v))
		return cval{typ: typ, v: constant.MakeFloat64(f)}, nil
	case "int", "int64", "uint32", "uint64":
		v := constant.ToInt(c.v)
		if v.Kind() != constant.Int {
			return c, fmt.Errorf("%s is not an integer", c.v)
		}
		return cval{typ: typ, v: v}, nil
	}
	return c, fmt.Errorf("conversion to %s", typ)
}

// equal compares values, an untyped one converted to the other's type.
func (c cval) equal(o cval) bool {
	if c.isList || o.isList {
		if !c.isList || !o.isList || len(c.list) != len(o.list) {
			return false
		}
		for i := range c.list {
			if !c.list[i].equal(o.list[i]) {
				return false
			}
		}
		return true
	}
	a, b := c, o
	var err error
	switch {
	case a.typ == "" && b.typ != "":
		a, err = a.to(b.typ)
	case b.typ == "" && a.typ != "":
		b, err = b.to(a.typ)
	case a.typ != b.typ:
		return false
	}
	return err == nil && constant.Compare(a.v, token.EQL, b.v)
}

// mathConsts are the values of math's constants that the declarations use.
var mathConsts = map[string]string{
	"Ln2":    "0.693147180559945309417232121458176568075500134360255254120680009",
	"Log2E":  "1.44269504088896340735992468100189213742664595415298593413544940",
	"Pi":     "3.14159265358979323846264338327950288419716939937510582097494459",
	"Sqrt2":  "1.41421356237309504880168872420969807856967187537694807317667974",
	"SqrtPi": "1.77245385090551602729816748334114518279754945612238712821380779",
}

// eval evaluates name's declaration (depth guards against cycles).
func (d *decls) eval(name string, depth int) (cval, error) {
	e, ok := d.exprs[name]
	if !ok {
		return cval{}, fmt.Errorf("%s: not declared", name)
	}
	if depth > 20 {
		return cval{}, fmt.Errorf("%s: declarations nested too deep", name)
	}
	v, err := d.expr(e, depth+1)
	if err != nil {
		return v, fmt.Errorf("%s: %v", name, err)
	}
	if typ, ok := d.types[name].(*ast.Ident); ok {
		return v.to(typ.Name)
	}
	if !d.consts[name] && !v.isList && v.typ == "" {
		// a var takes its constant's default type
		if v.v.Kind() == constant.Int {
			return v.to("int")
		}
		return v.to("float64")
	}
	return v, nil
}

// expr evaluates e: typed arithmetic is done in its type's precision (as
// the declarations are vars, run-time arithmetic), untyped exactly.
func (d *decls) expr(e ast.Expr, depth int) (cval, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		v := constant.MakeFromLiteral(e.Value, e.Kind, 0)
		if v.Kind() == constant.Unknown {
			return cval{}, fmt.Errorf("literal %s", e.Value)
		}
		return cval{v: v}, nil
	case *ast.ParenExpr:
		return d.expr(e.X, depth)
	case *ast.Ident:
		return d.eval(e.Name, depth)
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "math" {
			if s, ok := mathConsts[e.Sel.Name]; ok {
				return cval{v: constant.MakeFromLiteral(s, token.FLOAT, 0)}, nil
			}
		}
		return cval{}, fmt.Errorf("selector %s", e.Sel.Name)
	case *ast.UnaryExpr:
		x, err := d.expr(e.X, depth)
		if err != nil || x.isList || (e.Op != token.SUB && e.Op != token.ADD) {
			return x, fmt.Errorf("unary %s (%v)", e.Op, err)
		}
		x.v = constant.UnaryOp(e.Op, x.v, 0)
		return x, nil
	case *ast.BinaryExpr:
		return d.binary(e, depth)
	case *ast.CallExpr:
		return d.call(e, depth)
	case *ast.CompositeLit:
		elt := ""
		if at, ok := e.Type.(*ast.ArrayType); ok {
			if id, ok := at.Elt.(*ast.Ident); ok {
				elt = id.Name
			}
		}
		l := cval{isList: true}
		for _, x := range e.Elts {
			if kv, ok := x.(*ast.KeyValueExpr); ok {
				x = kv.Value
			}
			v, err := d.expr(x, depth)
			if err == nil && elt != "" && !v.isList {
				v, err = v.to(elt)
			}
			if err != nil {
				return v, err
			}
			l.list = append(l.list, v)
		}
		return l, nil
	}
	return cval{}, fmt.Errorf("expression %T", e)
}

// binary evaluates + - * / of two values.
func (d *decls) binary(e *ast.BinaryExpr, depth int) (cval, error) {
	x, err := d.expr(e.X, depth)
	if err != nil {
		return x, err
	}
	y, err := d.expr(e.Y, depth)
	if err != nil {
		return y, err
	}
	if x.isList || y.isList {
		return x, fmt.Errorf("arithmetic on a list")
	}
	op := e.Op
	switch op {
	case token.ADD, token.SUB, token.MUL, token.QUO:
	default:
		return x, fmt.Errorf("operator %s", op)
	}
	typ := x.typ
	if typ == "" {
		typ = y.typ
	}
	if x, err = x.toOr(typ); err != nil {
		return x, err
	}
	if y, err = y.toOr(typ); err != nil {
		return y, err
	}
	if op == token.QUO && x.v.Kind() == constant.Int && y.v.Kind() == constant.Int {
		op = token.QUO_ASSIGN // integer division
	}
	r := cval{typ: typ, v: constant.BinaryOp(x.v, op, y.v)}
	if typ == "float32" || typ == "float64" {
		return r.to(typ) // rounded as the run-time operation is
	}
	return r, nil
}

// toOr converts c to typ, or leaves it where typ is "".
func (c cval) toOr(typ string) (cval, error) {
	if typ == "" {
		return c, nil
	}
	return c.to(typ)
}

// call evaluates conversions and a few of math's functions.
func (d *decls) call(e *ast.CallExpr, depth int) (cval, error) {
	var args []cval
	for _, a := range e.Args {
		v, err := d.expr(a, depth)
		if err != nil {
			return v, err
		}
		args = append(args, v)
	}
	if id, ok := e.Fun.(*ast.Ident); ok && len(args) == 1 {
		return args[0].to(id.Name)
	}
	sel, ok := e.Fun.(*ast.SelectorExpr)
	if pkg, isId := func() (*ast.Ident, bool) {
		if !ok {
			return nil, false
		}
		p, q := sel.X.(*ast.Ident)
		return p, q
	}(); !isId || pkg.Name != "math" {
		return cval{}, fmt.Errorf("call %T", e.Fun)
	}
	f := make([]float64, len(args))
	for i, a := range args {
		v, err := a.to("float64")
		if err != nil {
			return v, err
		}
		f[i], _ = constant.Float64Val(v.v)
	}
	var r float64
	switch {
	case sel.Sel.Name == "Sqrt" && len(f) == 1:
		r = math.Sqrt(f[0])
	case sel.Sel.Name == "Exp" && len(f) == 1:
		r = math.Exp(f[0])
	case sel.Sel.Name == "Ldexp" && len(f) == 2:
		r = math.Ldexp(f[0], int(f[1]))
	default:
		return cval{}, fmt.Errorf("math.%s", sel.Sel.Name)
	}
	return cval{typ: "float64", v: constant.MakeFloat64(r)}, nil
}

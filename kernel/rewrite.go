package kernel

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
)

// Rewrites applied to a parsed chunk before yaegi compiles it. They work on
// the go/ast tree; synthesised nodes take the position of the code they
// replace, so errors still point into the cell.

// reserved is the prefix of every name the session adds to a cell.
const reserved = "__kiln"

// rangeRewriter turns `for i := range n` over an integer into a three-clause
// loop (yaegi v0.16.1 panics on range-over-int, issue #1701):
//
//	{ __kiln_n1 := n; for i := __kiln_n1 - __kiln_n1; i < __kiln_n1; i++ { … } }
//
// n is evaluated once, as Go does, and i gets n's type (int for an untyped
// constant). `for range n` gets a fresh index, and `for i = range n` assigns
// i at the top of each iteration. Whether the range expression is an integer
// is decided by intness: loops it is sure about are rewritten; unsure ones
// only when all is set (the retry after a failed compile).
type rangeRewriter struct {
	intness   func(x ast.Expr) tri
	all       bool
	next      *int // counter for fresh names, shared by the session
	uncertain int  // loops left alone because intness was unsure
}

// tri is a three-valued answer.
type tri int

const (
	unknown tri = iota
	no
	yes
)

func (rw *rangeRewriter) rewrite(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BlockStmt:
			rw.list(x.List)
		case *ast.CaseClause:
			rw.list(x.Body)
		case *ast.CommClause:
			rw.list(x.Body)
		}
		return true
	})
}

// list rewrites the range statements of one statement list in place;
// ast.Inspect then walks into the replacements, reaching nested loops.
func (rw *rangeRewriter) list(stmts []ast.Stmt) {
	for i, s := range stmts {
		var label *ast.LabeledStmt
		r, ok := s.(*ast.RangeStmt)
		if l, isLabel := s.(*ast.LabeledStmt); isLabel {
			label = l
			r, ok = l.Stmt.(*ast.RangeStmt)
		}
		if !ok || r.Value != nil {
			continue
		}
		switch rw.intness(r.X) {
		case no:
			continue
		case unknown:
			if !rw.all {
				rw.uncertain++
				continue
			}
		}
		stmts[i] = rw.loop(r, label)
	}
}

func (rw *rangeRewriter) fresh(kind string) string {
	*rw.next++
	return fmt.Sprintf("%s_%s%d", reserved, kind, *rw.next)
}

func (rw *rangeRewriter) loop(r *ast.RangeStmt, label *ast.LabeledStmt) ast.Stmt {
	pos := r.For
	id := func(name string) *ast.Ident { return &ast.Ident{NamePos: pos, Name: name} }
	n := rw.fresh("n")
	body := r.Body
	var index string
	switch key, _ := r.Key.(*ast.Ident); {
	case r.Key == nil || (key != nil && key.Name == "_"):
		index = rw.fresh("i")
	case r.Tok == token.DEFINE && key != nil:
		index = key.Name
	default: // for k = range n: assign k from a fresh index
		index = rw.fresh("i")
		assign := &ast.AssignStmt{Lhs: []ast.Expr{r.Key}, TokPos: pos, Tok: token.ASSIGN, Rhs: []ast.Expr{id(index)}}
		body = &ast.BlockStmt{Lbrace: r.Body.Lbrace, List: append([]ast.Stmt{assign}, r.Body.List...), Rbrace: r.Body.Rbrace}
	}
	loop := &ast.ForStmt{
		For:  pos,
		Init: &ast.AssignStmt{Lhs: []ast.Expr{id(index)}, TokPos: pos, Tok: token.DEFINE, Rhs: []ast.Expr{&ast.BinaryExpr{X: id(n), OpPos: pos, Op: token.SUB, Y: id(n)}}},
		Cond: &ast.BinaryExpr{X: id(index), OpPos: pos, Op: token.LSS, Y: id(n)},
		Post: &ast.IncDecStmt{X: id(index), TokPos: pos, Tok: token.INC},
		Body: body,
	}
	var stmt ast.Stmt = loop
	if label != nil {
		label.Stmt = loop
		stmt = label
	}
	init := &ast.AssignStmt{Lhs: []ast.Expr{id(n)}, TokPos: pos, Tok: token.DEFINE, Rhs: []ast.Expr{r.X}}
	return &ast.BlockStmt{Lbrace: pos, List: []ast.Stmt{init, stmt}, Rbrace: r.Body.Rbrace}
}

// renameType gives the type declared by spec a new name, also in the
// references the type expression makes to itself, so that the new version
// of a recursive type points to itself and not to the old version. Field and
// method names are left alone.
func renameType(spec *ast.TypeSpec, name string) {
	old := spec.Name.Name
	spec.Name = &ast.Ident{NamePos: spec.Name.NamePos, Name: name}
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Ident:
			if x.Name == old {
				x.Name = name
			}
		case *ast.SelectorExpr:
			ast.Inspect(x.X, walk)
			return false
		case *ast.Field:
			ast.Inspect(x.Type, walk)
			return false
		case *ast.FuncLit, *ast.BlockStmt:
			return false
		}
		return true
	}
	ast.Inspect(spec.Type, walk)
}

// aliasSpec returns `type name = target` placed at pos.
func aliasSpec(name, target string, pos token.Pos) *ast.TypeSpec {
	return &ast.TypeSpec{
		Name:   &ast.Ident{NamePos: pos, Name: name},
		Assign: pos,
		Type:   &ast.Ident{NamePos: pos, Name: target},
	}
}

// receiverType returns the name of the type a method is declared on.
func receiverType(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// showLast hands the value of the last statement of list, an expression,
// to the session: __kiln.Show(expr), which renders the values. A
// single-valued expression is evaluated once into a variable and also
// passed to __kiln.Text, which gives its text/plain form:
//
//	{ __kiln_v := expr; __kiln.Show(__kiln_v); __kiln.Text(__kiln_v) }
func showLast(list []ast.Stmt, single bool) {
	stmt := list[len(list)-1].(*ast.ExprStmt)
	pos, end := stmt.X.Pos(), stmt.X.End()
	call := func(fn string, arg ast.Expr) *ast.ExprStmt {
		return &ast.ExprStmt{X: &ast.CallExpr{
			Fun: &ast.SelectorExpr{
				X:   &ast.Ident{NamePos: pos, Name: reserved},
				Sel: &ast.Ident{NamePos: pos, Name: fn},
			},
			Lparen: pos,
			Args:   []ast.Expr{arg},
			Rparen: end,
		}}
	}
	if !single {
		list[len(list)-1] = call("Show", stmt.X)
		return
	}
	v := func() *ast.Ident { return &ast.Ident{NamePos: pos, Name: reserved + "_v"} }
	list[len(list)-1] = &ast.BlockStmt{Lbrace: pos, Rbrace: end, List: []ast.Stmt{
		&ast.AssignStmt{Lhs: []ast.Expr{v()}, TokPos: pos, Tok: token.DEFINE, Rhs: []ast.Expr{stmt.X}},
		call("Show", v()),
		call("Text", v()),
	}}
}

// markLines puts __kiln.Line(N) before each statement of a cell body (not
// inside blocks), N being the statement's line in the cell, so that a
// panic's traceback can say which statement of the body was running: yaegi
// reports no usable position for the body itself. It costs one compiled
// call per top-level statement run.
func markLines(fset *token.FileSet, body *ast.BlockStmt) {
	list := make([]ast.Stmt, 0, 2*len(body.List))
	for _, st := range body.List {
		pos := st.Pos()
		list = append(list, lineCall(fset, pos), st)
	}
	body.List = list
}

// lineCall returns the statement __kiln.Line(N) for the line of pos.
func lineCall(fset *token.FileSet, pos token.Pos) ast.Stmt {
	line := fset.Position(pos).Line
	return &ast.ExprStmt{X: &ast.CallExpr{
		Fun:    &ast.SelectorExpr{X: &ast.Ident{NamePos: pos, Name: reserved}, Sel: &ast.Ident{NamePos: pos, Name: "Line"}},
		Lparen: pos,
		Args:   []ast.Expr{&ast.BasicLit{ValuePos: pos, Kind: token.INT, Value: strconv.Itoa(line)}},
		Rparen: pos,
	}}
}

// goRewriter makes every go statement's goroutine recover a panic and
// report it on the cell that started the goroutine (goroutine.go), where
// compiled Go would end the program, and with it the kernel:
//
//	go f(a, b)  →  go __kilnGo(__kiln.Origin("pos", true), func() func() {
//	                       __kiln_g1 := f; __kiln_g2 := a; __kiln_g3 := b
//	                       return func() { __kiln_g1(__kiln_g2, __kiln_g3) }
//	                   }())
//
//	go func() { … }()  →  go __kilnGo(__kiln.Origin("pos", false), func() func() {
//	                              return func() { … }
//	                          }())
//
// where the prelude declares
//
//	func __kilnGo(o interface{}, f func()) {
//		defer __kilnGoRecover(o)
//		f()
//	}
//	func __kilnGoRecover(o interface{}) {
//		if r := recover(); r != nil {
//			__kiln.Recovered(o, r)
//		}
//	}
//
// The function value and the arguments are evaluated by the go statement
// (the function literal called in place is an argument of __kilnGo), in
// order, as Go does (a single argument that is a call returning several
// values gets as many names, when the session knows how many). What
// evaluating later cannot change is left in place: a function literal, a
// builtin, a function declared in a cell or a package (binding a generic
// one breaks yaegi), constants (binding them would fix their type: f(1)
// may want a float64). A binding that still does not compile (an untyped
// constant yaegi does not know as one) fails the chunk's compile, and the
// chunk is compiled again without this rewrite (attempt.plainGo).
//
// Why this shape. recover only works in an interpreted function that is
// deferred, so the guard is a declared function that defers another. The
// go statement itself calls the guard, with the Origin and a literal
// called in place as its arguments: Go evaluates those at the go
// statement, so the function value and arguments bound inside the literal
// are those of the go statement, each time it runs, in a frame nothing
// else uses. (A function literal still captures a loop's variable itself,
// shared across iterations as before Go 1.22, as in plain yaegi: pass it
// as an argument.) It costs a go statement some tens of µs (yaegi's
// closures copy their frame).
type goRewriter struct {
	fset *token.FileSet
	next *int // counter for fresh names, shared by the session
	// results returns how many values a call returns, 0 if unknown.
	results func(*ast.CallExpr) int
	// fixed reports whether an identifier the chunk does not declare
	// names a function or a constant declared by an earlier cell; isPkg
	// whether it names a package.
	fixed, isPkg func(*ast.Ident) bool
	count        int // go statements rewritten
}

func (rw *goRewriter) rewrite(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BlockStmt:
			rw.list(x.List)
		case *ast.CaseClause:
			rw.list(x.Body)
		case *ast.CommClause:
			rw.list(x.Body)
		case *ast.LabeledStmt:
			if g, ok := x.Stmt.(*ast.GoStmt); ok && !rw.guarded(g) {
				x.Stmt = rw.stmt(g)
			}
		}
		return true
	})
}

func (rw *goRewriter) list(stmts []ast.Stmt) {
	for i, st := range stmts {
		if g, ok := st.(*ast.GoStmt); ok && !rw.guarded(g) {
			stmts[i] = rw.stmt(g)
		}
	}
}

// guarded reports whether g already calls the guard.
func (rw *goRewriter) guarded(g *ast.GoStmt) bool {
	id, ok := g.Call.Fun.(*ast.Ident)
	return ok && id.Name == goGuard
}

// goGuard names the function, declared by the session's prelude, that
// runs a goroutine's body and hands a panic it recovers to
// __kiln.Recovered.
const goGuard = reserved + "Go"

// goBuiltins are the builtins a go statement may call.
var goBuiltins = map[string]bool{"clear": true, "close": true, "copy": true, "delete": true,
	"panic": true, "print": true, "println": true, "recover": true}

// stmt returns the guarded form of g.
func (rw *goRewriter) stmt(g *ast.GoStmt) ast.Stmt {
	rw.count++
	pos := g.Go
	id := func(name string) *ast.Ident { return &ast.Ident{NamePos: pos, Name: name} }
	funcType := func(results ...ast.Expr) *ast.FuncType {
		t := &ast.FuncType{Func: pos, Params: &ast.FieldList{Opening: pos, Closing: pos}}
		if len(results) > 0 {
			t.Results = &ast.FieldList{List: []*ast.Field{{Type: results[0]}}}
		}
		return t
	}
	call := g.Call
	var binds []ast.Stmt // in evaluation order
	bind := func(x ast.Expr, n int) []ast.Expr {
		var ids []ast.Expr
		for range n {
			*rw.next++
			ids = append(ids, id(fmt.Sprintf("%s_g%d", reserved, *rw.next)))
		}
		binds = append(binds, &ast.AssignStmt{Lhs: ids, TokPos: pos, Tok: token.DEFINE, Rhs: []ast.Expr{x}})
		return ids
	}
	inner := &ast.CallExpr{Fun: call.Fun, Lparen: call.Lparen, Ellipsis: call.Ellipsis, Rparen: call.Rparen}
	if !rw.constant(call.Fun, true) {
		inner.Fun = bind(call.Fun, 1)[0]
	}
	for _, a := range call.Args {
		if rw.constant(a, false) {
			inner.Args = append(inner.Args, a)
			continue
		}
		n := 1
		if c, ok := ast.Unparen(a).(*ast.CallExpr); ok && len(call.Args) == 1 && call.Ellipsis == token.NoPos {
			n = max(rw.results(c), 1)
		}
		inner.Args = append(inner.Args, bind(a, n)...)
	}
	// body is what the goroutine runs, a func(): the literal itself when
	// it takes and returns nothing, else a literal calling the call.
	var body ast.Expr
	wrapped := id("true")
	if lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok && len(call.Args) == 0 &&
		lit.Type.Params.NumFields() == 0 && lit.Type.Results.NumFields() == 0 {
		body, wrapped.Name = lit, "false"
	} else {
		body = &ast.FuncLit{Type: funcType(), Body: &ast.BlockStmt{Lbrace: pos, List: []ast.Stmt{&ast.ExprStmt{X: inner}}, Rbrace: call.Rparen}}
	}
	maker := &ast.FuncLit{Type: funcType(funcType()), Body: &ast.BlockStmt{Lbrace: pos,
		List: append(binds, &ast.ReturnStmt{Return: pos, Results: []ast.Expr{body}}), Rbrace: call.Rparen}}
	where := &ast.BasicLit{ValuePos: pos, Kind: token.STRING, Value: strconv.Quote(rw.fset.Position(pos).String())}
	origin := &ast.CallExpr{Fun: &ast.SelectorExpr{X: id(reserved), Sel: id("Origin")}, Lparen: pos, Args: []ast.Expr{where, wrapped}, Rparen: pos}
	return &ast.GoStmt{Go: pos, Call: &ast.CallExpr{Fun: id(goGuard), Lparen: pos,
		Args: []ast.Expr{origin, &ast.CallExpr{Fun: maker, Lparen: pos, Rparen: pos}}, Rparen: call.Rparen}}
}

// constant reports whether evaluating x later gives the same as now:
// literals, nil, true, false, declared functions and constants, a
// package's members, operators on such, and (as the callee) builtins and
// function literals.
func (rw *goRewriter) constant(x ast.Expr, callee bool) bool {
	switch x := x.(type) {
	case *ast.BasicLit, *ast.FuncLit:
		return true
	case *ast.Ident:
		if x.Obj != nil { // declared in the chunk
			return x.Obj.Kind == ast.Fun || x.Obj.Kind == ast.Con
		}
		return (callee && goBuiltins[x.Name]) || x.Name == "nil" || x.Name == "true" || x.Name == "false" || rw.fixed(x)
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		return ok && pkg.Obj == nil && rw.isPkg(pkg)
	case *ast.ParenExpr:
		return rw.constant(x.X, callee)
	case *ast.UnaryExpr:
		return x.Op != token.ARROW && x.Op != token.AND && rw.constant(x.X, false)
	case *ast.BinaryExpr:
		return rw.constant(x.X, false) && rw.constant(x.Y, false)
	}
	return false
}

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

package kernel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/kiln-ml/kiln/kernel/display"
)

// The cell pipeline: split → parse (all chunks, before anything runs) →
// per chunk: automatic imports, declaration bookkeeping, rewrites, compile,
// execute.

// runCell evaluates r.code chunk by chunk.
func (s *Session) runCell(r *run) (*display.Data, error) {
	chunks := splitCell(r.code)
	if len(chunks) == 0 {
		return nil, nil
	}
	fset := s.interp.FileSet()
	for _, c := range chunks {
		if _, err := parseChunk(fset, r.cell, c); err != nil {
			return nil, compileError("SyntaxError", err, r.code, r.cell)
		}
	}
	s.setContext(r.ctx)
	for i, c := range chunks {
		if err := s.evalChunk(r, c, i == len(chunks)-1); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.result, nil
}

// attempt is one way of compiling a chunk: with the last expression handed
// to __kiln.Show or not, and with every key-only range loop rewritten as
// over an integer or only those known to be.
type attempt struct{ show, allRanges bool }

type failure struct {
	err      error
	internal bool // yaegi panicked while compiling
}

// evalChunk compiles and runs one chunk. Compiling may take a few attempts:
// yaegi's compile errors leave nothing running, so the session can try the
// cell's last expression as a shown value first and fall back to a plain
// statement (a call returning nothing), and retry range loops it was unsure
// about as integer loops.
func (s *Session) evalChunk(r *run, c chunk, last bool) error {
	fset := s.interp.FileSet()
	p, err := parseChunk(fset, r.cell, c)
	if err != nil {
		return compileError("SyntaxError", err, r.code, r.cell)
	}
	if err := s.autoImport(p); err != nil {
		return err
	}
	if c.decl {
		if err := s.checkImports(p, r); err != nil {
			return err
		}
	}
	show := !c.decl && last && s.showable(p)

	failures := map[attempt]failure{}
	queue := []attempt{{show: show}}
	var uncertain int
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		if _, done := failures[a]; done {
			continue
		}
		p, extra, versions, unsure, err := s.prepare(r, c, a)
		if err != nil {
			return err
		}
		if a == (attempt{show: show}) {
			uncertain = unsure
			if unsure > 0 {
				queue = append(queue, attempt{show: show, allRanges: true})
			}
			if show {
				queue = append(queue, attempt{})
				if unsure > 0 {
					queue = append(queue, attempt{allRanges: true})
				}
			}
		}
		prog, err, internal := s.compile(p.node())
		if err != nil {
			failures[a] = failure{err, internal}
			s.resync()
			continue
		}
		if err := s.execute(r, prog); err != nil {
			return err
		}
		if c.decl {
			redefined, declared := s.redefinedFuncs(p)
			if extra != nil {
				s.know.record(fset, extra, versions)
			}
			s.know.record(fset, p, versions)
			s.refreshDependents(redefined, declared)
		}
		return nil
	}
	return s.compileFailure(r, p, failures, attempt{show: show}, uncertain)
}

// compileFailure picks the error to report among failed attempts: the one
// closest to what the user wrote, unless yaegi crashed on it and a rewritten
// attempt gave a real compile error.
func (s *Session) compileFailure(r *run, p *parsed, failures map[attempt]failure, first attempt, uncertain int) error {
	f, ok := failures[attempt{}]
	if !ok {
		f = failures[first]
	}
	if f.internal {
		for a, g := range failures {
			if a.allRanges && !g.internal {
				f = g
				break
			}
		}
	}
	if f.internal {
		msg := positions(f.err.Error(), r.cell)
		e := &Error{
			Name:  "InternalError",
			Value: "the interpreter (yaegi) failed on this cell: " + msg,
			err:   f.err,
		}
		e.Traceback = []string{e.Value, "The session is still usable."}
		if uncertain > 0 {
			e.Traceback = append(e.Traceback, "yaegi v0.16.1 cannot range over an integer (for i := range n); "+
				"write for i := 0; i < n; i++ instead.")
		}
		return e
	}
	if strings.Contains(f.err.Error(), "constant definition loop") {
		// yaegi's report for a top-level declaration using an unknown
		// name; say which name.
		if id := s.undefinedName(p); id != nil {
			pos := s.interp.FileSet().Position(id.Pos())
			return compileError("CompileError", fmt.Errorf("%s: undefined: %s", pos, id.Name), r.code, r.cell)
		}
	}
	return compileError("CompileError", f.err, r.code, r.cell)
}

// prepare parses c afresh and applies the rewrites of attempt a. For a
// declaration chunk that redefines methods of an earlier type, extra holds
// the type's new version and its other methods, already merged into p.
func (s *Session) prepare(r *run, c chunk, a attempt) (p, extra *parsed, versions map[string]string, uncertain int, err error) {
	fset := s.interp.FileSet()
	p, err = parseChunk(fset, r.cell, c)
	if err != nil {
		return nil, nil, nil, 0, compileError("SyntaxError", err, r.code, r.cell)
	}
	t := &typer{k: s.know, globals: s.globals()}
	rw := &rangeRewriter{intness: t.intness, all: a.allRanges, next: &s.names}
	versions = map[string]string{}
	if c.decl {
		s.dedupeImports(p)
		extra, err = s.redefine(p, versions)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		if extra != nil {
			rw.rewrite(extra.file)
			// The new versions come first, after the imports.
			at := 0
			for at < len(p.file.Decls) {
				if g, ok := p.file.Decls[at].(*ast.GenDecl); !ok || g.Tok != token.IMPORT {
					break
				}
				at++
			}
			decls := append(append(append([]ast.Decl{}, p.file.Decls[:at]...), extra.file.Decls...), p.file.Decls[at:]...)
			p.file.Decls = decls
		}
	}
	rw.rewrite(p.node())
	if a.show {
		showLast(p.stmts.List, s.singleValued(p))
	}
	return p, extra, versions, rw.uncertain, nil
}

// compile compiles n, turning a panic of yaegi's compiler into an error.
// yaegi also logs such panics (log.Panic) to the standard logger: what is
// logged while compiling is held back and dropped if compiling panicked
// (the error reports it), passed on otherwise.
func (s *Session) compile(n ast.Node) (prog *interp.Program, err error, internal bool) {
	var held bytes.Buffer
	logOut := log.Writer()
	log.SetOutput(&held)
	defer func() {
		log.SetOutput(logOut)
		if rec := recover(); rec != nil {
			prog, err, internal = nil, fmt.Errorf("%v", rec), true
			return
		}
		if held.Len() > 0 {
			_, _ = logOut.Write(held.Bytes())
		}
	}()
	prog, err = s.interp.CompileAST(n)
	return prog, err, false
}

// execute runs a compiled chunk under the cell's context.
func (s *Session) execute(r *run, prog *interp.Program) (err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = &Error{Name: "InternalError", Value: fmt.Sprint("the interpreter (yaegi) failed: ", rec),
				Traceback: []string{fmt.Sprint("the interpreter (yaegi) failed: ", rec), "The session is still usable."}}
		}
	}()
	_, err = s.interp.ExecuteWithContext(r.ctx, prog)
	frames := s.router.takePanicLines()
	if r.ctx.Err() != nil {
		// Give the cell's goroutine a moment to notice (see interrupt.go).
		s.lingering = !awaitExecution(context.Background(), 250*time.Millisecond)
		cause := context.Cause(r.ctx)
		if errors.Is(cause, ErrClosed) {
			return ErrClosed
		}
		return &Error{Name: "Interrupted", Value: "the cell was interrupted", Traceback: []string{"Interrupted"}, err: ErrInterrupted}
	}
	if err == nil {
		return nil
	}
	var p interp.Panic
	if errors.As(err, &p) {
		return panicError(p, frames, r.code, r.cell)
	}
	return compileError("CompileError", err, r.code, r.cell)
}

// showable reports whether the chunk's last statement is an expression
// whose value the cell should show.
func (s *Session) showable(p *parsed) bool {
	list := p.stmts.List
	if len(list) == 0 {
		return false
	}
	stmt, ok := list[len(list)-1].(*ast.ExprStmt)
	if !ok {
		return false
	}
	if call, ok := stmt.X.(*ast.CallExpr); ok {
		t := &typer{k: s.know, globals: s.globals()}
		return !t.quietCall(call) && !t.knownVoid(call)
	}
	return true
}

// singleValued reports whether the last statement of p, an expression, is
// known to have exactly one value.
func (s *Session) singleValued(p *parsed) bool {
	stmt := p.stmts.List[len(p.stmts.List)-1].(*ast.ExprStmt)
	call, ok := ast.Unparen(stmt.X).(*ast.CallExpr)
	if !ok {
		return true
	}
	t := &typer{k: s.know, globals: s.globals()}
	if f := t.funcResults(call); f != nil {
		return f.NumFields() == 1
	}
	res := t.results(call, 0)
	return len(res) == 1
}

// autoImport imports the packages a chunk uses by name without importing
// them, when the name is not bound to anything else: `tensor.Ones(…)` works
// in a cell that never imported tensor.
func (s *Session) autoImport(p *parsed) error {
	own := map[string]bool{} // names the chunk imports itself
	for _, spec := range p.file.Imports {
		name, _ := s.know.importName(spec)
		own[name] = true
	}
	globals := s.globals()
	want := map[string]string{}
	ast.Inspect(p.file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || id.Obj != nil || own[id.Name] || want[id.Name] != "" {
			return true
		}
		s.know.mu.RLock()
		_, imported := s.know.imports[id.Name]
		s.know.mu.RUnlock()
		if imported {
			return true
		}
		if pkg := s.know.pkgOf(id.Name, globals); pkg != nil {
			want[id.Name] = pkg.path
		}
		return true
	})
	if len(want) == 0 {
		return nil
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	var src strings.Builder
	for _, n := range names {
		fmt.Fprintf(&src, "import %s %s\n", n, strconv.Quote(want[n]))
	}
	if err := s.evalInternal(src.String(), true); err != nil {
		return &Error{Name: "ImportError", Value: err.Error(), Traceback: []string{err.Error()}, err: err}
	}
	s.know.mu.Lock()
	for _, n := range names {
		s.know.imports[n] = want[n]
	}
	s.know.mu.Unlock()
	return nil
}

// checkImports rejects imports the interpreter cannot satisfy, with a
// clearer message than yaegi's.
func (s *Session) checkImports(p *parsed, r *run) error {
	fset := s.interp.FileSet()
	for _, spec := range p.file.Imports {
		name, path := s.know.importName(spec)
		s.know.mu.RLock()
		_, known := s.know.pkgs[path]
		bound, isBound := s.know.imports[name]
		s.know.mu.RUnlock()
		pos := fset.Position(spec.Pos()).String()
		switch {
		case !known:
			return compileError("ImportError", fmt.Errorf("%s: cannot import %q: the kernel has the standard library and Kiln's packages only", pos, path), r.code, r.cell)
		case isBound && bound != path && name != "_" && name != ".":
			return compileError("ImportError", fmt.Errorf("%s: %s is already imported as %q; import %q under another name", pos, name, bound, path), r.code, r.cell)
		}
	}
	return nil
}

// dedupeImports turns imports of packages the interpreter already has
// under the same name into blank imports: yaegi rejects a second import.
func (s *Session) dedupeImports(p *parsed) {
	for _, spec := range p.file.Imports {
		name, path := s.know.importName(spec)
		s.know.mu.RLock()
		bound, ok := s.know.imports[name]
		s.know.mu.RUnlock()
		if ok && bound == path {
			spec.Name = &ast.Ident{NamePos: spec.Pos(), Name: "_"}
		}
	}
}

// redefine handles declarations of names earlier cells declared. yaegi
// v0.16.1 keeps the first definition of a type and of a method, so:
//   - a type declared again is compiled as a new type T__vN, and T becomes
//     an alias of it (values made earlier keep the old type);
//   - a method declared again on an earlier type gets the type a new version
//     too, carrying the type's other methods along (returned as extra).
//
// versions receives version name → declared name.
func (s *Session) redefine(p *parsed, versions map[string]string) (*parsed, error) {
	s.know.mu.Lock()
	defer s.know.mu.Unlock()
	redefined := map[string]bool{}
	for _, d := range p.file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for i := 0; i < len(g.Specs); i++ {
			spec := g.Specs[i].(*ast.TypeSpec)
			name := spec.Name.Name
			if spec.Assign.IsValid() || spec.TypeParams != nil {
				continue
			}
			if !s.know.compiled[name] && s.know.types[name] == nil {
				s.know.compiled[name] = true
				continue
			}
			version := s.version(name)
			renameType(spec, version)
			versions[version] = name
			redefined[name] = true
			g.Specs = append(g.Specs[:i+1], append([]ast.Spec{aliasSpec(name, version, spec.Pos())}, g.Specs[i+1:]...)...)
			if !g.Lparen.IsValid() {
				g.Lparen, g.Rparen = spec.Pos(), spec.End()
			}
			i++
		}
	}
	// Methods declared again on types this chunk does not redefine.
	again := map[string]map[string]bool{}
	for _, d := range p.file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		recv := receiverType(fn)
		if recv == "" || redefined[recv] {
			continue
		}
		if t := s.know.types[recv]; t != nil {
			if again[recv] == nil {
				again[recv] = map[string]bool{}
			}
			again[recv][fn.Name.Name] = true
		}
	}
	var src strings.Builder
	for _, recv := range sortedKeys(again) {
		t := s.know.types[recv]
		old := false
		for m := range again[recv] {
			if _, ok := t.methods[m]; ok {
				old = true
			}
		}
		if !old {
			continue // only new methods: adding them to the type works
		}
		version := s.version(recv)
		versions[version] = recv
		head := "type " + version + " "
		src.WriteString(t.expr.directive(len(head)))
		src.WriteString(head + t.expr.src + "\n")
		src.WriteString("type " + recv + " = " + version + "\n")
		for _, m := range sortedKeys(t.methods) {
			if !again[recv][m] {
				src.WriteString(t.methods[m].directive(0) + t.methods[m].src + "\n")
			}
		}
	}
	if src.Len() == 0 {
		return nil, nil
	}
	code := "package main\n" + src.String()
	f, err := parser.ParseFile(s.interp.FileSet(), "_.go", code, parser.DeclarationErrors)
	if err != nil {
		return nil, &Error{Name: "InternalError", Value: "redeclaring methods: " + err.Error(), err: err}
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, spec := range g.Specs {
				spec := spec.(*ast.TypeSpec)
				if orig, ok := versions[spec.Name.Name]; ok && !spec.Assign.IsValid() {
					renameRefs(spec, orig, spec.Name.Name)
				}
			}
		}
	}
	return &parsed{chunk: chunk{decl: true}, src: code, file: f}, nil
}

// version returns a fresh name for a new version of type name.
func (s *Session) version(name string) string {
	s.names++
	return name + "__v" + strconv.Itoa(s.names)
}

// undefinedName returns an identifier of p that names nothing the
// interpreter knows, or nil.
func (s *Session) undefinedName(p *parsed) *ast.Ident {
	globals := s.globals()
	declared := map[string]bool{}
	for _, d := range p.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			declared[d.Name.Name] = true
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					declared[spec.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						declared[n.Name] = true
					}
				}
			}
		}
	}
	for _, id := range p.file.Unresolved {
		name := id.Name
		if declared[name] || universe[name] || strings.HasPrefix(name, reserved) {
			continue
		}
		if _, ok := globals[name]; ok {
			continue
		}
		s.know.mu.RLock()
		_, imported := s.know.imports[name]
		known := s.know.funcs[name] != nil || s.know.types[name] != nil || len(s.know.byName[name]) > 0
		s.know.mu.RUnlock()
		if !imported && !known {
			return id
		}
	}
	return nil
}

// universe holds Go's predeclared identifiers.
var universe = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`any bool byte comparable complex64 complex128 error float32 float64
		int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr
		true false iota nil
		append cap clear close complex copy delete imag len make max min new panic print println real recover`) {
		universe[n] = true
	}
}

// renameRefs renames the references a type expression makes to old.
func renameRefs(spec *ast.TypeSpec, old, name string) {
	keep := spec.Name
	spec.Name = &ast.Ident{Name: old}
	renameType(spec, name)
	spec.Name = keep
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// redefinedFuncs returns the functions p declares that an earlier cell
// declared too, and all the functions p declares.
func (s *Session) redefinedFuncs(p *parsed) (redefined, declared map[string]bool) {
	s.know.mu.RLock()
	defer s.know.mu.RUnlock()
	redefined, declared = map[string]bool{}, map[string]bool{}
	for _, d := range p.file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
			declared[fn.Name.Name] = true
			if s.know.funcs[fn.Name.Name] != nil {
				redefined[fn.Name.Name] = true
			}
		}
	}
	return redefined, declared
}

// refreshDependents compiles again the functions of earlier cells that
// call a redefined function: yaegi binds a call to the function declared
// when the caller was compiled, so they would keep calling the old one.
// Methods are not refreshed. A failed compile leaves a half-declared
// function behind in yaegi, so each caller is first compiled under a
// throwaway name; callers that no longer compile (the function's signature
// changed) are left as they were, with a note on stderr.
func (s *Session) refreshDependents(redefined, declared map[string]bool) {
	if len(redefined) == 0 {
		return
	}
	var ok []string
	var notes []string
	for _, g := range s.know.dependents(redefined, declared) {
		if _, err := s.compileFuncs([]string{g}, true); err != nil {
			notes = append(notes, fmt.Sprintf("%s: %s", g, positions(err.Error(), -1)))
			continue
		}
		ok = append(ok, g)
	}
	if len(ok) > 0 {
		if f, err := s.compileFuncs(ok, false); err != nil {
			notes = append(notes, fmt.Sprintf("%s: %s", strings.Join(ok, ", "), positions(err.Error(), -1)))
		} else {
			s.know.record(s.interp.FileSet(), f, nil)
		}
	}
	if len(notes) > 0 {
		s.router.write(Stderr, []byte(fmt.Sprintf("kernel: still calling the earlier %s: %s\n",
			strings.Join(sortedKeys(redefined), ", "), strings.Join(notes, "; "))))
	}
}

// compileFuncs compiles (and declares) the saved functions names; with
// probe, under throwaway names, only to see whether they compile.
func (s *Session) compileFuncs(names []string, probe bool) (*parsed, error) {
	var src strings.Builder
	src.WriteString("package main\n")
	s.know.mu.RLock()
	for _, g := range names {
		d := s.know.funcs[g].decl
		src.WriteString(d.directive(0) + d.src + "\n")
	}
	s.know.mu.RUnlock()
	fset := s.interp.FileSet()
	var failure error
	for _, all := range []bool{false, true} {
		f, err := parser.ParseFile(fset, "_.go", src.String(), parser.DeclarationErrors)
		if err != nil {
			return nil, err
		}
		if probe {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok {
					s.names++
					fn.Name = &ast.Ident{NamePos: fn.Name.NamePos, Name: fmt.Sprintf("%s_probe%d_%s", reserved, s.names, fn.Name.Name)}
				}
			}
		}
		t := &typer{k: s.know, globals: s.globals()}
		rw := &rangeRewriter{intness: t.intness, all: all, next: &s.names}
		rw.rewrite(f)
		prog, err, _ := s.compile(f)
		if err != nil {
			failure = err
			s.resync()
			if rw.uncertain == 0 {
				break
			}
			continue
		}
		if _, err := s.interp.Execute(prog); err != nil {
			return nil, err
		}
		return &parsed{chunk: chunk{decl: true}, src: src.String(), file: f}, nil
	}
	return nil, failure
}

package kernel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"log"
	"sort"
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
// to __kiln.Show or not, with every key-only range loop rewritten as over
// an integer or only those known to be, and with go statements guarded
// (goRewriter) or, after that failed to compile, as written.
type attempt struct{ show, allRanges, plainGo bool }

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
		p, extra, versions, unsure, guarded, err := s.prepare(r, c, a)
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
			if guarded > 0 && !a.plainGo {
				plain := a
				plain.plainGo = true
				queue = append([]attempt{plain}, queue...)
			}
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
	// The failure of the code as written, with its go statements left
	// alone, when that was tried.
	lookup := func(a attempt) (failure, bool) {
		if f, ok := failures[attempt{show: a.show, allRanges: a.allRanges, plainGo: true}]; ok {
			return f, true
		}
		f, ok := failures[a]
		return f, ok
	}
	f, ok := lookup(attempt{})
	if !ok {
		f, _ = lookup(first)
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
func (s *Session) prepare(r *run, c chunk, a attempt) (p, extra *parsed, versions map[string]string, uncertain, guarded int, err error) {
	fset := s.interp.FileSet()
	p, err = parseChunk(fset, r.cell, c)
	if err != nil {
		return nil, nil, nil, 0, 0, compileError("SyntaxError", err, r.code, r.cell)
	}
	t := &typer{k: s.know, globals: s.globals()}
	rw := &rangeRewriter{intness: t.intness, all: a.allRanges, next: &s.names}
	versions = map[string]string{}
	if c.decl {
		s.dedupeImports(p)
		extra, err = s.redefine(p, versions)
		if err != nil {
			return nil, nil, nil, 0, 0, err
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
	gw := &goRewriter{fset: fset, next: &s.names,
		results: func(call *ast.CallExpr) int { return len(t.results(call, 0)) },
		fixed:   s.know.declaredFuncOrConst,
		isPkg:   func(id *ast.Ident) bool { return t.pkg(id) != nil },
	}
	if !a.plainGo {
		gw.rewrite(p.node()) // extra's declarations are in p by now
	}
	if a.show {
		showLast(p.stmts.List, s.singleValued(p))
	}
	if !c.decl {
		markLines(s.interp.FileSet(), p.stmts)
	}
	return p, extra, versions, rw.uncertain, gw.count, nil
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

// execute runs a compiled chunk in a goroutine of its own, with a stop
// point armed (see interrupt.go), and waits for it to end or for the
// cell's context to be cancelled.
func (s *Session) execute(r *run, prog *interp.Program) error {
	s.bodyLine.Store(0)
	stop := s.armStop()
	finished := make(chan struct{})
	var err error
	var g uint64 // the goroutine, if it printed panic lines
	go func() {
		defer close(finished)
		err = s.executeProgram(prog)
		if s.router.hasPanicLines() {
			g = goroutineID()
		}
	}()
	select {
	case <-finished:
	case <-r.ctx.Done():
	}
	if r.ctx.Err() != nil {
		stop.fire()
		s.noteStop()
		// Give the cell's goroutine a moment to notice (see interrupt.go).
		select {
		case <-finished:
			s.router.takePanicLines(g)
		case <-time.After(250 * time.Millisecond):
			s.lingering = finished
		}
		if errors.Is(context.Cause(r.ctx), ErrClosed) {
			return ErrClosed
		}
		return &Error{Name: "Interrupted", Value: "the cell was interrupted", Traceback: []string{"Interrupted"}, err: ErrInterrupted}
	}
	stop.disarm()
	var frames []string
	if g != 0 {
		frames = s.router.takePanicLines(g)
	}
	if err == nil {
		return nil
	}
	var p interp.Panic
	if errors.As(err, &p) {
		return panicError(p, frames, r.code, r.cell, int(s.bodyLine.Load()))
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return compileError("CompileError", err, r.code, r.cell)
}

// executeProgram executes prog, turning a panic that escapes yaegi into an
// InternalError.
func (s *Session) executeProgram(prog *interp.Program) (err error) {
	defer func() {
		if rec := recover(); rec != nil {
			msg := fmt.Sprint("the interpreter (yaegi) failed: ", rec)
			err = &Error{Name: "InternalError", Value: msg, Traceback: []string{msg, "The session is still usable."}}
		}
	}()
	_, err = s.interp.Execute(prog)
	return err
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

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

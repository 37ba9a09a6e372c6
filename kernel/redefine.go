package kernel

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

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

// renameRefs renames the references a type expression makes to old.
func renameRefs(spec *ast.TypeSpec, old, name string) {
	keep := spec.Name
	spec.Name = &ast.Ident{Name: old}
	renameType(spec, name)
	spec.Name = keep
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

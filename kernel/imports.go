package kernel

import (
	"fmt"
	"go/ast"
	"sort"
	"strconv"
	"strings"
)

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

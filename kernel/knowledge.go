package kernel

import (
	"go/ast"
	"go/printer"
	"go/token"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/traefik/yaegi/interp"
)

// What the session knows about the names a cell can use: the packages in
// the symbol tables, what the interpreter has imported, and the functions,
// types and methods earlier cells declared (yaegi's Globals lists only
// variables and constants). Completion, inspection, the range-over-int
// rewrite and the choice of what to show all draw on it.

// pkgInfo is one package of the symbol tables.
type pkgInfo struct {
	path, name string
	syms       map[string]reflect.Value
}

// savedDecl is the source of a declaration and where it came from, so it
// can be compiled again (a type's new version carries its methods).
type savedDecl struct {
	src       string
	file      string // cellFile of its cell
	line, col int
}

// directive returns the //line directive placing the next line at d.
func (d savedDecl) directive(colShift int) string {
	col := max(d.col-colShift, 1)
	return "//line " + d.file + ":" + strconv.Itoa(d.line) + ":" + strconv.Itoa(col) + "\n"
}

type funcInfo struct {
	sig     string // "func f(n int) int"
	results *ast.FieldList
	decl    savedDecl
	refs    map[string]bool // package-level names the body uses
}

type typeInfo struct {
	current string    // the name of the type's latest version in the interpreter
	expr    savedDecl // the type expression (after "type T ")
	sig     string    // "type T struct{…}"
	methods map[string]savedDecl
	msigs   map[string]string
}

type knowledge struct {
	mu      sync.RWMutex
	pkgs    map[string]*pkgInfo // import path → package
	byName  map[string][]string // package name → import paths, preferred first
	imports map[string]string   // name bound in the interpreter → import path
	funcs   map[string]*funcInfo
	types   map[string]*typeInfo
	consts  map[string]string // name → "const x = …" (Globals has the value)
	// compiled holds every type name handed to yaegi, even by a failed
	// compile (which may have registered it): declaring one again needs
	// a new version.
	compiled map[string]bool
}

// hidden import paths: internal to the session, never offered to cells.
var hiddenPackages = map[string]bool{
	sessionPackage:                           true,
	"github.com/kiln-ml/kiln/kernel/symbols": true,
}

// preferredPackage resolves package names that several import paths share
// (otherwise the shortest path wins, as goimports mostly does).
var preferredPackage = map[string]string{
	"rand":     "math/rand",
	"template": "text/template",
	"scanner":  "text/scanner",
}

func newKnowledge(exports ...interp.Exports) *knowledge {
	k := &knowledge{
		pkgs:     map[string]*pkgInfo{},
		byName:   map[string][]string{},
		imports:  map[string]string{},
		funcs:    map[string]*funcInfo{},
		types:    map[string]*typeInfo{},
		consts:   map[string]string{},
		compiled: map[string]bool{},
	}
	for _, ex := range exports {
		for key, syms := range ex {
			if key == "." {
				continue
			}
			p, name := path.Dir(key), path.Base(key)
			if hiddenPackages[p] {
				continue
			}
			info := k.pkgs[p]
			if info == nil {
				info = &pkgInfo{path: p, name: name, syms: map[string]reflect.Value{}}
				k.pkgs[p] = info
				k.byName[name] = append(k.byName[name], p)
			}
			for s, v := range syms {
				info.syms[s] = v
			}
		}
	}
	for name, paths := range k.byName {
		pref := preferredPackage[name]
		sort.Slice(paths, func(i, j int) bool {
			if (paths[i] == pref) != (paths[j] == pref) {
				return paths[i] == pref
			}
			if len(paths[i]) != len(paths[j]) {
				return len(paths[i]) < len(paths[j])
			}
			return paths[i] < paths[j]
		})
	}
	return k
}

// declaredFuncOrConst reports whether id names a function or a constant
// that a cell declared.
func (k *knowledge) declaredFuncOrConst(id *ast.Ident) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.funcs[id.Name] != nil || k.consts[id.Name] != ""
}

// pkgOf returns the package a name denotes in a cell: an imported one, else
// the one an automatic import would bring in. Names bound to variables,
// functions, types or constants are not packages.
func (k *knowledge) pkgOf(name string, globals map[string]reflect.Value) *pkgInfo {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if p, ok := k.imports[name]; ok {
		return k.pkgs[p]
	}
	if _, ok := globals[name]; ok {
		return nil
	}
	if k.funcs[name] != nil || k.types[name] != nil || k.consts[name] != "" {
		return nil
	}
	if paths := k.byName[name]; len(paths) > 0 {
		return k.pkgs[paths[0]]
	}
	return nil
}

// symbol returns the symbol pkg.name of the symbol tables.
func (k *knowledge) symbol(pkg *pkgInfo, name string) (reflect.Value, bool) {
	if pkg == nil {
		return reflect.Value{}, false
	}
	v, ok := pkg.syms[name]
	return v, ok && !strings.HasPrefix(name, "_")
}

// importName returns the name an import spec binds, "" for none.
func (k *knowledge) importName(spec *ast.ImportSpec) (name, importPath string) {
	importPath = strings.Trim(spec.Path.Value, "`\"")
	if spec.Name != nil {
		return spec.Name.Name, importPath
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	if p := k.pkgs[importPath]; p != nil {
		return p.name, importPath
	}
	return path.Base(importPath), importPath
}

// record notes what a successfully evaluated declaration chunk declared.
// versions maps the name a type was compiled under (T__kiln_v2) to the name
// the cell gave it (T).
func (k *knowledge) record(fset *token.FileSet, p *parsed, versions map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	save := func(n ast.Node) savedDecl {
		pos := fset.Position(n.Pos())
		return savedDecl{src: p.textOf(fset, n), file: pos.Filename, line: pos.Line, col: pos.Column}
	}
	own := fset.File(p.file.Pos())
	aliases := map[string]bool{}
	for _, orig := range versions {
		aliases[orig] = true
	}
	for _, d := range p.file.Decls {
		if fset.File(d.Pos()) != own {
			continue // merged in from another parse (recorded with it)
		}
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.ImportSpec:
					if name, ip := k.importNameLocked(spec); name != "_" && name != "." {
						k.imports[name] = ip
					}
				case *ast.TypeSpec:
					name := spec.Name.Name
					if spec.Assign.IsValid() && aliases[name] {
						continue // the alias pointing the name at its new version
					}
					if orig, ok := versions[name]; ok {
						name = orig
					}
					t := &typeInfo{current: spec.Name.Name, expr: save(spec.Type), methods: map[string]savedDecl{}, msigs: map[string]string{}}
					eq := " "
					if spec.Assign.IsValid() {
						eq = " = "
					}
					t.sig = "type " + name + eq + oneLine(t.expr.src)
					k.types[name] = t
				case *ast.ValueSpec:
					if d.Tok == token.CONST {
						for _, id := range spec.Names {
							k.consts[id.Name] = "const " + id.Name
						}
					}
				}
			}
		case *ast.FuncDecl:
			sig := funcSignature(d)
			if recv := receiverType(d); recv != "" {
				if orig, ok := versions[recv]; ok {
					recv = orig
				}
				if t := k.types[recv]; t != nil {
					t.methods[d.Name.Name] = save(d)
					t.msigs[d.Name.Name] = sig
				}
				continue
			}
			k.funcs[d.Name.Name] = &funcInfo{sig: sig, results: d.Type.Results, decl: save(d), refs: freeNames(d)}
		}
	}
}

func (k *knowledge) importNameLocked(spec *ast.ImportSpec) (string, string) {
	importPath := strings.Trim(spec.Path.Value, "`\"")
	if spec.Name != nil {
		return spec.Name.Name, importPath
	}
	if p := k.pkgs[importPath]; p != nil {
		return p.name, importPath
	}
	return path.Base(importPath), importPath
}

// freeNames returns the names a function uses that it does not declare
// itself: names of other cells (unresolved here), and functions, even those
// declared beside it.
func freeNames(fn *ast.FuncDecl) map[string]bool {
	free := map[string]bool{}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(x.X, visit)
			return false
		case *ast.Ident:
			if x.Obj == nil || x.Obj.Kind == ast.Fun {
				free[x.Name] = true
			}
		}
		return true
	}
	ast.Inspect(fn.Type, visit)
	ast.Inspect(fn.Body, visit)
	return free
}

// dependents returns the functions of earlier cells that call, directly or
// through one another, one of the functions named, leaving out skip.
func (k *knowledge) dependents(names, skip map[string]bool) []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	found := map[string]bool{}
	changed := true
	for changed {
		changed = false
		for g, f := range k.funcs {
			if found[g] || skip[g] || f.decl.src == "" {
				continue
			}
			for ref := range f.refs {
				if names[ref] || found[ref] {
					found[g] = true
					changed = true
					break
				}
			}
		}
	}
	return sortedKeys(found)
}

// funcSignature prints a function declaration without its body and doc.
func funcSignature(fn *ast.FuncDecl) string {
	c := *fn
	c.Body, c.Doc = nil, nil
	var b strings.Builder
	if err := printer.Fprint(&b, token.NewFileSet(), &c); err != nil {
		return "func " + fn.Name.Name
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

package extract

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"github.com/kiln-ml/kiln/kernel/docs"
)

// maxDecl bounds a declaration's text (large struct types, long const
// blocks); the doc comment is kept whole.
const maxDecl = 1500

// Packages extracts every exported name of the packages at the import
// paths, found as `go build` finds them (GOROOT, the module).
func Packages(paths []string) (*docs.File, error) {
	f := &docs.File{Packages: map[string]string{}, Entries: map[string]docs.Entry{}}
	for _, p := range paths {
		if err := pkg(f, p); err != nil {
			return nil, fmt.Errorf("docs: %s: %w", p, err)
		}
	}
	return f, nil
}

func pkg(f *docs.File, importPath string) error {
	wd, _ := os.Getwd()
	bp, err := build.Import(importPath, wd, 0)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		af, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files = append(files, af)
	}
	d, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		return err
	}
	f.Packages[importPath] = d.Synopsis(d.Doc)
	add := func(key, decl, comment string) {
		if len(decl) > maxDecl {
			decl = decl[:maxDecl] + "\n\t…"
		}
		f.Entries[importPath+"."+key] = docs.Entry{Decl: decl, Doc: strings.TrimSpace(comment)}
	}
	show := func(node any) string {
		var b bytes.Buffer
		(&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&b, fset, node)
		return b.String()
	}
	funcDecl := func(fn *doc.Func) string {
		decl := *fn.Decl
		decl.Body, decl.Doc = nil, nil
		return show(&decl)
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			decl := *v.Decl
			decl.Doc = nil
			text := show(&decl)
			for _, name := range v.Names {
				if ast.IsExported(name) {
					add(name, text, v.Doc)
				}
			}
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, fn := range d.Funcs {
		add(fn.Name, funcDecl(fn), fn.Doc)
	}
	for _, t := range d.Types {
		decl := *t.Decl
		decl.Doc = nil
		add(t.Name, show(&decl), t.Doc)
		values(t.Consts)
		values(t.Vars)
		for _, fn := range t.Funcs {
			add(fn.Name, funcDecl(fn), fn.Doc)
		}
		for _, m := range t.Methods {
			add(t.Name+"."+m.Name, funcDecl(m), m.Doc)
		}
		// Fields: their comments, for inspecting x.Field.
		for _, spec := range t.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				comment := field.Doc.Text() + field.Comment.Text()
				for _, n := range field.Names {
					if n.IsExported() {
						add(t.Name+"."+n.Name, n.Name+" "+show(field.Type), comment)
					}
				}
			}
		}
	}
	return nil
}

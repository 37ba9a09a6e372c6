package kernelcmd

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// kilnModule is Kiln's module path.
const kilnModule = "github.com/kiln-ml/kiln"

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Build runs `kiln kernel build` with args, reporting progress to out.
func Build(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kernel build", flag.ContinueOnError)
	var with listFlag
	fs.Var(&with, "with", "a package cells may import: MODULE[@VERSION][/PKG] or a package path (repeatable)")
	output := fs.String("o", "kiln-kernel", "the kernel binary to write")
	name := fs.String("name", "kiln-custom", "kernelspec name, for --install")
	install := fs.Bool("install", false, "install the kernelspec (in the user's Jupyter data directory, or under --prefix)")
	prefix := fs.String("prefix", "", "install under PREFIX/share/jupyter/kernels")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(with) == 0 {
		return errors.New("kernel build: name at least one package with --with (e.g. --with gonum.org/v1/gonum/mat)")
	}
	bin, err := filepath.Abs(*output)
	if err != nil {
		return err
	}
	pkgs, err := build(with, bin, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "built %s with %s\n", bin, strings.Join(pkgs, ", "))
	if !*install {
		return nil
	}
	dir, err := SpecDir(*prefix, *name)
	if err != nil {
		return err
	}
	spec := jupyter.KernelSpec{Argv: []string{bin, "kernel", "run", "-f", "{connection_file}"},
		DisplayName: "Go (Kiln, " + strings.Join(pkgs, ", ") + ")", Language: "go", InterruptMode: "message"}
	if err := jupyter.WriteKernelSpec(dir, spec); err != nil {
		return err
	}
	fmt.Fprintln(out, "installed kernelspec", *name, "in", dir)
	return nil
}

// SpecDir is where Jupyter finds the kernelspec called name: under
// PREFIX/share/jupyter with a prefix, else the user's Jupyter data
// directory ($JUPYTER_DATA_DIR, or ~/.local/share/jupyter). It fails for a
// name that is not a single path element, or without a home directory.
func SpecDir(prefix, name string) (string, error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("kernel: bad kernelspec name %q", name)
	}
	if prefix != "" {
		return filepath.Join(prefix, "share", "jupyter", "kernels", name), nil
	}
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return filepath.Join(d, "kernels", name), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kernel: no home directory for a user install (use --prefix): %w", err)
	}
	return filepath.Join(home, ".local", "share", "jupyter", "kernels", name), nil
}

// parseSpec splits MODULE@VERSION/PKG into what to `go get` and the
// package's import path.
func parseSpec(spec string) (get, pkg string, err error) {
	if spec == "" || strings.ContainsAny(spec, " \t\n'\"`$;|&") {
		return "", "", fmt.Errorf("kernel build: bad --with %q", spec)
	}
	mod, rest, versioned := strings.Cut(spec, "@")
	if !versioned {
		return spec, spec, nil
	}
	version, sub, _ := strings.Cut(rest, "/")
	if version == "" {
		return "", "", fmt.Errorf("kernel build: --with %q has an empty version", spec)
	}
	pkg = mod
	if sub != "" {
		pkg = mod + "/" + sub
	}
	return pkg + "@" + version, pkg, nil
}

// kilnSource finds a checkout of Kiln to build against: $KILN_SOURCE, or
// the directory holding Kiln's go.mod above the working directory or the
// running binary.
func kilnSource() string {
	if d := os.Getenv("KILN_SOURCE"); d != "" {
		return d
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, d := range starts {
		for ; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module "+kilnModule+"\n") {
				return d
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return ""
}

// build makes the kernel binary at bin with the packages of with.
func build(with []string, bin string, out io.Writer) ([]string, error) {
	tmp, err := os.MkdirTemp("", "kiln-kernel-build")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	gomod := "module kilnkernel\n\ngo 1.26\n"
	if src := kilnSource(); src != "" {
		gomod += fmt.Sprintf("\nrequire %s v0.0.0\n\nreplace %s => %s\n", kilnModule, kilnModule, src)
	} else if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == kilnModule && bi.Main.Version != "(devel)" && bi.Main.Version != "" {
		gomod += fmt.Sprintf("\nrequire %s %s\n", kilnModule, bi.Main.Version)
	} else {
		return nil, errors.New("kernel build: cannot tell which Kiln to build against: run it inside a Kiln checkout or set KILN_SOURCE to one")
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod), 0o644); err != nil {
		return nil, err
	}
	run := func(dir string, args ...string) error {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("kernel build: go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	var pkgs []string
	for _, spec := range with {
		get, pkg, err := parseSpec(spec)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(out, "go get", get)
		if err := run(tmp, "get", get); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, pkg)
	}
	if err := run(tmp, "get", "github.com/traefik/yaegi/cmd/yaegi"); err != nil {
		return nil, err
	}
	symDir := filepath.Join(tmp, "symbols")
	os.MkdirAll(symDir, 0o755)
	os.WriteFile(filepath.Join(symDir, "symbols.go"), []byte(`// Package symbols holds the yaegi symbol tables of the packages this kernel adds.
package symbols

import "reflect"

// Symbols are the tables, by "import/path/name".
var Symbols = map[string]map[string]reflect.Value{}
`), 0o644)
	fmt.Fprintln(out, "yaegi extract", strings.Join(pkgs, " "))
	if err := run(symDir, append([]string{"run", "github.com/traefik/yaegi/cmd/yaegi", "extract"}, pkgs...)...); err != nil {
		return nil, err
	}
	os.WriteFile(filepath.Join(tmp, "main.go"), []byte(`// Command kilnkernel is a Kiln kernel with extra packages for cells.
package main

import (
	"fmt"
	"os"

	"github.com/kiln-ml/kiln/kernel"
	"kilnkernel/symbols"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "kernel" {
		args = args[1:]
	}
	if err := kernel.Main(args, symbols.Symbols); err != nil {
		fmt.Fprintln(os.Stderr, "kernel:", err)
		os.Exit(1)
	}
}
`), 0o644)
	if err := run(tmp, "mod", "tidy"); err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		if generic := genericAPIs(tmp, p); len(generic) > 0 {
			fmt.Fprintf(out, "note: yaegi cannot call generic APIs; cells cannot use %s.{%s}\n", p, strings.Join(generic, ", "))
		}
	}
	fmt.Fprintln(out, "go build -o", bin)
	if err := run(tmp, "build", "-o", bin, "."); err != nil {
		return nil, err
	}
	return pkgs, nil
}

// genericAPIs lists the exported generic functions and types of pkg, which
// yaegi's extract leaves out of the symbol tables.
func genericAPIs(moduleDir, pkg string) []string {
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}\n{{range .GoFiles}}{{.}}\n{{end}}", pkg)
	cmd.Dir = moduleDir
	b, err := cmd.Output()
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	fset := token.NewFileSet()
	var names []string
	for _, file := range lines[1:] {
		f, err := parser.ParseFile(fset, filepath.Join(lines[0], file), nil, 0)
		if err != nil {
			continue
		}
		{
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.IsExported() && d.Type.TypeParams != nil {
						names = append(names, d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() && ts.TypeParams != nil {
							names = append(names, ts.Name.Name)
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

//go:build !js

package main

import (
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// page holds the files the browser loads besides xor.wasm and wasm_exec.js.
//
//go:embed index.html loader.js
var page embed.FS

// importPath is this command's package, built for the browser by buildSite.
const importPath = "github.com/kiln-ml/kiln/examples/wasm-xor"

// main trains in the terminal, or with -serve builds the page and serves it.
func main() {
	serve := flag.String("serve", "", "build xor.wasm and serve the page at this address (host:port) instead of training here")
	flag.Parse()
	if *serve == "" {
		res := train(steps, func(step int, loss float64) {
			if step%25 == 0 || step == steps-1 {
				fmt.Printf("step %3d: loss %.4f\n", step, loss)
			}
		})
		fmt.Printf("outputs for (0,0) (0,1) (1,0) (1,1): %.3f\n", res.Outputs)
		return
	}
	dir, err := os.MkdirTemp("", "wasm-xor-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := buildSite(dir); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("serving the XOR page at http://%s/\n", *serve)
	log.Fatal(http.ListenAndServe(*serve, siteHandler(dir)))
}

// buildSite compiles this command for GOOS=js GOARCH=wasm into dir/xor.wasm
// and copies Go's wasm_exec.js beside it, from the toolchain that builds it
// (the two must come from the same Go release). It needs the go command on
// PATH and the module's source, so it works from within the module.
func buildSite(dir string) error {
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "xor.wasm"), importPath)
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("wasm-xor: go build for js/wasm: %v\n%s", err, out)
	}
	exec, err := wasmExecJS()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(exec)
	if err != nil {
		return fmt.Errorf("wasm-xor: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "wasm_exec.js"), b, 0o644)
}

// wasmExecJS finds wasm_exec.js in the Go toolchain: lib/wasm since Go
// 1.24, misc/wasm before.
func wasmExecJS() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("wasm-xor: go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	for _, sub := range []string{"lib/wasm", "misc/wasm"} {
		p := filepath.Join(root, sub, "wasm_exec.js")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("wasm-xor: %w", err)
		}
	}
	return "", fmt.Errorf("wasm-xor: no wasm_exec.js under %s/lib/wasm or %s/misc/wasm", root, root)
}

// siteHandler serves the embedded page and loader, and xor.wasm and
// wasm_exec.js from dir (as buildSite left them).
func siteHandler(dir string) http.Handler {
	mux := http.NewServeMux()
	built := http.FileServer(http.Dir(dir))
	mux.Handle("/xor.wasm", built)
	mux.Handle("/wasm_exec.js", built)
	mux.Handle("/", http.FileServerFS(page))
	return mux
}

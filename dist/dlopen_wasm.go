//go:build js || wasip1

package dist

import (
	"errors"
	"runtime"
)

// errNoDlopen says why MPI and NCCL are absent under WebAssembly: a wasm
// module cannot load native shared libraries. OpenMPI and NCCL wrap it in
// ErrNoLibrary and ErrNoNCCL, so callers see the usual "not installed" errors.
var errNoDlopen = errors.New("shared libraries cannot be loaded on GOOS=" + runtime.GOOS + " GOARCH=" + runtime.GOARCH)

// dlopen always fails under WebAssembly.
func dlopen(path string) (uintptr, error) { return 0, errNoDlopen }

// dlsym always fails under WebAssembly.
func dlsym(h uintptr, name string) (uintptr, error) { return 0, errNoDlopen }

// registerFunc is never reached under WebAssembly, since dlsym fails first.
func registerFunc(fn any, addr uintptr) { panic(errNoDlopen) }

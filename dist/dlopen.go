//go:build !js && !wasip1

package dist

import "github.com/ebitengine/purego"

// The shared-library calls MPI and NCCL need, through purego. They live in a
// file of their own so that the package builds for WebAssembly, where
// dlopen_wasm.go stands in for them.

// dlopen opens the shared library at path with its symbols global, as MPI's
// and NCCL's plugins expect.
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// dlsym finds name in the library h.
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// registerFunc binds the function pointer fn to the C function at addr.
func registerFunc(fn any, addr uintptr) { purego.RegisterFunc(fn, addr) }

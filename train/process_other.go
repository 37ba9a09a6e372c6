//go:build !linux && !darwin

package train

// processState reports whether process pid is alive, without its start
// time: where signal 0 tells (other Unix systems), or procUnknown.
func processState(pid int) (procState, string) { return signalState(pid), "" }

// bootID is not read on this platform.
func bootID() string { return "" }

// pidNamespace is not read on this platform.
func pidNamespace() string { return "" }

//go:build !linux

package cpu

// runnableTasks returns -1: the number of runnable threads is read only on
// Linux (sysinfo_linux.go).
func runnableTasks() int { return -1 }

package cpu

import (
	"syscall"
	"unsafe"
)

// loadavgPath is /proc/loadavg as the open system call takes it, made
// once so that runnableTasks allocates nothing.
var loadavgPath, _ = syscall.BytePtrFromString("/proc/loadavg")

// runnableTasks returns the number of threads on the machine that run or
// wait for a processor now, the fourth field of /proc/loadavg
// ("running/total"), or -1 when it cannot be read. It allocates nothing,
// so that the pool can call it on its hot path now and then.
func runnableTasks() int {
	atFDCWD := -100 // paths relative to the working directory; /proc/loadavg is absolute anyway
	fd, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(loadavgPath)),
		syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
	if errno != 0 {
		return -1
	}
	var buf [128]byte
	n, _, errno := syscall.Syscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	syscall.Close(int(fd))
	if errno != 0 || int(n) <= 0 {
		return -1
	}
	return parseRunnable(buf[:n])
}

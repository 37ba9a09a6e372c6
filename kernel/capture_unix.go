//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package kernel

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// redirect points fd at the write end of a new pipe and returns a duplicate
// of the original descriptor and the pipe's read end. Fatal crash reports of
// the Go runtime keep going to the original stderr (debug.SetCrashOutput):
// the pipe dies with the process.
func redirect(fd int) (orig, reader *os.File, err error) {
	saved, err := syscall.Dup(fd)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel: capture fd %d: %w", fd, err)
	}
	syscall.CloseOnExec(saved)
	orig = os.NewFile(uintptr(saved), fmt.Sprintf("/dev/fd/%d (original)", fd))
	pr, pw, err := os.Pipe()
	if err != nil {
		orig.Close()
		return nil, nil, fmt.Errorf("kernel: capture fd %d: %w", fd, err)
	}
	err = dup2(int(pw.Fd()), fd)
	pw.Close()
	if err != nil {
		pr.Close()
		orig.Close()
		return nil, nil, fmt.Errorf("kernel: capture fd %d: %w", fd, err)
	}
	if fd == 2 {
		_ = debug.SetCrashOutput(orig, debug.CrashOptions{})
	}
	return orig, pr, nil
}

// restoreFD points fd back at orig and closes orig.
func restoreFD(fd int, orig *os.File) error {
	err := dup2(int(orig.Fd()), fd)
	if fd == 2 {
		_ = debug.SetCrashOutput(nil, debug.CrashOptions{})
	}
	orig.Close()
	return err
}

func writeFD(fd int, p []byte) error {
	for len(p) > 0 {
		n, err := syscall.Write(fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package kernel

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// While fd 2 is captured, os.Stderr is a pollable file on a duplicate of
// the pipe (see redirect); savedStderr is the os.Stderr it replaced.
// Guarded by captureMu.
var savedStderr, pipeStderr *os.File

// redirect points fd at the write end of a new pipe and returns a duplicate
// of the original descriptor and the pipe's read end. Fatal crash reports of
// the Go runtime keep going to the original stderr (debug.SetCrashOutput;
// or to the crash monitor, see crash.go): the pipe dies with the process.
//
// The runtime writes a fatal error's report to fd 2 too, while every
// goroutine, the pipe's reader included, is frozen. With a blocking pipe a
// report larger than the pipe's buffer (a stack overflow or a concurrent map
// write lists every goroutine) would block the dying process for ever, so
// the captured fd 2 is non-blocking: what does not fit is dropped there,
// and the whole report still reaches the crash output. Go code writing to
// os.Stderr (and the log package) gets a pollable file on the same pipe
// instead, which waits for room rather than failing; writers to fd 2 that
// bypass them (C libraries) may lose output when the pipe is full.
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
		if err := pollableStderr(); err != nil {
			_ = dup2(int(orig.Fd()), fd)
			pr.Close()
			orig.Close()
			return nil, nil, fmt.Errorf("kernel: capture fd %d: %w", fd, err)
		}
		_ = debug.SetCrashOutput(orig, debug.CrashOptions{})
	}
	return orig, pr, nil
}

// pollableStderr makes the captured fd 2 non-blocking and points os.Stderr
// (and the standard logger, if it writes there) at a pollable duplicate.
func pollableStderr() error {
	if err := syscall.SetNonblock(2, true); err != nil {
		return err
	}
	fd, err := syscall.Dup(2)
	if err != nil {
		return err
	}
	syscall.CloseOnExec(fd)
	pipeStderr = os.NewFile(uintptr(fd), "/dev/stderr")
	savedStderr = os.Stderr
	os.Stderr = pipeStderr
	if log.Writer() == savedStderr {
		log.SetOutput(pipeStderr)
	}
	return nil
}

// restoreFD points fd back at orig and closes orig.
func restoreFD(fd int, orig *os.File) error {
	err := dup2(int(orig.Fd()), fd)
	if fd == 2 {
		_ = debug.SetCrashOutput(nil, debug.CrashOptions{})
		if pipeStderr != nil {
			if os.Stderr == pipeStderr {
				os.Stderr = savedStderr
			}
			if log.Writer() == pipeStderr {
				log.SetOutput(savedStderr)
			}
			pipeStderr.Close()
			pipeStderr, savedStderr = nil, nil
		}
	}
	orig.Close()
	return err
}

// dupFile returns a close-on-exec duplicate of fd as a file.
func dupFile(fd uintptr, name string) (*os.File, error) {
	nfd, err := syscall.Dup(int(fd))
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(nfd)
	return os.NewFile(uintptr(nfd), name), nil
}

// settleDelay is how long the reader of fd 2's pipe lets a writer go on
// after data arrived on an idle pipe before it reads, while a crash
// monitor runs (streamPipe.settle). When the runtime is crashing it writes
// its reason ("fatal error: …", and the "runtime: …" lines explaining it)
// to fd 2 only, and then freezes every goroutine, within microseconds; the
// delay keeps those lines in the pipe, where the crash monitor finds them,
// instead of in the reader's buffer, which dies with the process. Output
// arriving back to back is read without delay, and a sync (the end of a
// cell, a write that must come after what is in the pipe) cuts the delay
// short: cells never wait for it. Should the runtime crash exactly while a
// sync waits on fd 2, the reason may reach the cell instead of the monitor.
const settleDelay = 5 * time.Millisecond

// readChunk reads what the pipe holds into buf, waiting for data. The read
// and the count of bytes read change together under p.mu.
func (p *streamPipe) readChunk(buf []byte) (n int, err error) {
	waited := false
	cerr := p.rc.Read(func(fd uintptr) bool {
		if waited && p.settle.Load() {
			p.settleWait()
		}
		p.mu.Lock()
		n, err = readFD(fd, buf)
		if n > 0 {
			p.read += uint64(n)
		}
		p.mu.Unlock()
		if errors.Is(err, syscall.EAGAIN) {
			waited = true
			return false
		}
		return true
	})
	switch {
	case cerr != nil:
		return 0, cerr
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readFD reads once from the non-blocking descriptor fd.
func readFD(fd uintptr, buf []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), buf)
		if err != syscall.EINTR {
			if n < 0 {
				n = 0
			}
			return n, err
		}
	}
}

// unreadBytes returns how many bytes the pipe fd holds.
func unreadBytes(fd uintptr) (int, error) {
	return unix.IoctlGetInt(int(fd), fionread)
}

package kernel

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"
)

// The crash monitor.
//
// Some things a cell can do end a Go process without running any more of
// its code: a stack overflow, a panic in a goroutine the cell started, a
// concurrent map write, running out of memory. The runtime then prints a
// report, its reason first and then the stacks of (often) every goroutine,
// and exits with status 2. Whoever keeps the end of the kernel's stderr
// (jupyter.KernelDiedError keeps 64 KiB, a terminal its last screen) sees
// stacks but not the reason, which scrolled away at the top.
//
// So a kernel started with Options.CrashMonitor hands the runtime's report
// (debug.SetCrashOutput) to a small child process that outlives it. The
// runtime writes the report's first lines, "fatal error: …" and the
// "runtime: …" line explaining it, only to fd 2, which the session
// captures into a pipe whose reader is frozen by then; so the child also
// holds that pipe's read end and, once the kernel died, drains what is
// left in it. The child, RunCrashMonitor, copies the report to the
// kernel's original stderr and ends it with one line naming the reason:
//
//	kiln kernel: the process ended: fatal error: stack overflow (runtime: goroutine stack exceeds 134217728-byte limit); restart the kernel
//
// When the kernel ends without a report and without closing the session
// (SIGKILL from the out-of-memory killer, os.Exit in an unrestricted
// session), the child says that instead. A session that closes normally
// tells the child first, which then exits silently.

// CrashLinePrefix starts the line the crash monitor writes when the kernel
// process ended abnormally.
const CrashLinePrefix = "kiln kernel: the process ended: "

// crashGoodbye is what a closing session writes to the monitor; a Go crash
// report never starts with a NUL byte.
const crashGoodbye = "\x00kiln: session closed\n"

// crashMonitor is the running child.
type crashMonitor struct {
	w    *os.File // the crash output: the write end of the child's stdin
	done chan struct{}
}

// startCrashMonitor starts argv as the crash monitor with its stderr on
// stderr and fd2Pipe (the read end of the pipe fd 2 writes to) as its fd 3,
// and makes the runtime send crash reports to it.
func startCrashMonitor(argv []string, stderr, fd2Pipe *os.File) (*crashMonitor, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("kernel: crash monitor: empty command line")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("kernel: crash monitor: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = r
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{fd2Pipe}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("kernel: crash monitor: %w", err)
	}
	r.Close()
	if err := debug.SetCrashOutput(w, debug.CrashOptions{}); err != nil {
		w.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("kernel: crash monitor: %w", err)
	}
	m := &crashMonitor{w: w, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(m.done)
	}()
	return m, nil
}

// close sends crash reports to fallback (nil: only to fd 2) again, tells
// the monitor that the session closed normally and waits a little for it
// to exit.
func (m *crashMonitor) close(fallback *os.File) {
	_ = debug.SetCrashOutput(fallback, debug.CrashOptions{})
	_, _ = m.w.WriteString(crashGoodbye)
	m.w.Close()
	select {
	case <-m.done:
	case <-time.After(time.Second):
	}
}

// RunCrashMonitor is the crash monitor's body (`kiln kernel crash-monitor`
// runs it on its stdin, fd 3 and stderr): it copies the kernel's crash
// report from report to out as it arrives. When report ends without the
// session's goodbye, it reads what the dead kernel left unread in fd2Pipe
// (which may be nil) and writes a final line starting with CrashLinePrefix
// that names the reason. It returns when report ends.
func RunCrashMonitor(report io.Reader, fd2Pipe *os.File, out io.Writer) error {
	var head []byte // the report's start, where the reason is
	const headMax = 64 << 10
	buf := make([]byte, 32<<10)
	decided, goodbye := false, false
	var pending []byte // bytes held back until the goodbye is ruled out
	for {
		n, err := report.Read(buf)
		chunk := buf[:n]
		if len(head) < headMax {
			head = append(head, chunk[:min(len(chunk), headMax-len(head))]...)
		}
		if !decided {
			pending = append(pending, chunk...)
			k := min(len(pending), len(crashGoodbye))
			switch {
			case string(pending[:k]) != crashGoodbye[:k]:
				decided = true
				if _, werr := out.Write(pending); werr != nil {
					return werr
				}
				pending = nil
			case len(pending) >= len(crashGoodbye):
				decided, goodbye = true, true
			}
		} else if !goodbye && n > 0 {
			if _, werr := out.Write(chunk); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if goodbye {
		return nil
	}
	if len(pending) > 0 { // a report shorter than the goodbye, and like it
		if _, err := out.Write(pending); err != nil {
			return err
		}
	}
	left := drainLeftover(fd2Pipe, headMax)
	var line string
	if len(bytes.TrimSpace(head)) == 0 && !bytes.Contains(left, []byte("fatal error: ")) {
		line = CrashLinePrefix + "without a Go crash report: it was killed by a signal " +
			"(SIGKILL from the out-of-memory killer, for example) or something called os.Exit; restart the kernel\n"
	} else {
		line = "\n" + CrashLinePrefix + crashReason(string(left)+"\n"+string(head)) + "; restart the kernel\n"
	}
	_, err := io.WriteString(out, line)
	return err
}

// drainLeftover reads what is left in the dead kernel's fd 2 pipe, at
// most max bytes: until end of file, or until nothing comes for a moment
// (a child of the kernel may hold the pipe open).
func drainLeftover(f *os.File, max int) []byte {
	if f == nil || f.SetReadDeadline(time.Now().Add(200*time.Millisecond)) != nil {
		return nil // not a pollable pipe: reading might block for ever
	}
	var b []byte
	buf := make([]byte, 16<<10)
	for len(b) < max {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return b
}

// crashReason picks the reason out of a Go crash report: its "fatal error"
// line (with the "runtime:" line that explains it, if any), else its first
// "panic:" line, else its first line.
func crashReason(report string) string {
	lines := strings.Split(report, "\n")
	detail := ""
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "fatal error: "):
			if detail != "" {
				return l + " (" + detail + ")"
			}
			return l
		case strings.HasPrefix(l, "panic: "):
			if i := strings.Index(l, " [recovered"); i > 0 && strings.HasSuffix(l, "]") {
				l = l[:i]
			}
			return l + " (a panic no deferred recover stopped, as in a goroutine a cell started)"
		case strings.HasPrefix(l, "runtime: ") && detail == "":
			detail = l
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "unknown reason"
}

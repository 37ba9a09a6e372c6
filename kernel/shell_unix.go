//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package kernel

import (
	"os/exec"
	"syscall"
)

// killGroup makes cmd run in a process group of its own and, when its
// context ends, kills the whole group, so an interrupted ! command takes
// its children (a pipeline, a script's subprocesses) with it.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

//go:build unix

package kerneltest_test

import (
	"os/exec"
	"syscall"
)

// killGroup makes cmd's cancellation kill its whole process group.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

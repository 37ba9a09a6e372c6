//go:build unix

package train

import (
	"os/exec"
	"syscall"
)

// The signals FollowCommand sends a command's process group.
const (
	sigInterrupt = syscall.SIGINT
	sigTerm      = syscall.SIGTERM
	sigKill      = syscall.SIGKILL
)

// startGroup makes cmd start a process group of its own, so that its
// children (mpirun and what it starts on this machine) get its signals.
func startGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// signalGroup sends sig to cmd's process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}

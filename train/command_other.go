//go:build !unix

package train

import (
	"os"
	"os/exec"
)

// groupSignal is a signal FollowCommand sends a command: without process
// groups, to the command's process alone.
type groupSignal int

const (
	sigInterrupt groupSignal = iota
	sigTerm
	sigKill
)

// startGroup does nothing: the platform has no process groups.
func startGroup(*exec.Cmd) {}

// signalGroup interrupts or kills cmd's process (an interrupt the platform
// cannot send kills it).
func signalGroup(cmd *exec.Cmd, sig groupSignal) {
	if cmd.Process == nil {
		return
	}
	if sig == sigInterrupt && cmd.Process.Signal(os.Interrupt) == nil {
		return
	}
	_ = cmd.Process.Kill()
}

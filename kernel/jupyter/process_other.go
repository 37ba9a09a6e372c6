//go:build !unix

package jupyter

import (
	"os"
	"os/exec"
)

func setProcessGroup(cmd *exec.Cmd) {}

func interruptProcess(p *os.Process) error { return p.Signal(os.Interrupt) }

func killProcess(p *os.Process) { _ = p.Kill() }

func exitSignal(st *os.ProcessState) string { return "" }

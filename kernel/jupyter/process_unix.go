//go:build unix

package jupyter

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the kernel in a new session, as jupyter_client
// does, so a Ctrl-C meant for the client does not reach it and an interrupt
// reaches the kernel's own children too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

func interruptProcess(p *os.Process) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGINT); err == nil {
		return nil
	}
	return p.Signal(os.Interrupt)
}

func killProcess(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}

func exitSignal(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}

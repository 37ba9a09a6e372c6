package train

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// processState reports whether process pid is alive and its start time
// (from sysctl kern.proc.pid). A zombie counts as gone.
func processState(pid int) (procState, string) {
	st := signalState(pid)
	if st != procAlive {
		return st, ""
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return st, ""
	}
	if k.Proc.P_stat == 5 { // SZOMB
		return procGone, ""
	}
	t := k.Proc.P_starttime
	return st, fmt.Sprintf("%d.%06d", t.Sec, t.Usec)
}

// bootID is not read on this platform.
func bootID() string { return "" }

// pidNamespace is not read on this platform.
func pidNamespace() string { return "" }

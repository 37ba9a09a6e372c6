//go:build unix

package train

import (
	"errors"

	"golang.org/x/sys/unix"
)

// signalState tells whether process pid exists by sending it signal 0.
func signalState(pid int) procState {
	if pid <= 0 {
		return procGone
	}
	switch err := unix.Kill(pid, 0); {
	case err == nil, errors.Is(err, unix.EPERM): // EPERM: it exists, another user's
		return procAlive
	case errors.Is(err, unix.ESRCH):
		return procGone
	default:
		return procUnknown
	}
}

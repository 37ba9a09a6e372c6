//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package train

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on f without waiting: errLockHeld when
// another open file holds one, another error when the file system has no
// locks. The kernel lets the lock go when the process ends, however it
// ends.
func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errLockHeld
	}
	return err
}

// probeLock reports whether some process holds the exclusive lock on the
// file at path. It takes a shared lock for an instant, so that probes do
// not see each other as holders.
func probeLock(path string) lockProbe {
	f, err := os.Open(path)
	if err != nil {
		return lockUnknown
	}
	defer f.Close()
	fd := int(f.Fd())
	switch err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); {
	case err == nil:
		_ = unix.Flock(fd, unix.LOCK_UN)
		return lockFree
	case errors.Is(err, unix.EWOULDBLOCK):
		return lockHeld
	default:
		return lockUnknown
	}
}

//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package train

import (
	"errors"
	"os"
)

// lockFile reports that this platform's runs go unlocked: readers judge
// them by pid and heartbeat.
func lockFile(*os.File) error { return errors.ErrUnsupported }

// probeLock cannot tell on this platform.
func probeLock(string) lockProbe { return lockUnknown }

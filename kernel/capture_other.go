//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package kernel

import (
	"errors"
	"os"
	"runtime"
)

var errNoCapture = errors.New("kernel: capturing file descriptors is not supported on " + runtime.GOOS)

func redirect(fd int) (orig, reader *os.File, err error) { return nil, nil, errNoCapture }

func restoreFD(fd int, orig *os.File) error { return errNoCapture }

func writeFD(fd int, p []byte) error { return errNoCapture }

func dupFile(fd uintptr, name string) (*os.File, error) { return nil, errNoCapture }

func settledReader(f *os.File) func([]byte) (int, error) { return f.Read }

//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package kernel

import (
	"errors"
	"os"
	"runtime"
	"time"
)

var errNoCapture = errors.New("kernel: capturing file descriptors is not supported on " + runtime.GOOS)

func redirect(fd int) (orig, reader *os.File, err error) { return nil, nil, errNoCapture }

func restoreFD(fd int, orig *os.File) error { return errNoCapture }

func dupFile(fd uintptr, name string) (*os.File, error) { return nil, errNoCapture }

const settleDelay = 5 * time.Millisecond

// readChunk reads what arrives. Reading and counting are not one step
// here: sync may return before the last bytes read are delivered.
func (p *streamPipe) readChunk(buf []byte) (int, error) {
	n, err := p.f.Read(buf)
	p.mu.Lock()
	p.read += uint64(n)
	p.mu.Unlock()
	if n > 0 {
		err = nil // deliver first; the error comes back on the next read
	}
	return n, err
}

// unreadBytes cannot tell: sync then only waits for what was read.
func unreadBytes(fd uintptr) (int, error) { return 0, errNoCapture }

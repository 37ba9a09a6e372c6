//go:build linux || darwin || freebsd || netbsd || openbsd

package store

import (
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f read-only into memory, so that
// tensors are copied from the page cache straight into device buffers
// without an intermediate heap buffer. It returns nil (and the caller
// falls back to ReadAt) when the file cannot be mapped: it is empty, too
// large for the address space, or on a file system without mmap.
func mapFile(f *os.File, size int64) []byte {
	if size <= 0 || size > math.MaxInt {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

// unmapFile releases a mapping made by mapFile.
func unmapFile(b []byte) error { return unix.Munmap(b) }

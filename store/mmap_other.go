//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package store

import "os"

// mapFile reports that memory mapping is not used on this platform:
// tensors are read with ReadAt.
func mapFile(*os.File, int64) []byte { return nil }

// unmapFile is never called on this platform.
func unmapFile([]byte) error { return nil }

//go:build !(amd64 || arm64) || purego

package tensor

import (
	"bytes"
	"runtime"
	"strconv"
)

// goroutineKey identifies the calling goroutine by the id in its stack
// trace header: portable, but slower than reading the runtime's g pointer.
func goroutineKey() uint64 { return goroutineID() }

// goroutineID returns the calling goroutine's id from its stack trace; the
// portable fallback of goroutineKey.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// Package strict is a checking backend for tests: a decorator over another
// backend (the CPU's) that behaves like a GPU stream, so that CPU-only CI
// catches what would break on a GPU.
//
//   - Kernels run asynchronously, in order, on the backend's own goroutine;
//     only Read and Sync wait for them.
//   - A kernel that names a freed buffer, reads past a buffer's end or reads
//     it as the wrong dtype is refused with a sticky error, reported by the
//     next Read or Sync.
//   - Freed buffers (and fresh ones) are filled with poison: NaN for floats,
//     0xA5 bytes otherwise; freed ones stay quarantined before reuse.
//   - Every live buffer is tracked with the place that allocated it, so a
//     test can assert that nothing leaked (Mark, LiveSince).
//
// Importing the package registers the "strict" device kind:
// tensor.ParseDevice("strict") returns it. It is never a default device.
package strict

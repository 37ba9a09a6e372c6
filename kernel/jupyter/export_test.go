package jupyter

import "time"

// SetStallTimeout changes how long a send may make no progress before the
// peer is dropped, and returns a function restoring the old value.
func SetStallTimeout(d time.Duration) (restore func()) {
	old := stallTimeout.Swap(int64(d))
	return func() { stallTimeout.Store(old) }
}

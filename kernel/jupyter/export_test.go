package jupyter

import "time"

// SetStallTimeout changes how long a send may make no progress before the
// peer is dropped, and returns a function restoring the old value.
func SetStallTimeout(d time.Duration) (restore func()) {
	old := stallTimeout.Swap(int64(d))
	return func() { stallTimeout.Store(old) }
}

// SetNewConnectionInfo replaces how StartKernel and Connect pick ports, and
// returns a function restoring the old one.
func SetNewConnectionInfo(f func(ip string) (ConnectionInfo, error)) (restore func()) {
	old := newConnectionInfo
	newConnectionInfo = f
	return func() { newConnectionInfo = old }
}

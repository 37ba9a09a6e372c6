package train

import "time"

// SetStopGrace shortens how long FollowCommand waits for a run it asked to
// stop before it signals the run's processes (StopGrace), and returns a
// function that restores it.
func SetStopGrace(d time.Duration) (restore func()) {
	old := stopGrace
	stopGrace = d
	return func() { stopGrace = old }
}

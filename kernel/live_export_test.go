package kernel

import "time"

// SetLiveGrace shortens how long an interrupt waits for a cell's training
// runs to stop (LiveGrace), for tests.
func SetLiveGrace(s *Session, d time.Duration) {
	s.live.mu.Lock()
	s.live.grace = d
	s.live.mu.Unlock()
}

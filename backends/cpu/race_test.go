//go:build race

package cpu

// raceEnabled: the race detector is on. sync.Pool then drops a share of
// what is put back on purpose, so tests that count allocations skip.
const raceEnabled = true

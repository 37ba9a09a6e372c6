//go:build race

package fusion_test

// raceEnabled: the race detector is on. Tests that check numbers for
// minutes, not concurrency, then skip: the plain run checks them.
const raceEnabled = true

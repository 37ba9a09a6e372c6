//go:build race

package nn_test

// raceEnabled: the race detector is on; the long accuracy and memory runs
// (which check numbers, not concurrency) then skip: the plain run checks
// them.
const raceEnabled = true

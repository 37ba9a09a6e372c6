//go:build !race

package cpu

// raceEnabled: the race detector is on (see race_test.go).
const raceEnabled = false

//go:build !race

package fusion_test

// raceEnabled: the race detector is on (see race_test.go).
const raceEnabled = false

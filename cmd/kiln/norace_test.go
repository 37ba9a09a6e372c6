//go:build !race

package main

// raceEnabled: the race detector is on (see race_test.go).
const raceEnabled = false

//go:build !race

package vulkan

// raceEnabled: the race detector is on (see race_test.go).
const raceEnabled = false

//go:build !race

package vulkan_test

// raceEnabled: the race detector is on (see race_ext_test.go).
const raceEnabled = false

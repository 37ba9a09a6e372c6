//go:build race

package vulkan_test

// raceEnabled: the race detector is on; the long GPU suites (which check
// values, and run their kernels in the driver, out of its sight) then skip:
// the plain run checks them.
const raceEnabled = true

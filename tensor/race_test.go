//go:build race

package tensor_test

// raceEnabled: the race detector is on. The slowest finite-difference
// gradient checks then skip: they check numbers, not concurrency, take a
// minute or more each under the detector, and the plain run checks them.
const raceEnabled = true

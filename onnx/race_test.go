//go:build race

package onnx_test

// raceEnabled: the race detector is on; the torchvision models then take
// minutes, and the plain run checks them.
const raceEnabled = true

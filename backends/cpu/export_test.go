package cpu

// Names for the external tests (package cpu_test), which may import the
// packages that import this one (nn, for whole models).

// SetConvWinoMode sets which convolutions take the Winograd path ("":
// where it pays, "off": none, "force": wherever it can) and returns a
// function that restores the previous mode.
func SetConvWinoMode(mode string) (restore func()) {
	old := convWinoMode
	convWinoMode = mode
	return func() { convWinoMode = old }
}

// ConvPathsOnThisCPU reports whether this CPU runs the Winograd transform
// kernels and the bfloat16 convolution kernels (without them the
// Winograd layers run the Go transforms, and autocast convolutions run in
// float32).
func ConvPathsOnThisCPU() (winograd, bf16 bool) { return winoKernels, convBF16Hardware }

// RaceEnabled is whether the race detector is on.
const RaceEnabled = raceEnabled

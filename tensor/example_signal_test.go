package tensor_test

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// An FFT finds the frequency of a sampled cosine. Complex tensors are real
// tensors with a trailing (real, imaginary) dimension of size 2, as
// torch.view_as_real gives them.
func ExampleFFT() {
	dev := tensor.CPU()
	const n = 12
	signal := make([]float64, 2*n) // complex: real parts hold a cosine of 3 cycles, imaginary parts 0
	for j := range n {
		signal[2*j] = math.Cos(2 * math.Pi * 3 * float64(j) / n)
	}
	x := tensor.FromFloat64s(dev, signal, n, 2)
	spectrum := tensor.FFT(x, 0, -1, "")
	magnitude := spectrum.Square().Sum(-1).Sqrt()
	fmt.Printf("%.1f\n", magnitude.Float64s())
	back := tensor.IFFT(spectrum, 0, -1, "")
	fmt.Println("round trip:", back.AllClose(x, 1e-12, 1e-12))
	// Output:
	// [0.0 0.0 0.0 6.0 0.0 0.0 0.0 0.0 0.0 6.0 0.0 0.0]
	// round trip: true
}

// RFFT keeps the non-negative frequencies of a real signal; IRFFT gives the
// signal back from them.
func ExampleRFFT() {
	dev := tensor.CPU()
	x := tensor.FromFloat64s(dev, []float64{1, 2, 3, 4, 5}, 5)
	spectrum := tensor.RFFT(x, 0, -1, "")
	fmt.Println(spectrum.Shape())
	fmt.Printf("%.3f\n", tensor.IRFFT(spectrum, 5, -1, "").Float64s())
	// Output:
	// [3 2]
	// [1.000 2.000 3.000 4.000 5.000]
}

// STFT cuts a signal into windowed frames and transforms each; ISTFT
// overlap-adds them back into the signal.
func ExampleSTFT() {
	dev := tensor.CPU()
	x := tensor.Arange(dev, 0, 64, 1).DivScalar(8).Sin()
	window := tensor.Arange(dev, 0, 16, 1).MulScalar(math.Pi / 16).Sin().Square() // periodic Hann
	cfg := tensor.STFTConfig{NFFT: 16, HopLength: 4, Length: 64}
	spec := tensor.STFT(x, window, cfg)
	fmt.Println("frequencies, frames, (re, im):", spec.Shape())
	back := tensor.ISTFT(spec, window, cfg)
	fmt.Println("round trip:", back.AllClose(x, 1e-5, 1e-5))
	// Output:
	// frequencies, frames, (re, im): [9 17 2]
	// round trip: true
}

// AffineGrid turns affine matrices into sampling grids and GridSample
// reads an image on them: here the identity and a horizontal flip.
func ExampleGridSample() {
	dev := tensor.CPU()
	img := tensor.Arange(dev, 0, 6, 1).To(tensor.Float32).Reshape(1, 1, 2, 3).Expand(2, 1, 2, 3)
	theta := tensor.FromFloat32s(dev, []float32{
		1, 0, 0, 0, 1, 0, // identity
		-1, 0, 0, 0, 1, 0, // mirror x
	}, 2, 2, 3)
	grid := tensor.AffineGrid(theta, []int{2, 1, 2, 3}, false)
	out := tensor.GridSample(img, grid, tensor.GridSampleConfig{})
	fmt.Printf("%.1f\n", out.Float64s())
	// Output:
	// [0.0 1.0 2.0 3.0 4.0 5.0 2.0 1.0 0.0 5.0 4.0 3.0]
}

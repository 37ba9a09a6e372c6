package tensor_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Bicubic upsampling, PyTorch's mode="bicubic" (the values are
// PyTorch's): Keys' kernel with A = −0.75 follows a linear ramp exactly
// away from the borders, where the clamped reads bend it, and overshoots
// a step on both sides.
func ExampleInterpolate_bicubic() {
	dev := tensor.CPU()
	ramp := tensor.FromFloat64s(dev, []float64{0, 1, 2, 3}, 1, 1, 1, 4)
	up := tensor.Interpolate(ramp, tensor.InterpolateConfig{Size: []int{1, 7}, Mode: "bicubic", AlignCorners: true})
	fmt.Printf("%.3f\n", up.Float64s())
	step := tensor.FromFloat64s(dev, []float64{0, 0, 1, 1}, 1, 1, 1, 4)
	up = tensor.Interpolate(step, tensor.InterpolateConfig{Size: []int{1, 8}, Mode: "bicubic"})
	fmt.Printf("%.3f\n", up.Float64s())
	// Output:
	// [0.000 0.406 1.000 1.500 2.000 2.594 3.000]
	// [0.000 -0.035 -0.105 0.227 0.773 1.105 1.035 1.000]
}

// A deformable convolution with zero offsets and a mask of ones is an
// ordinary convolution; shifting every sample by one pixel to the right
// moves the output along with it.
func ExampleDeformConv2d() {
	dev := tensor.CPU()
	x := tensor.FromFloat64s(dev, []float64{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12}, 1, 1, 3, 4)
	w := tensor.OnesOf(dev, tensor.Float64, 1, 1, 1, 1) // 1×1 kernel: the output samples x
	offsets := tensor.ZerosOf(dev, tensor.Float64, 1, 2, 3, 4)
	fmt.Println(tensor.DeformConv2d(x, offsets, w, nil, nil, tensor.DeformConvConfig{}).Float64s())
	right := tensor.Cat([]*tensor.Tensor{
		tensor.ZerosOf(dev, tensor.Float64, 1, 1, 3, 4), // Δy
		tensor.OnesOf(dev, tensor.Float64, 1, 1, 3, 4),  // Δx
	}, 1)
	fmt.Println(tensor.DeformConv2d(x, right, w, nil, nil, tensor.DeformConvConfig{}).Float64s())
	// Output:
	// [1 2 3 4 5 6 7 8 9 10 11 12]
	// [2 3 4 0 6 7 8 0 10 11 12 0]
}

// AdaptiveMaxPool1d pools any length into a fixed number of windows
// (here [0, 3), [2, 5) and [4, 7), overlapping because 3 does not divide
// 7) and says where each maximum was.
func ExampleAdaptiveMaxPool1d() {
	dev := tensor.CPU()
	x := tensor.FromFloat64s(dev, []float64{3, 1, 4, 1, 5, 9, 2}, 1, 7)
	v, i := tensor.AdaptiveMaxPool1d(x, 3)
	fmt.Println(v.Float64s(), i.Int64s())
	// Output:
	// [4 5 9] [2 4 5]
}

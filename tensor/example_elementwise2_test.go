package tensor_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Atan2 gives the angle of each point (x, y), in every quadrant, with
// gradients for both coordinates.
func ExampleTensor_Atan2() {
	dev := tensor.CPU().Autodiff()
	y := tensor.FromFloat64s(dev, []float64{1, 1, -1, 0}).RequireGrad()
	x := tensor.FromFloat64s(dev, []float64{1, -1, -1, -2})
	angle := y.Atan2(x)
	fmt.Printf("%.4f\n", angle.Float64s())
	fmt.Printf("%.4f\n", y.Grad(angle.Sum().Backward()).Float64s())
	// Output:
	// [0.7854 2.3562 -2.3562 3.1416]
	// [0.5000 -0.5000 -0.5000 -0.5000]
}

// Logcumsumexp keeps running log-sums of values far apart in magnitude
// that a direct exp would overflow or underflow.
func ExampleTensor_Logcumsumexp() {
	x := tensor.FromFloat64s(tensor.CPU(), []float64{-1000, 0, 1000, 1000})
	fmt.Printf("%.4f\n", x.Logcumsumexp(0).Float64s())
	// Output: [-1000.0000 0.0000 1000.0000 1000.6931]
}

// MaskedSelect and Take pick elements by a mask or by flat indices.
func ExampleTensor_MaskedSelect() {
	dev := tensor.CPU()
	x := tensor.FromFloat32s(dev, []float32{1, -2, 3, -4, 5, -6}, 2, 3)
	fmt.Println(x.MaskedSelect(x.GtScalar(0)).Float32s())
	fmt.Println(x.Take(tensor.FromInt64s(dev, []int64{0, -1, 4})).Float32s())
	fmt.Println(x.Movedim([]int{0}, []int{1}).Shape())
	// Output:
	// [1 3 5]
	// [1 -6 5]
	// [3 2]
}

// Median, Quantile and Mode follow PyTorch's rules: the lower median,
// linear interpolation between ranks by default, the smallest of the most
// frequent values.
func ExampleTensor_Quantile() {
	dev := tensor.CPU()
	x := tensor.FromFloat32s(dev, []float32{3, 1, 4, 1, 5, 9, 2, 6}, 2, 4)
	q := tensor.FromFloat32s(dev, []float32{0.25, 0.5})
	fmt.Println(x.Quantile(q, 1, false, "linear").Float32s())
	med, idx := x.MedianDim(1, false)
	fmt.Println(med.Float32s(), idx.Int64s(), x.Median().Item())
	mode, at := tensor.FromInt64s(dev, []int64{2, 7, 7, 2, 3}).Mode(0, false)
	fmt.Println(mode.Item(), at.Item())
	// Output:
	// [1 4.25 2 5.5]
	// [1 5] [3 0] 3
	// 2 3
}

// Bincount and Histc count values into bins; the bitwise ops work on
// integer tensors.
func ExampleTensor_Bincount() {
	dev := tensor.CPU()
	x := tensor.FromInt64s(dev, []int64{0, 1, 1, 3})
	fmt.Println(x.Bincount(nil, 0).Int64s())
	fmt.Println(tensor.FromFloat32s(dev, []float32{0.1, 0.4, 0.5, 0.9}).Histc(2, 0, 1).Float32s())
	fmt.Println(x.BitwiseXorScalar(5).Int64s(), x.BitwiseLeftShiftScalar(2).Int64s())
	// Output:
	// [1 2 0 1]
	// [2 2]
	// [5 4 4 6] [0 4 4 12]
}

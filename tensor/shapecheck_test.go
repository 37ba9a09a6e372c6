package tensor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// wantTensorError runs fn in a scope of its own (subtests run on goroutines
// outside the caller's scope) and checks that it panicked with a
// *tensor.Error matching sentinel whose message contains each of want.
func wantTensorError(t *testing.T, fn func(), sentinel error, want ...string) {
	t.Helper()
	var err error
	tensor.Scope(func() { err = tensor.Try(fn) })
	var te *tensor.Error
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a *tensor.Error", err)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %q does not match %v", err, sentinel)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestShapeOverflow checks that shapes whose element count or byte size
// overflows, or that have negative dimensions, are refused with a
// *tensor.Error naming the op and the shape, wherever a shape is computed
// from user numbers: creation, reshaping, expanding, broadcasting,
// concatenation, repetition, padding, matmul, convolution and pooling.
// Views (Expand) stand in for huge inputs, so nothing large is allocated.
func TestShapeOverflow(t *testing.T) {
	const big = 1 << 62
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		// wide returns a view of one zero as [n] (stride 0: nothing allocated)
		wide := func(n ...int) *tensor.Tensor {
			ones := make([]int, len(n))
			for i := range ones {
				ones[i] = 1
			}
			return tensor.Zeros(dev, ones...).Expand(n...)
		}
		cases := []struct {
			name     string
			fn       func()
			sentinel error
			want     []string
		}{
			{"Zeros wrapping to 4 elements", func() { tensor.Zeros(dev, big+1, 4) }, tensor.ErrShape,
				[]string{"tensor.Zeros", "shape [4611686018427387905 4] has more than 2^63 elements"}},
			{"Zeros of 2^64 elements", func() { tensor.Zeros(dev, 1<<32, 1<<32) }, tensor.ErrShape,
				[]string{"[4294967296 4294967296]"}},
			{"Ones with a negative dimension", func() { tensor.Ones(dev, 3, -1) }, tensor.ErrShape,
				[]string{"negative dimension", "[3 -1]"}},
			{"Full of 2^63 bytes", func() { tensor.ZerosOf(dev, tensor.Int64, 1<<60, 4) }, tensor.ErrShape,
				[]string{"[1152921504606846976 4] of int64 is more than 2^63 bytes"}},
			{"Randn", func() { tensor.Randn(dev, big, 4) }, tensor.ErrShape, []string{"tensor.Randn"}},
			{"Rand", func() { tensor.Rand(dev, 4, big) }, tensor.ErrShape, []string{"tensor.Rand"}},
			{"RandInt", func() { tensor.RandInt(dev, 0, 9, big, 2, 2) }, tensor.ErrShape, []string{"tensor.RandInt"}},
			{"Eye", func() { tensor.Eye(dev, 1<<32, 1<<32) }, tensor.ErrShape, []string{"tensor.Eye"}},
			{"FromFloat32s into a wrapping shape", func() { tensor.FromFloat32s(dev, []float32{1, 2, 3, 4}, big+1, 4) },
				tensor.ErrShape, []string{"tensor.FromFloat32s", "[4611686018427387905 4]"}},
			{"FromInt64s inferring past 2^63", func() { tensor.FromInt64s(dev, []int64{1, 2, 3, 4}, -1, big, 4) },
				tensor.ErrShape, []string{"tensor.FromInt64s", "overflows"}},
			{"Arange with too many elements", func() { tensor.Arange(dev, 0, 1<<40, 1) }, tensor.ErrArgument,
				[]string{"tensor.Arange", "too many"}},
			{"Reshape to a wrapping shape", func() { tensor.Zeros(dev, 4).Reshape(big+1, 4) }, tensor.ErrShape,
				[]string{"tensor.Reshape", "[4611686018427387905 4]"}},
			{"Reshape inferring past 2^63", func() { tensor.Zeros(dev, 4).Reshape(-1, big, 4) }, tensor.ErrShape,
				[]string{"tensor.Reshape", "overflows"}},
			{"Unflatten to a wrapping shape", func() { tensor.Zeros(dev, 2, 4).Unflatten(1, big+1, 4) }, tensor.ErrShape,
				[]string{"tensor.Unflatten"}},
			{"Expand past 2^63 elements", func() { tensor.Zeros(dev, 1, 4).Expand(big, 4) }, tensor.ErrShape,
				[]string{"tensor.Expand", "[4611686018427387904 4] has more than 2^63 elements"}},
			{"Expand to a negative dimension", func() { tensor.Zeros(dev, 4).Expand(-2, 4) }, tensor.ErrShape,
				[]string{"tensor.Expand", "negative dimension"}},
			{"broadcasting Add", func() { wide(1<<32, 1).Add(wide(1, 1<<32)) }, tensor.ErrShape,
				[]string{"tensor.Add", "[4294967296 4294967296]"}},
			{"Where", func() {
				tensor.Where(tensor.OnesOf(dev, tensor.Bool, 1, 1).Expand(1<<32, 1), wide(1, 1<<32), wide(1, 1))
			},
				tensor.ErrShape, []string{"[4294967296 4294967296]"}},
			{"Matmul output", func() { wide(1<<32, 1).Matmul(wide(1, 1<<32)) }, tensor.ErrShape,
				[]string{"tensor.Matmul", "[4294967296 4294967296]"}},
			{"Cat along a huge dimension", func() { tensor.Cat([]*tensor.Tensor{wide(big), wide(big)}, 0) }, tensor.ErrShape,
				[]string{"tensor.Cat", "overflows"}},
			{"Stack of huge tensors", func() { tensor.Stack([]*tensor.Tensor{wide(big), wide(big)}, 0) }, tensor.ErrShape,
				[]string{"tensor.Stack", "more than 2^63 elements"}},
			{"Repeat wrapping to 0", func() { tensor.Zeros(dev, 4).Repeat(big) }, tensor.ErrShape,
				[]string{"tensor.Repeat", "overflows"}},
			{"Repeat past 2^63 elements", func() { tensor.Zeros(dev, 4, 4).Repeat(1<<32, 1<<32) }, tensor.ErrShape,
				[]string{"tensor.Repeat", "more than 2^63 elements"}},
			{"Pad past 2^63", func() { tensor.Zeros(dev, 4).Pad([]int{big, big}, "constant", 0) }, tensor.ErrShape,
				[]string{"tensor.Pad", "overflows"}},
			{"Conv2d padding past 2^63", func() {
				tensor.Conv2d(tensor.Zeros(dev, 1, 1, 4, 4), tensor.Zeros(dev, 1, 1, 3, 3), nil, tensor.ConvConfig{Padding: []int{big, 0}})
			}, tensor.ErrShape, []string{"tensor.Conv2d", "overflows"}},
			{"Conv2d output past 2^63", func() {
				tensor.Conv2d(wide(1, 1, 1<<32, 1<<32), tensor.Zeros(dev, 1, 1, 1, 1), nil, tensor.ConvConfig{})
			}, tensor.ErrShape, []string{"more than 2^63 elements"}},
			{"ConvTranspose2d output past 2^63", func() {
				tensor.ConvTranspose2d(tensor.Zeros(dev, 1, 1, 4, 4), tensor.Zeros(dev, 1, 1, 3, 3), nil,
					tensor.ConvTransposeConfig{Stride: []int{big}})
			}, tensor.ErrShape, []string{"tensor.ConvTranspose2d", "overflows"}},
			{"MaxPool2d dilation past 2^63", func() {
				tensor.MaxPool2d(tensor.Zeros(dev, 1, 1, 4, 4), tensor.PoolConfig{Kernel: []int{3}, Dilation: []int{big}})
			}, tensor.ErrShape, []string{"tensor.MaxPool2d", "overflows"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { wantTensorError(t, c.fn, c.sentinel, c.want...) })
		}
	})
}

// TestHugeAllocation checks that a shape that does not overflow but is far
// larger than the device (2^40 floats, 4 TiB) is an ErrOutOfMemory error,
// not a Go runtime crash, both within the device's budget and with the
// budget switched off (the CPU backend then refuses more than the
// machine's memory).
func TestHugeAllocation(t *testing.T) {
	dev := tensor.CPU()
	cases := []struct {
		name string
		fn   func()
	}{
		{"Zeros", func() { tensor.Zeros(dev, 1<<40) }},
		{"Linspace", func() { tensor.Linspace(dev, 0, 1, 1<<40) }},
		{"Arange", func() { tensor.Arange(dev, 0, 1<<34, 1) }},
		{"Pad", func() { tensor.Zeros(dev, 4).Pad([]int{1 << 40, 0}, "constant", 0) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantTensorError(t, c.fn, tensor.ErrOutOfMemory) })
	}
	budget := dev.MemoryStats().BudgetBytes
	defer dev.SetMemoryBudget(budget)
	dev.SetMemoryBudget(0)
	t.Run("Zeros without a budget", func(t *testing.T) {
		wantTensorError(t, func() { tensor.Zeros(dev, 1<<40) }, tensor.ErrOutOfMemory, "machine's memory")
	})
}

// TestIntegerDivisionByZero checks PyTorch's ZeroDivisionError in Kiln's
// terms: a scalar zero divisor of an integer tensor panics at once with
// ErrDivideByZero; a tensor divisor holding a zero is reported at the next
// synchronisation point (the divisor lives on the device), by Device.Sync
// and by host reads; float division by zero stays IEEE arithmetic.
func TestIntegerDivisionByZero(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromInt64s(dev, []int64{7, -8, 9})
		panics := []struct {
			name string
			fn   func()
		}{
			{"FloorDivideScalar int64", func() { x.FloorDivideScalar(0) }},
			{"RemScalar int64", func() { x.RemScalar(0) }},
			{"FloorDivideScalar int32", func() { tensor.FromInt32s(dev, []int32{1, 2, 3}).FloorDivideScalar(0) }},
			{"RemScalar uint8", func() { x.To(tensor.Uint8).RemScalar(0) }},
		}
		for _, c := range panics {
			t.Run(c.name, func(t *testing.T) {
				wantTensorError(t, c.fn, tensor.ErrDivideByZero, "by zero", "[3]")
			})
		}
		for _, c := range []struct {
			name string
			fn   func() *tensor.Tensor
		}{
			{"float FloorDivideScalar", func() *tensor.Tensor { return x.To(tensor.Float32).FloorDivideScalar(0) }},
			{"float Rem", func() *tensor.Tensor { return x.To(tensor.Float32).Rem(tensor.ZerosOf(dev, tensor.Float32, 3)) }},
			{"nonzero divisors", func() *tensor.Tensor { return x.FloorDivide(tensor.FromInt64s(dev, []int64{2, 3, -4})) }},
		} {
			t.Run(c.name, func(t *testing.T) {
				var err error
				tensor.Scope(func() { err = tensor.Try(func() { c.fn().Float64s() }) })
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
			})
		}
	})
	// tensor divisors: on devices of their own, since the failure is sticky
	for _, name := range []string{"cpu", "strict"} {
		dev, err := tensor.ParseDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		x := tensor.FromInt64s(dev, []int64{7, -8, 9})
		zero := tensor.FromInt64s(dev, []int64{2, 0, 3})
		for _, c := range []struct {
			name string
			fn   func() *tensor.Tensor
		}{
			{"FloorDivide", func() *tensor.Tensor { return x.FloorDivide(zero) }},
			{"Rem", func() *tensor.Tensor { return x.Rem(zero) }},
			{"Rem of a scalar by a tensor", func() *tensor.Tensor { return tensor.FromInt64s(dev, []int64{5}).Rem(zero) }},
			{"FloorDivide by an int32 zero", func() *tensor.Tensor { return x.FloorDivide(zero.To(tensor.Int32)) }},
		} {
			t.Run(name+"/"+c.name+"/Sync", func(t *testing.T) {
				tensor.Scope(func() { c.fn() })
				err := dev.Sync()
				if !errors.Is(err, tensor.ErrDivideByZero) || !errors.Is(err, tensor.ErrDeviceFailed) {
					t.Errorf("Sync: %v, want an error matching ErrDivideByZero and ErrDeviceFailed", err)
				}
				if err := dev.Sync(); err != nil {
					t.Errorf("the failure was reported twice: %v", err)
				}
			})
			t.Run(name+"/"+c.name+"/Int64s", func(t *testing.T) {
				out := c.fn()
				wantTensorError(t, func() { out.Int64s() }, tensor.ErrDivideByZero, "tensor.Int64s", "division by zero")
			})
		}
	}
}

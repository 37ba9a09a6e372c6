package tensor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// CTCLoss is checked against PyTorch (every option, reductions, edge cases)
// in package nn's tests, which own the fixtures; these check the op itself.

// TestCTCLossGradients checks CTCLoss's gradient with respect to logits
// through LogSoftmax against finite differences (with respect to the
// log-probabilities themselves it is PyTorch's, which adds exp(logProbs)).
func TestCTCLossGradients(t *testing.T) {
	ints := func(vals []int64, shape ...int) func(tensor.Device) *tensor.Tensor {
		return func(dev tensor.Device) *tensor.Tensor {
			return tensor.FromInt64s(dev, vals, shape...).Reshape(shape...)
		}
	}
	runGradCases(t, []gradCase{
		{"padded", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.CTCLoss(in[0].LogSoftmax(2), in[1], []int{4, 3}, []int{2, 1}, tensor.CTCLossOptions{})
		}, func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(dev, 1, -2, 2, 4, 2, 3), ints([]int64{1, 1, 2, 0}, 2, 2)(dev)}
		}},
		{"concatenated int32 blank last", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.CTCLoss(in[0].LogSoftmax(2), in[1].To(tensor.Int32), []int{4, 4}, []int{2, 1},
				tensor.CTCLossOptions{Blank: 2})
		}, func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(dev, 2, -2, 2, 4, 2, 3), ints([]int64{0, 1, 1}, 3)(dev)}
		}},
		{"unbatched zero infinity", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.CTCLoss(in[0].LogSoftmax(1), in[1], []int{2}, []int{2}, tensor.CTCLossOptions{ZeroInfinity: true})
		}, func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(dev, 3, -2, 2, 3, 3), ints([]int64{1, 1}, 2)(dev)}
		}},
	})
}

// TestCTCLossInfinity checks that a target that cannot fit has an infinite
// loss and NaN gradients, or 0 and zero gradients with ZeroInfinity, while
// frames past the input length get zero gradients.
func TestCTCLossInfinity(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, zero := range []bool{false, true} {
			lp := tensor.Zeros(dev.Autodiff(), 3, 1, 2).LogSoftmax(2).Detach().RequireGrad()
			targets := tensor.FromInt64s(dev, []int64{1, 1}, 1, 2)
			out := tensor.CTCLoss(lp, targets, []int{2}, []int{2}, tensor.CTCLossOptions{ZeroInfinity: zero})
			g := out.Sum().Backward().Get(lp).Float64s()
			loss := out.Float64s()[0]
			for i, v := range g {
				inside := i < 4 // frames 0 and 1 of [3 1 2]
				switch {
				case !inside && v != 0:
					t.Errorf("zero infinity %v: gradient %d past the input length is %v", zero, i, v)
				case inside && zero && v != 0:
					t.Errorf("zero infinity: gradient %d is %v, want 0", i, v)
				case inside && !zero && !math.IsNaN(v):
					t.Errorf("gradient %d of an infinite loss is %v, want NaN", i, v)
				}
			}
			if zero && loss != 0 || !zero && !math.IsInf(loss, 1) {
				t.Errorf("zero infinity %v: loss %v", zero, loss)
			}
		}
	})
}

// TestCTCLossBadInput checks a few refusals (package nn tests the rest).
func TestCTCLossBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		lp := tensor.Zeros(dev, 4, 2, 3)
		targets := tensor.FromInt64s(dev, []int64{1, 2}, 2, 1)
		cases := []struct {
			name string
			fn   func()
			kind error
		}{
			{"lengths", func() { tensor.CTCLoss(lp, targets, []int{4, 4}, []int{1}, tensor.CTCLossOptions{}) }, tensor.ErrShape},
			{"blank", func() { tensor.CTCLoss(lp, targets, []int{4, 4}, []int{1, 1}, tensor.CTCLossOptions{Blank: -1}) },
				tensor.ErrArgument},
			{"label", func() {
				tensor.CTCLoss(lp, tensor.FromInt64s(dev, []int64{1, -1}, 2, 1), []int{4, 4}, []int{1, 1}, tensor.CTCLossOptions{})
			}, tensor.ErrArgument},
			{"dtype", func() { tensor.CTCLoss(lp, lp, []int{4, 4}, []int{1, 1}, tensor.CTCLossOptions{}) }, tensor.ErrDType},
		}
		for _, c := range cases {
			err := tensor.Try(c.fn)
			if !errors.Is(err, c.kind) {
				t.Errorf("%s: error %v, want %v", c.name, err, c.kind)
			}
		}
	})
}

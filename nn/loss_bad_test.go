package nn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestLossBadInput checks that every loss refuses bad input with a
// *tensor.Error of the right kind whose message names the loss and the
// shapes or values involved.
func TestLossBadInput(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		z := func(shape ...int) *tensor.Tensor { return tensor.Zeros(dev, shape...) }
		half := func(shape ...int) *tensor.Tensor { return tensor.Full(dev, 0.5, shape...) }
		idx := func(vals []int64, shape ...int) *tensor.Tensor {
			return tensor.FromInt64s(dev, vals, shape...).Reshape(shape...)
		}
		neg := -1.0
		cases := []struct {
			name string
			fn   func()
			kind error
			want []string // substrings of the message
		}{
			{"MSE shapes", func() { nn.MSE(z(3, 4), z(4, 3), nn.MSEOptions{}) }, tensor.ErrShape,
				[]string{"nn.MSE", "[3 4]", "[4 3]"}},
			{"MSE broadcastable shapes", func() { nn.MSE(z(3, 4), z(4), nn.MSEOptions{}) }, tensor.ErrShape,
				[]string{"nn.MSE", "[3 4]", "[4]"}},
			{"MSE integer input", func() { nn.MSE(idx([]int64{1}, 1), z(1), nn.MSEOptions{}) }, tensor.ErrDType,
				[]string{"nn.MSE", "int64"}},
			{"MSE reduction", func() { nn.MSE(z(2), z(2), nn.MSEOptions{Reduction: "avg"}) }, tensor.ErrArgument,
				[]string{"nn.MSE", `"avg"`}},
			{"MSE nil target", func() { nn.MSE(z(2), nil, nn.MSEOptions{}) }, tensor.ErrArgument,
				[]string{"nn.MSE", "target is nil"}},
			{"L1 shapes", func() { nn.L1(z(2, 3), z(3), nn.L1Options{}) }, tensor.ErrShape,
				[]string{"nn.L1", "[2 3]", "[3]"}},
			{"Huber shapes", func() { nn.Huber(z(5), z(6), nn.HuberOptions{}) }, tensor.ErrShape,
				[]string{"nn.Huber", "[5]", "[6]"}},
			{"Huber negative delta", func() { nn.Huber(z(5), z(5), nn.HuberOptions{Delta: -1}) }, tensor.ErrArgument,
				[]string{"nn.Huber", "delta -1"}},
			{"SmoothL1 shapes", func() { nn.SmoothL1(z(2, 2), z(4), nn.SmoothL1Options{}) }, tensor.ErrShape,
				[]string{"nn.SmoothL1", "[2 2]", "[4]"}},
			{"SmoothL1 negative beta", func() { nn.SmoothL1(z(5), z(5), nn.SmoothL1Options{Beta: &neg}) },
				tensor.ErrArgument, []string{"nn.SmoothL1", "beta -1"}},
			{"KLDiv shapes", func() { nn.KLDiv(z(2, 3), z(3, 2), nn.KLDivOptions{}) }, tensor.ErrShape,
				[]string{"nn.KLDiv", "[2 3]", "[3 2]"}},
			{"KLDiv reduction", func() { nn.KLDiv(z(2), z(2), nn.KLDivOptions{Reduction: "batch"}) }, tensor.ErrArgument,
				[]string{"nn.KLDiv", "batchmean"}},
			{"MSE batchmean", func() { nn.MSE(z(2), z(2), nn.MSEOptions{Reduction: "batchmean"}) }, tensor.ErrArgument,
				[]string{"nn.MSE", `"batchmean"`}},
			{"BinaryCrossEntropy shapes", func() { nn.BinaryCrossEntropy(half(4, 1), z(4), nn.BinaryCrossEntropyOptions{}) },
				tensor.ErrShape, []string{"nn.BinaryCrossEntropy", "[4 1]", "[4]"}},
			{"BinaryCrossEntropy integer target", func() {
				nn.BinaryCrossEntropy(half(2), idx([]int64{0, 1}, 2), nn.BinaryCrossEntropyOptions{})
			}, tensor.ErrDType, []string{"nn.BinaryCrossEntropy", "target", "int64"}},
			{"BinaryCrossEntropy weight", func() {
				nn.BinaryCrossEntropy(half(2, 3), z(2, 3), nn.BinaryCrossEntropyOptions{Weight: z(2)})
			}, tensor.ErrShape, []string{"nn.BinaryCrossEntropy", "weight [2]", "[2 3]"}},
			{"BCEWithLogits shapes", func() { nn.BCEWithLogits(z(3, 2), z(2, 3), nn.BCEWithLogitsOptions{}) },
				tensor.ErrShape, []string{"nn.BCEWithLogits", "[3 2]", "[2 3]"}},
			{"BCEWithLogits positive weight", func() {
				nn.BCEWithLogits(z(3, 2), z(3, 2), nn.BCEWithLogitsOptions{PosWeight: z(3)})
			}, tensor.ErrShape, []string{"nn.BCEWithLogits", "positive weight [3]", "[3 2]"}},
			{"BCEWithLogits weight larger than logits", func() {
				nn.BCEWithLogits(z(2), z(2), nn.BCEWithLogitsOptions{Weight: z(3, 2)})
			}, tensor.ErrShape, []string{"nn.BCEWithLogits", "weight [3 2]", "[2]"}},
			{"NLL target shape", func() { nn.NLL(z(4, 3), idx([]int64{0, 1, 2}, 3), nn.NLLOptions{}) }, tensor.ErrShape,
				[]string{"nn.NLL", "target [3]", "[4 3]", "want [4]"}},
			{"NLL float target", func() { nn.NLL(z(4, 3), z(4), nn.NLLOptions{}) }, tensor.ErrDType,
				[]string{"nn.NLL", "target [4]", "float32"}},
			{"NLL 0-d input", func() { nn.NLL(z(), idx([]int64{0}), nn.NLLOptions{}) }, tensor.ErrShape,
				[]string{"nn.NLL", "0-d"}},
			{"NLL weight", func() { nn.NLL(z(4, 3), idx([]int64{0, 1, 2, 0}, 4), nn.NLLOptions{Weight: z(4)}) },
				tensor.ErrShape, []string{"nn.NLL", "weights [4]", "3 classes", "[4 3]"}},
			{"CrossEntropy target shape", func() {
				nn.CrossEntropy(z(4, 3), idx([]int64{0, 1, 2}, 3), nn.CrossEntropyOptions{})
			}, tensor.ErrShape, []string{"CrossEntropy", "[3]", "[4 3]"}},
			{"CosineEmbedding shapes", func() { nn.CosineEmbedding(z(4, 3), z(4, 2), z(4), nn.CosineEmbeddingOptions{}) },
				tensor.ErrShape, []string{"nn.CosineEmbedding", "[4 3]", "[4 2]"}},
			{"CosineEmbedding labels", func() { nn.CosineEmbedding(z(4, 3), z(4, 3), z(3), nn.CosineEmbeddingOptions{}) },
				tensor.ErrShape, []string{"nn.CosineEmbedding", "y [3]", "[4 3]", "want [4]"}},
			{"CosineEmbedding rank", func() {
				nn.CosineEmbedding(z(2, 4, 3), z(2, 4, 3), z(2, 4), nn.CosineEmbeddingOptions{})
			}, tensor.ErrShape, []string{"nn.CosineEmbedding", "[2 4 3]"}},
			{"MarginRanking shapes", func() { nn.MarginRanking(z(4), z(4), z(5), nn.MarginRankingOptions{}) },
				tensor.ErrShape, []string{"nn.MarginRanking", "[4]", "y [5]"}},
			{"TripletMargin shapes", func() { nn.TripletMargin(z(2, 3), z(2, 3), z(2, 4), nn.TripletMarginOptions{}) },
				tensor.ErrShape, []string{"nn.TripletMargin", "[2 3]", "negative [2 4]"}},
			{"TripletMargin rank", func() { nn.TripletMargin(z(1, 2, 3), z(1, 2, 3), z(1, 2, 3), nn.TripletMarginOptions{}) },
				tensor.ErrShape, []string{"nn.TripletMargin", "[1 2 3]"}},
			{"TripletMargin negative p", func() { nn.TripletMargin(z(3), z(3), z(3), nn.TripletMarginOptions{P: -1}) },
				tensor.ErrArgument, []string{"nn.TripletMargin", "P -1"}},
			{"CTC reduction", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), []int{4, 4}, []int{1, 1}, nn.CTCOptions{Reduction: "batchmean"})
			}, tensor.ErrArgument, []string{"nn.CTC", `"batchmean"`}},
			{"CTC rank", func() { nn.CTC(z(4, 3), idx([]int64{1}, 1, 1), []int{4}, []int{1}, nn.CTCOptions{}) },
				tensor.ErrShape, []string{"CTCLoss", "targets [1 1]", "[4 3]", "want [S]"}},
			{"CTC 4-d", func() { nn.CTC(z(4, 1, 1, 3), idx([]int64{1}, 1), []int{4}, []int{1}, nn.CTCOptions{}) },
				tensor.ErrShape, []string{"CTCLoss", "[4 1 1 3]"}},
			{"CTC length count", func() { nn.CTC(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), []int{4}, []int{1, 1}, nn.CTCOptions{}) },
				tensor.ErrShape, []string{"CTCLoss", "1 input lengths", "[4 2 3]", "want 2"}},
			{"CTC padded rows", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 2, 1}, 3, 1), []int{4, 4}, []int{1, 1}, nn.CTCOptions{})
			}, tensor.ErrShape, []string{"CTCLoss", "targets [3 1]", "[4 2 3]"}},
			{"CTC concatenated size", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 2, 1}, 3), []int{4, 4}, []int{1, 1}, nn.CTCOptions{})
			}, tensor.ErrShape, []string{"CTCLoss", "targets [3]", "2 labels"}},
			{"CTC input length", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), []int{5, 4}, []int{1, 1}, nn.CTCOptions{})
			}, tensor.ErrArgument, []string{"CTCLoss", "input length 5", "[4 2 3]"}},
			{"CTC target length", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), []int{4, 4}, []int{1, 2}, nn.CTCOptions{})
			}, tensor.ErrArgument, []string{"CTCLoss", "target length 2", "[2 1]"}},
			{"CTC negative target length", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), []int{4, 4}, []int{1, -1}, nn.CTCOptions{})
			}, tensor.ErrArgument, []string{"CTCLoss", "target length -1"}},
			{"CTC blank", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), []int{4, 4}, []int{1, 1}, nn.CTCOptions{Blank: 3})
			}, tensor.ErrArgument, []string{"CTCLoss", "blank 3", "[4 2 3]"}},
			{"CTC label is blank", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{1, 0}, 2, 1), []int{4, 4}, []int{1, 1}, nn.CTCOptions{})
			}, tensor.ErrArgument, []string{"CTCLoss", "sample 1 is 0", "blank 0"}},
			{"CTC label out of range", func() {
				nn.CTC(z(4, 2, 3), idx([]int64{3, 1}, 2, 1), []int{4, 4}, []int{1, 1}, nn.CTCOptions{})
			}, tensor.ErrArgument, []string{"CTCLoss", "sample 0 is 3", "[0, 3)"}},
			{"CTC float targets", func() { nn.CTC(z(4, 2, 3), z(2, 1), []int{4, 4}, []int{1, 1}, nn.CTCOptions{}) },
				tensor.ErrDType, []string{"CTCLoss", "targets [2 1]", "float32"}},
			{"CTC integer log-probabilities", func() {
				nn.CTC(idx(make([]int64, 6), 2, 1, 3), idx([]int64{1}, 1, 1), []int{2}, []int{1}, nn.CTCOptions{})
			}, tensor.ErrDType, []string{"CTCLoss", "[2 1 3]", "int64"}},
			{"CTCTensorLengths float lengths", func() {
				nn.CTCTensorLengths(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), z(2), idx([]int64{1, 1}, 2), nn.CTCOptions{})
			}, tensor.ErrDType, []string{"nn.CTC", "input lengths [2]", "float32"}},
			{"CTCTensorLengths 2-D lengths", func() {
				nn.CTCTensorLengths(z(4, 2, 3), idx([]int64{1, 2}, 2, 1), idx([]int64{4, 4}, 2), idx([]int64{1, 1}, 1, 2),
					nn.CTCOptions{})
			}, tensor.ErrShape, []string{"nn.CTC", "target lengths [1 2]"}},
		}
		for _, c := range cases {
			err := tensor.Try(c.fn)
			var te *tensor.Error
			if !errors.As(err, &te) || !errors.Is(err, c.kind) {
				t.Errorf("%s: error %v, want a *tensor.Error wrapping %v", c.name, err, c.kind)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: message %q does not mention %q", c.name, err, w)
				}
			}
		}
	})
}

// TestNLLTargetOutOfRange checks that NLL's class indices outside [0, C)
// (other than the ignore index) are reported by the device at the next
// read, as data-dependent failures are, and that negative ones do not
// silently count from the end.
func TestNLLTargetOutOfRange(t *testing.T) {
	for _, target := range [][]int64{{0, 3, 1}, {0, -1, 1}, {-7, 0, 1}} {
		for _, dev := range testutil.FreshDevices(t) {
			tensor.Scope(func() {
				lp := tensor.Zeros(dev.Autodiff(), 3, 3).RequireGrad()
				y := nn.NLL(lp, tensor.FromInt64s(dev, target), nn.NLLOptions{})
				err := tensor.Try(func() { y.Item() })
				if !errors.Is(err, tensor.ErrDeviceFailed) || !strings.Contains(err.Error(), "out of range") {
					t.Errorf("%s, target %v: error %v, want a device failure for an index out of range", dev, target, err)
				}
			})
		}
	}
}

package nn_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestCTCByHand checks CTC against likelihoods counted by hand over the
// alignments of uniform two-class log-probabilities (blank 0, label 1):
// each alignment of T frames has probability 2^−T.
func TestCTCByHand(t *testing.T) {
	cases := []struct {
		name      string
		frames    int
		labels    []int64
		alignable int // alignments that collapse to labels
	}{
		{"one frame one label", 1, []int64{1}, 1},
		{"two frames one label", 2, []int64{1}, 3},           // 11, 1-, -1
		{"repeat needs a blank", 3, []int64{1, 1}, 1},        // 1-1
		{"repeat cannot fit", 2, []int64{1, 1}, 0},           // infinite loss
		{"empty target", 3, []int64{}, 1},                    // ---
		{"repeat with room", 4, []int64{1, 1}, 5},            // 1-11 11-1 1--1 -1-1 1-1-
		{"one label three frames", 3, []int64{1}, 6},         // 111 11- 1-- -11 --1 -1-
		{"three labels four frames", 4, []int64{1, 1, 1}, 0}, // needs 5
	}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, c := range cases {
			lp := tensor.Full(dev, math.Log(0.5), c.frames, 1, 2)
			targets := tensor.FromInt64s(dev, append(c.labels, 1), len(c.labels)+1).Reshape(1, len(c.labels)+1)
			got := nn.CTC(lp, targets, []int{c.frames}, []int{len(c.labels)}, nn.CTCOptions{Reduction: "sum"}).Item()
			want := math.Inf(1)
			if c.alignable > 0 {
				want = -math.Log(float64(c.alignable) / math.Pow(2, float64(c.frames)))
			}
			if math.Abs(got-want) > 1e-6 || math.IsInf(want, 1) != math.IsInf(got, 1) {
				t.Errorf("%s: loss %v, want %v", c.name, got, want)
			}
		}
	})
}

// TestCTCIsOneNode checks that CTC with reduction "none" records a single
// "ctc_loss" node over the log-probabilities, and nothing without
// gradients.
func TestCTCIsOneNode(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		targets := tensor.FromInt64s(dev, []int64{1, 2}, 2, 1)
		lp := tensor.Zeros(dev.Autodiff(), 3, 2, 3).RequireGrad()
		out := nn.CTC(lp, targets, []int{3, 3}, []int{1, 1}, nn.CTCOptions{Reduction: "none", Blank: 0})
		n := out.Node()
		if n == nil || n.Op != "ctc_loss" || len(n.Inputs) != 2 || n.Inputs[0] != lp.Node() {
			t.Fatalf("node %+v, want one ctc_loss node over the log-probabilities", n)
		}
		if got := nn.CTC(tensor.Zeros(dev, 3, 2, 3), targets, []int{3, 3}, []int{1, 1}, nn.CTCOptions{}); got.Node() != nil {
			t.Errorf("CTC without gradients recorded %s", got.Node().Op)
		}
	})
}

// TestCTCUnbatched checks that [T, C] log-probabilities with [S] targets
// give the 0-d loss of the same sample batched alone, and its gradient.
func TestCTCUnbatched(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := testutil.RandFloat64(dev.Autodiff(), 3, -2, 2, 5, 4).LogSoftmax(1)
		for _, r := range []string{"mean", "sum", "none"} {
			a := x.Detach().RequireGrad()
			b := x.Detach().RequireGrad()
			// The padded row holds a label past the target length: unused.
			single := nn.CTC(a, tensor.FromInt64s(dev, []int64{3, 1, 3}), []int{4}, []int{2}, nn.CTCOptions{Reduction: r})
			batched := nn.CTC(b.Unsqueeze(1), tensor.FromInt64s(dev, []int64{3, 1}, 1, 2), []int{4}, []int{2},
				nn.CTCOptions{Reduction: r})
			if len(single.Shape()) != 0 {
				t.Errorf("%s: unbatched loss has shape %v, want 0-d", r, single.Shape())
			}
			if got, want := single.Item(), batched.Sum().Item(); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s: unbatched loss %v, batched %v", r, got, want)
			}
			ga := single.Backward().Get(a).Float64s()
			gb := batched.Sum().Backward().Get(b).Float64s()
			for i := range ga {
				if math.Abs(ga[i]-gb[i]) > 1e-12 {
					t.Fatalf("%s: gradient %d is %v unbatched, %v batched", r, i, ga[i], gb[i])
				}
			}
		}
	})
}

// TestCTCMeanDividesByTargetLength checks PyTorch's "mean": each loss over
// its target length (an empty target counting as 1), averaged.
func TestCTCMeanDividesByTargetLength(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		lp := testutil.RandFloat64(dev, 4, -2, 2, 6, 3, 4).LogSoftmax(2)
		targets := tensor.FromInt64s(dev, []int64{1, 2, 3, 2, 2, 2, 0, 0, 0}, 3, 3)
		in, tgt := []int{6, 5, 4}, []int{3, 1, 0}
		none := nn.CTC(lp, targets, in, tgt, nn.CTCOptions{Reduction: "none"}).Float64s()
		want := (none[0]/3 + none[1]/1 + none[2]/1) / 3
		if got := nn.CTC(lp, targets, in, tgt, nn.CTCOptions{}).Item(); math.Abs(got-want) > 1e-12 {
			t.Errorf("mean %v, want %v", got, want)
		}
	})
}

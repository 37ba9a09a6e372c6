package metrics_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

func TestSegmentationFixtures(t *testing.T) {
	fx := testutil.LoadFixtures(t, "metrics2.json")
	for _, tc := range []struct {
		name    string
		classes int
		ignore  int64
	}{
		{"seg_logits", 5, 255},
		{"seg_indices", 3, -1},
		{"seg_binary", 2, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fx[tc.name]
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				out, tgt := c["outputs"].Tensor(dev), c["target"].Tensor(dev)
				for _, avg := range []metrics.Average{metrics.Macro, metrics.Micro} {
					dice, iou := metrics.NewDice(tc.classes, avg), metrics.NewIoU(tc.classes, avg)
					dice.IgnoreIndex, iou.IgnoreIndex = tc.ignore, tc.ignore
					feedHalves(t, dice, out, tgt)
					feedHalves(t, iou, out, tgt)
					wantDice, wantIoU := fixtureValue(t, c, "dice_macro"), fixtureValue(t, c, "miou")
					if avg == metrics.Micro {
						wantDice, wantIoU = fixtureValue(t, c, "dice_micro"), fixtureValue(t, c, "iou_micro")
					}
					if !near(dice.Value(), wantDice) || !near(iou.Value(), wantIoU) {
						t.Errorf("%s, %s = %v, %v; want %v, %v", dice.Name(), iou.Name(), dice.Value(), iou.Value(),
							wantDice, wantIoU)
					}
					for k, want := range c["dice"].Float64s() {
						if got := dice.Values()[fmt.Sprintf("dice_%d", k)]; !near(got, want) || !near(dice.PerClass()[k], want) {
							t.Errorf("dice of class %d = %v, want %v", k, got, want)
						}
					}
					for k, want := range c["iou"].Float64s() {
						if got := iou.Values()[fmt.Sprintf("iou_%d", k)]; !near(got, want) || !near(iou.PerClass()[k], want) {
							t.Errorf("iou of class %d = %v, want %v", k, got, want)
						}
					}
				}
			})
		})
	}
}

// Hand-checked: a class absent from targets and predictions is NaN and
// left out of the mean; ignored pixels count nowhere; a transposed view
// of scores gives the counts of its contiguous copy.
func TestSegmentationByHand(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		// pred 0 0 1 1 | target 0 1 1 9(ignored); class 2 absent
		pred := tensor.FromInt64s(dev, []int64{0, 0, 1, 1}, 1, 4)
		tgt := tensor.FromInt64s(dev, []int64{0, 1, 1, 9}, 1, 4)
		iou := metrics.NewIoU(3, metrics.Macro)
		iou.IgnoreIndex = 9
		if err := iou.Update(pred, tgt); err != nil {
			t.Fatal(err)
		}
		per := iou.PerClass()
		if !near(per[0], 0.5) || !near(per[1], 0.5) || !math.IsNaN(per[2]) || !near(iou.Value(), 0.5) {
			t.Errorf("IoU per class %v, mIoU %v; want [0.5 0.5 NaN], 0.5", per, iou.Value())
		}
		dice := metrics.NewDice(3, metrics.Micro)
		dice.IgnoreIndex = 9
		_ = dice.Update(pred, tgt)
		if !near(dice.Value(), 2.0/3) {
			t.Errorf("micro Dice %v, want 2/3 (the accuracy over kept pixels)", dice.Value())
		}

		scores := testutil.RandFloat64(dev, 4, -1, 1, 2, 3, 5, 4) // [N, C, W, H]
		view := scores.Transpose(2, 3)                            // [N, C, H, W], not contiguous
		target := tensor.FromInt64s(dev, make([]int64, 2*4*5), 2, 4, 5)
		a, b := metrics.NewIoU(3, metrics.Macro), metrics.NewIoU(3, metrics.Macro)
		_ = a.Update(view, target)
		_ = b.Update(view.Contiguous(), target)
		if fmt.Sprint(a.State()) != fmt.Sprint(b.State()) {
			t.Errorf("view counts %v, contiguous %v", a.State(), b.State())
		}
		// a one-channel binary head [N, 1, H, W] against masks [N, H, W]
		probs := c1(dev)
		masks := tensor.FromInt64s(dev, []int64{1, 0, 0, 1, 1, 1}, 1, 2, 3)
		bin := metrics.NewIoU(2, metrics.Macro)
		if err := bin.Update(probs, masks); err != nil {
			t.Fatal(err)
		}
		// predicted 1 0 1 1 0 1: class 0 IoU 1/3, class 1 IoU 3/5
		if per := bin.PerClass(); !near(per[0], 1.0/3) || !near(per[1], 3.0/5) {
			t.Errorf("one-channel head: per-class IoU %v, want [1/3 3/5]", per)
		}
		empty := metrics.NewDice(2, metrics.Macro)
		if err := empty.Update(tensor.Zeros(dev, 0, 2, 3), tensor.ZerosOf(dev, tensor.Int64, 0, 3)); err != nil {
			t.Errorf("empty batch: %v", err)
		}
		if !math.IsNaN(empty.Value()) {
			t.Errorf("Dice after an empty batch = %v, want NaN", empty.Value())
		}

		for _, bad := range []struct {
			name string
			o, t *tensor.Tensor
			text string
		}{
			{"wrong class count", tensor.Zeros(dev, 2, 4, 3), tensor.ZerosOf(dev, tensor.Int64, 2, 3), "[N, 3, …]"},
			{"float scores for 3 classes", tensor.Zeros(dev, 2, 3), tensor.ZerosOf(dev, tensor.Int64, 2, 3), "binary scores"},
			{"target out of range", tensor.ZerosOf(dev, tensor.Int64, 2), tensor.FromInt64s(dev, []int64{0, 3}, 2), "target class 3"},
			{"prediction out of range", tensor.FromInt64s(dev, []int64{0, 5}, 2), tensor.ZerosOf(dev, tensor.Int64, 2), "predicted class 5"},
			{"fractional target", tensor.ZerosOf(dev, tensor.Int64, 2), tensor.Full(dev, 0.5, 2), "not a class index"},
		} {
			m := metrics.NewIoU(3, metrics.Macro)
			if err := m.Update(bad.o, bad.t); !errors.Is(err, metrics.ErrInput) || !strings.Contains(err.Error(), bad.text) {
				t.Errorf("%s: %v, want ErrInput mentioning %q", bad.name, err, bad.text)
			}
		}
	})
	defer func() {
		if recover() == nil {
			t.Error("NewDice(1, …) did not panic")
		}
	}()
	metrics.NewDice(1, metrics.Macro)
}

// The new metrics are Summable: states of two metrics fed parts of the
// batches add up to the state of one fed all of them, SetState checks the
// length, and the State of a fresh metric is zeros of the fixed length.
func TestImageSegmentSummable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	imgs := func(dev tensor.Device, n int) (*tensor.Tensor, *tensor.Tensor) {
		x := testutil.RandFloat64(dev, rng.Uint64(), 0, 1, n, 2, 12, 11)
		return x, x.MulScalar(0.9).AddScalar(0.05)
	}
	segs := func(dev tensor.Device, n int) (*tensor.Tensor, *tensor.Tensor) {
		tg := make([]int64, n*6)
		for i := range tg {
			tg[i] = int64(rng.IntN(4)) - 1 // -1 ignored
		}
		return testutil.RandFloat64(dev, rng.Uint64(), 0, 1, n, 3, 6), tensor.FromInt64s(dev, tg, n, 6)
	}
	labels := func(dev tensor.Device, n int) (*tensor.Tensor, *tensor.Tensor) {
		tg := make([]float64, n*5)
		for i := range tg {
			tg[i] = float64(rng.IntN(2))
		}
		return testutil.RandFloat64(dev, rng.Uint64(), 0, 1, n, 5), tensor.FromFloat64s(dev, tg, n, 5)
	}
	for _, tc := range []struct {
		mk    func() metrics.Summable
		batch func(dev tensor.Device, n int) (*tensor.Tensor, *tensor.Tensor)
		state int
	}{
		{func() metrics.Summable { return metrics.NewPSNR(1) }, imgs, 2},
		{func() metrics.Summable { return metrics.NewSSIM(1) }, imgs, 2},
		{func() metrics.Summable { return metrics.NewDice(3, metrics.Macro) }, segs, 9},
		{func() metrics.Summable { return metrics.NewIoU(3, metrics.Micro) }, segs, 9},
		{func() metrics.Summable { return metrics.NewPrecisionAtK(2) }, labels, 3},
		{func() metrics.Summable { return metrics.NewRecallAtK(2) }, labels, 3},
	} {
		testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
			all, a, b := tc.mk(), tc.mk(), tc.mk()
			if s := a.State(); len(s) != tc.state || s[0] != 0 {
				t.Errorf("%s: fresh State %v, want %d zeros", a.Name(), s, tc.state)
			}
			for i := range 5 {
				o, g := tc.batch(dev, 1+i%3)
				_ = all.Update(o, g)
				if i%2 == 0 {
					_ = a.Update(o, g)
				} else {
					_ = b.Update(o, g)
				}
			}
			d := tc.mk()
			if err := d.SetState(sum(a.State(), b.State())); err != nil {
				t.Fatal(err)
			}
			checkSameValues(t, all.Name(), d, all)
			if err := d.SetState(make([]float64, tc.state+1)); !errors.Is(err, metrics.ErrState) {
				t.Errorf("%s: SetState of the wrong length: %v", d.Name(), err)
			}
			d.Reset()
			if !math.IsNaN(d.Value()) {
				t.Errorf("%s after Reset = %v, want NaN", d.Name(), d.Value())
			}
		})
	}
}

// c1 is a [1, 1, 2, 3] map of probabilities.
func c1(dev tensor.Device) *tensor.Tensor {
	return tensor.FromFloat32s(dev, []float32{0.9, 0.2, 0.7, 0.6, 0.4, 0.8}, 1, 1, 2, 3)
}

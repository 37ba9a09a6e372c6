package optim_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

func TestGradScalerStepMatchesUnscaledStep(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		run := func(scaler *optim.GradScaler) []float64 {
			adev := dev.Autodiff()
			adev.Seed(3)
			model := nn.NewLinear(adev, 4, 2)
			defer nn.Release(model)
			opt := optim.NewSGD(optim.SGDConfig{LR: 0.1})
			x := tensor.FromFloat64s(adev, []float64{1, -2, 0.5, 3, 0, 1, -1, 2}, 2, 4)
			defer x.Release()
			tensor.Scope(func() {
				loss := model.Forward(x).Square().Mean()
				if scaler == nil {
					opt.Step(model, loss.Backward())
				} else if !scaler.Step(opt, model, scaler.ScaleLoss(loss).Backward()) {
					t.Fatal("finite step skipped")
				}
			})
			return model.Weight.Float64s()
		}
		want := run(nil)
		got := run(optim.NewGradScaler(optim.GradScalerConfig{InitScale: 1024}))
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-6 {
				t.Fatalf("weight %d: %v with scaling, %v without", i, got[i], want[i])
			}
		}
	})
}

func TestGradScalerSkipsNonFiniteAndAdjustsScale(t *testing.T) {
	dev := tensor.CPU().Autodiff()
	model := nn.NewLinear(dev, 3, 1)
	defer nn.Release(model)
	opt := optim.NewSGD(optim.SGDConfig{LR: 0.1})
	s := optim.NewGradScaler(optim.GradScalerConfig{InitScale: 8, GrowthInterval: 2})
	before := model.Weight.Float64s()
	x := tensor.FromFloat64s(dev, []float64{1, 2, 3}, 1, 3)
	defer x.Release()
	tensor.Scope(func() {
		loss := model.Forward(x).Sum().MulScalar(math.Inf(1))
		if s.Step(opt, model, s.ScaleLoss(loss).Backward()) {
			t.Fatal("step with infinite gradients was taken")
		}
	})
	if after := model.Weight.Float64s(); after[0] != before[0] || s.Scale() != 4 {
		t.Fatalf("after an overflow: weights %v (were %v), scale %v (want 4)", after, before, s.Scale())
	}
	for range 2 {
		tensor.Scope(func() {
			loss := model.Forward(x).Sum()
			if !s.Step(opt, model, s.ScaleLoss(loss).Backward()) {
				t.Fatal("finite step skipped")
			}
		})
	}
	if s.Scale() != 8 {
		t.Fatalf("scale %v after 2 good steps with GrowthInterval 2, want 8", s.Scale())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("BackoffFactor 2 accepted")
			}
		}()
		optim.NewGradScaler(optim.GradScalerConfig{BackoffFactor: 2})
	}()
}

package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestAdamStepsMatchesAdamStep requires the multi-tensor update to give
// AdamStep's results bit for bit, over parameters of many sizes (one of
// them spanning several of the kernel's chunks, several sharing one),
// three steps (the first allocates the moments), with the variants of the
// update: decoupled or L2 weight decay, maximize, a zero learning rate.
func TestAdamStepsMatchesAdamStep(t *testing.T) {
	sizes := [][]int{{3}, {70000}, {5, 7}, {1}, {300, 130}, {2, 2, 2}}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, v := range []struct {
			name string
			cfg  tensor.AdamConfig
		}{
			{"adamw", tensor.AdamConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Decoupled: true}},
			{"adam l2 maximize", tensor.AdamConfig{LR: 3e-3, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.01, Maximize: true}},
			{"zero lr", tensor.AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}},
		} {
			t.Run(v.name+" "+dt.String(), func(t *testing.T) {
				forEachDevice(t, func(t *testing.T, dev tensor.Device) {
					run := func(multi bool) [][]float64 {
						var ps []*tensor.Tensor
						for i, s := range sizes {
							ps = append(ps, randFloat64(dev, uint64(i+1), -1, 1, s...).To(dt))
						}
						states := make([]tensor.AdamState, len(ps))
						for step := 1; step <= 3; step++ {
							gs := make([]*tensor.Tensor, len(ps))
							cfgs := make([]tensor.AdamConfig, len(ps))
							for i, p := range ps {
								gs[i] = randFloat64(dev, uint64(10*step+i), -1, 1, p.Shape()...).To(dt)
								cfgs[i] = v.cfg
								cfgs[i].Step, cfgs[i].InPlace = step, true
							}
							if multi {
								states = tensor.AdamSteps(ps, gs, states, cfgs)
								continue
							}
							for i, p := range ps {
								_, states[i] = tensor.AdamStep(p, gs[i], states[i], cfgs[i])
							}
						}
						var out [][]float64
						for i, p := range ps {
							out = append(out, p.Float64s(), states[i].ExpAvg.Float64s(), states[i].ExpAvgSq.Float64s())
						}
						return out
					}
					want, got := run(false), run(true)
					for i := range want {
						for j := range want[i] {
							if got[i][j] != want[i][j] {
								t.Fatalf("result %d element %d: AdamSteps %v, AdamStep %v", i, j, got[i][j], want[i][j])
							}
						}
					}
				})
			})
		}
	}
}

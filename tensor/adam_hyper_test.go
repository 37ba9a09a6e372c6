package tensor

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestAdamHyperFloat32 checks the scalars of a float32 update: each a
// float32 value within a float32 rounding (relative 2⁻²⁴) of the float64
// update's, which keeps them exact; scalars outside float32's normal range
// are left as they are.
func TestAdamHyperFloat32(t *testing.T) {
	started := AdamState{ExpAvg: &Tensor{}}
	scalars := func(h backends.AdamHyper) []float64 {
		return []float64{h.Decay, h.WeightDecay, h.Beta1, h.Beta2, h.InvDenom, h.EpsTerm}
	}
	for _, c := range []struct {
		name string
		cfg  AdamConfig
		kept []bool // scalars (as scalars lists them) that must keep their float64 value
	}{
		{"adamw", AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true, Step: 7}, nil},
		{"adam with L2", AdamConfig{LR: 3e-4, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, Step: 1}, nil},
		{"late step", AdamConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 100000}, nil},
		{"scale beyond float32", AdamConfig{LR: 1e-45, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 3},
			[]bool{false, false, false, false, true, false}},
		{"subnormal weight decay", AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-40, Step: 3},
			[]bool{false, true, false, false, false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h64, h32 := adamHyper("test", c.cfg, started, Float64), adamHyper("test", c.cfg, started, Float32)
			if h64.MovesParam != h32.MovesParam || h64.First != h32.First || h64.Maximize != h32.Maximize {
				t.Fatalf("flags differ: float64 %+v, float32 %+v", h64, h32)
			}
			want, got := scalars(h64), scalars(h32)
			for i := range got {
				kept := c.kept != nil && c.kept[i]
				switch {
				case kept && got[i] != want[i]:
					t.Errorf("scalar %d = %g, want it kept at %g", i, got[i], want[i])
				case !kept && float64(float32(got[i])) != got[i]:
					t.Errorf("scalar %d = %g is not a float32 value", i, got[i])
				case math.Abs(got[i]-want[i]) > math.Abs(want[i])*0x1p-24:
					t.Errorf("scalar %d = %g, more than a float32 rounding from %g", i, got[i], want[i])
				}
			}
		})
	}
}

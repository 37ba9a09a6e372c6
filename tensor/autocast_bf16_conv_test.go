package tensor

import (
	"math"
	"testing"
)

// TestAutocastBF16ConvRunsInFloat32 checks that on the CPU, whose fused
// convolutions take float32 but not bfloat16, a convolution on a BFloat16
// Autocast view runs as the float32 one does (autocastConvF32): a Float32
// result with the same bits, and the same gradients, as off the view; and
// that a grouped convolution, which does not take the fused path, still
// casts to bfloat16 as before.
func TestAutocastBF16ConvRunsInFloat32(t *testing.T) {
	run := func(dev Device, groups int) (y *Tensor, grads []*Tensor) {
		dev.Seed(3)
		x := Randn(dev, 5, 4, 9, 8).RequireGrad()
		w := Randn(dev, 6, 4/groups, 3, 3).RequireGrad()
		b := Randn(dev, 6).RequireGrad()
		y = Conv2d(x, w, b, ConvConfig{Padding: []int{1}, Groups: groups})
		g := y.Sum().Backward()
		return y, []*Tensor{g.Get(x), g.Get(w), g.Get(b)}
	}
	Scope(func() {
		want, wantG := run(CPU().Autodiff(), 1)
		got, gotG := run(CPU().Autocast(BFloat16).Autodiff(), 1)
		if got.DType() != Float32 {
			t.Fatalf("autocast convolution on the CPU: %s result, want float32", got.DType())
		}
		for i, pair := range [][2]*Tensor{{got, want}, {gotG[0], wantG[0]}, {gotG[1], wantG[1]}, {gotG[2], wantG[2]}} {
			a, e := pair[0].Float64s(), pair[1].Float64s()
			for j := range e {
				if math.Float64bits(a[j]) != math.Float64bits(e[j]) {
					t.Fatalf("result %d (output, then the gradients of x, w and b) element %d: %v on the autocast view, %v off it", i, j, a[j], e[j])
				}
			}
		}
		grouped, _ := run(CPU().Autocast(BFloat16).Autodiff(), 2)
		if grouped.DType() != BFloat16 {
			t.Errorf("grouped autocast convolution: %s result, want bfloat16 (cast, composed)", grouped.DType())
		}
	})
}

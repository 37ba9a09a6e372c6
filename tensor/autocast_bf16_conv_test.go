package tensor

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
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

// convBF16Recorder is the CPU backend with its bfloat16 autocast
// convolutions counted.
type convBF16Recorder struct {
	*cpu.Backend
	fwd, dx, dw int
}

func (r *convBF16Recorder) Conv2dBF16(out, x, w backends.View, g backends.ConvGeometry) {
	r.fwd++
	r.Backend.Conv2dBF16(out, x, w, g)
}

func (r *convBF16Recorder) Conv2dInputGradBF16(dx, dy, w backends.View, g backends.ConvGeometry) {
	r.dx++
	r.Backend.Conv2dInputGradBF16(dx, dy, w, g)
}

func (r *convBF16Recorder) Conv2dWeightGradBF16(dw, dy, x backends.View, g backends.ConvGeometry) {
	r.dw++
	r.Backend.Conv2dWeightGradBF16(dw, dy, x, g)
}

// TestAutocastBF16ConvUsesBF16Kernels checks that a convolution on a
// BFloat16 Autocast view of a backend with bfloat16 autocast convolutions
// (bf16Conver) runs its forward pass and both gradients through them, once
// each, and that off the view, with groups, or in float64 it does not; and
// that its results are those of the backend's methods (the CPU's, checked
// against the definition in backends/cpu).
func TestAutocastBF16ConvUsesBF16Kernels(t *testing.T) {
	rec := &convBF16Recorder{Backend: cpu.New(2)}
	dev := Device{st: &deviceState{name: "cpu+recorder", info: rec.Info(), backend: rec}}
	run := func(dev Device, dt DType, groups int) *Tensor {
		dev.Seed(3)
		x := Randn(dev, 4, 64, 6, 6).To(dt).RequireGrad()
		w := Randn(dev, 64, 64/groups, 3, 3).To(dt).RequireGrad()
		y := Conv2d(x, w, nil, ConvConfig{Padding: []int{1}, Groups: groups})
		y.Sum().Backward()
		return y
	}
	Scope(func() {
		run(dev.Autodiff(), Float32, 1)
		run(dev.Autocast(BFloat16).Autodiff(), Float64, 1)
		run(dev.Autocast(BFloat16).Autodiff(), Float32, 2)
		if rec.fwd+rec.dx+rec.dw != 0 {
			t.Fatalf("off the view, in float64 or grouped: %d, %d, %d calls of the bfloat16 kernels", rec.fwd, rec.dx, rec.dw)
		}
		y := run(dev.Autocast(BFloat16).Autodiff(), Float32, 1)
		if y.DType() != Float32 || rec.fwd != 1 || rec.dx != 1 || rec.dw != 1 {
			t.Fatalf("autocast: %s result, %d, %d, %d calls of the forward and gradient kernels; want float32, one each",
				y.DType(), rec.fwd, rec.dx, rec.dw)
		}
	})
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
}

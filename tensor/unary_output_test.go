package tensor_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// TestGradFromOutput checks the backward of Exp, Tanh and Sigmoid, which
// the CPU (and the strict device over it) compute from the op's output
// (backends.UnaryOutputGrad): in float32, bit for bit g times the factor
// y, 1 − y² or y − y² of the output rounded once, and within the bounds
// UnaryGradOutput documents of g·f'(x) in float64, over inputs from −20
// to 20 where tanh and the sigmoid saturate. The fused device (no
// UnaryOutputGrad) takes UnaryGrad from x and must agree within the same
// bounds; so must LinearActivation's fused path with its unfused twin.
func TestGradFromOutput(t *testing.T) {
	xs := make([]float32, 0, 2000)
	for i := range 2000 {
		xs = append(xs, float32(-20+40*float64(i)/1999))
	}
	gs := make([]float32, len(xs))
	for i := range gs {
		gs[i] = float32(math.Sin(float64(i)) * 3)
	}
	ops := []struct {
		name string
		u    backends.UnaryOp
		f    func(*tensor.Tensor) *tensor.Tensor
	}{
		{"exp", backends.Exp, (*tensor.Tensor).Exp},
		{"tanh", backends.Tanh, (*tensor.Tensor).Tanh},
		{"sigmoid", backends.Sigmoid, (*tensor.Tensor).Sigmoid},
	}
	devs := map[string]tensor.Device{"cpu": tensor.CPU(), "cpu+fused": tensor.CPU().Fused()}
	if d, err := tensor.ParseDevice("strict"); err == nil {
		devs["strict"] = d
	}
	for dn, base := range devs {
		dev := base.Autodiff()
		_, fromY := dev.Backend().(backends.UnaryOutputGrad)
		if want := dn != "cpu+fused"; fromY != want {
			t.Fatalf("%s: UnaryOutputGrad %v, want %v", dn, fromY, want)
		}
		for _, op := range ops {
			tensor.Scope(func() {
				x := tensor.FromFloat32s(dev, xs, len(xs)).RequireGrad()
				g := tensor.FromFloat32s(dev, gs, len(gs))
				y := op.f(x)
				grad := y.BackwardWith(g).Get(x).Float32s()
				ys := y.Float32s()
				for i, v := range grad {
					xf, gf, yf := float64(xs[i]), float64(gs[i]), float64(ys[i])
					want := gf * backends.UnaryOps[op.u].DF(xf, 0, 0)
					// y carries its own error (≤ 1.34 ulp), which the factor
					// keeps: against g where 1 − y² or 1 − y is small, in
					// ulps of the result for exp
					tol := math.Abs(gf) * 0x1p-21
					if op.u == backends.Exp {
						tol = math.Abs(want) * 0x1p-21
					}
					if d := math.Abs(float64(v) - want); !(d <= tol) {
						t.Fatalf("%s %s at x = %g: %g, want %g (off %g, bound %g)", dn, op.name, xf, v, want, d, tol)
					}
					if !fromY {
						continue
					}
					var d float32
					switch op.u {
					case backends.Exp:
						d = ys[i]
					case backends.Tanh:
						d = float32(1 - yf*yf)
					default:
						d = float32(yf - yf*yf)
					}
					if e := gs[i] * d; math.Float32bits(v) != math.Float32bits(e) {
						t.Fatalf("%s %s at x = %g: %g, want g·factor(y) = %g", dn, op.name, xf, v, e)
					}
				}
			})
		}
	}
	// LinearActivation keeps the same gradients on its fused path
	dev := tensor.CPU().Autodiff()
	tensor.Scope(func() {
		x := randFloat64(dev, 1, -3, 3, 16, 8).To(tensor.Float32).RequireGrad()
		w := randFloat64(dev, 2, -1, 1, 12, 8).To(tensor.Float32).RequireGrad()
		b := randFloat64(dev, 3, -1, 1, 12).To(tensor.Float32).RequireGrad()
		g := randFloat64(dev, 4, -1, 1, 16, 12).To(tensor.Float32)
		for _, a := range []string{"tanh", "sigmoid"} {
			got := tensor.LinearActivation(x, w, b, a).BackwardWith(g)
			lin := tensor.Linear(x, w, b)
			want := map[string]*tensor.Tensor{"tanh": lin.Tanh(), "sigmoid": lin.Sigmoid()}[a].BackwardWith(g)
			for i, in := range []*tensor.Tensor{x, w, b} {
				gv, wv := got.Get(in).Float32s(), want.Get(in).Float32s()
				for j := range gv {
					if math.Float32bits(gv[j]) != math.Float32bits(wv[j]) {
						t.Fatalf("LinearActivation %s: gradient of input %d element %d: %g, unfused %g", a, i, j, gv[j], wv[j])
					}
				}
			}
		}
	})
}

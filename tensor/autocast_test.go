package tensor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

func TestAutocastLinearAndMatmul(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
			adev := dev.Autodiff()
			cdev := adev.Autocast(dt)
			xv := []float32{0.5, -1, 2, 0.25, 1.5, -0.75}
			wv := []float32{0.1, 0.2, -0.3, 0.4, -0.5, 0.6}
			w := tensor.FromFloat32s(adev, wv, 2, 3).RequireGrad() // float32 parameter
			// Reference: everything in float32.
			x32 := tensor.FromFloat32s(adev, xv, 2, 3)
			want := tensor.Linear(x32, w, nil)
			wantGrad := want.Sum().Backward().Get(w).Float64s()
			// Autocast: the input sits on the view, the weight does not.
			x := tensor.FromFloat32s(cdev, xv, 2, 3)
			y := tensor.Linear(x, w, nil)
			// A backend with a bfloat16 GEMM from float32 operands (the
			// CPU) multiplies float32 inputs as bfloat16 into a float32
			// result, as PyTorch's CPU autocast does; others cast.
			_, direct := dev.Backend().(interface{ MatmulBF16(out, x, y backends.View) })
			wantDT := dt
			if dt == tensor.BFloat16 && direct {
				wantDT = tensor.Float32
			}
			if y.DType() != wantDT {
				t.Fatalf("%s: Linear on an autocast view gave %s", dt, y.DType())
			}
			if d, ok := y.Device().AutocastDType(); !ok || d != dt {
				t.Fatalf("%s: result left the autocast view", dt)
			}
			z := y.Matmul(tensor.FromFloat32s(adev, []float32{1, 0, 0, 1}, 2, 2))
			if z.DType() != wantDT {
				t.Fatalf("%s: Matmul after autocast gave %s", dt, z.DType())
			}
			g := y.Sum().Backward().Get(w)
			if g == nil || g.DType() != tensor.Float32 {
				t.Fatalf("%s: float32 weight got gradient %v", dt, g)
			}
			tol := 1e-2
			for i, v := range g.Float64s() {
				if math.Abs(v-wantGrad[i]) > tol*(1+math.Abs(wantGrad[i])) {
					t.Fatalf("%s: grad %d = %v, float32 gives %v", dt, i, v, wantGrad[i])
				}
			}
			for i, v := range y.To(tensor.Float32).Float64s() {
				if w := want.Float64s()[i]; math.Abs(v-w) > tol*(1+math.Abs(w)) {
					t.Fatalf("%s: output %d = %v, float32 gives %v", dt, i, v, w)
				}
			}
		}
	})
}

func TestAutocastRejectsOtherDTypes(t *testing.T) {
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, tensor.ErrDType) {
			t.Fatalf("Autocast(Int64) panicked with %v, want ErrDType", err)
		}
	}()
	tensor.CPU().Autocast(tensor.Int64)
}

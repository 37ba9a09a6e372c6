package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAutocastBF16LinearBiasEpilogue checks that an autocast Linear with a
// bias, which the CPU backend computes with the bias added in the bfloat16
// GEMM's epilogue (MatmulBiasBF16), gives the same bits as the bfloat16
// product followed by the float32 addition of the bias, for inputs whose
// leading dimensions merge into one (the fused path), inputs whose do not
// and a strided bias (copied first).
func TestAutocastBF16LinearBiasEpilogue(t *testing.T) {
	if _, ok := CPU().Backend().(bf16LinearFuser); !ok {
		t.Fatal("the CPU backend does not offer MatmulBiasBF16")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	values := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	dev := CPU().Autocast(BFloat16)
	for _, c := range []struct {
		name string
		x    func() *Tensor
		bias func() *Tensor
	}{
		{"2-D", func() *Tensor { return FromFloat32s(dev, values(37*70), 37, 70) }, nil},
		{"3-D", func() *Tensor { return FromFloat32s(dev, values(3*29*70), 3, 29, 70) }, nil},
		{"3-D leading dimensions transposed", func() *Tensor {
			return FromFloat32s(dev, values(29*3*70), 29, 3, 70).Transpose(0, 1)
		}, nil},
		{"strided bias", func() *Tensor { return FromFloat32s(dev, values(37*70), 37, 70) }, func() *Tensor {
			return FromFloat32s(CPU(), values(2*45), 45, 2).Select(1, 1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			Scope(func() {
				x := c.x()
				w := FromFloat32s(CPU(), values(45*70), 45, 70)
				bias := FromFloat32s(CPU(), values(45), 45)
				if c.bias != nil {
					bias = c.bias()
				}
				mm, ok := autocastBF16(x, w, bias)
				if !ok {
					t.Fatal("autocastBF16: not taken")
				}
				got := Linear(x, w, bias).Float32s()
				wt := w.transposeView(0, 1)
				want := rawBinary("test", addOp, rawMatmulBF16("test", mm, x, wt), bias).Float32s()
				if len(got) != len(want) {
					t.Fatalf("%d outputs, want %d", len(got), len(want))
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("output %d = %v, want %v (product, then bias)", i, got[i], want[i])
					}
				}
			})
		})
	}
}

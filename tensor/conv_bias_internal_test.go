package tensor

import (
	"math"
	"testing"
)

// TestConv2dBiasFused checks that Conv2d with a bias takes the CPU's fused
// kernel (backends.ConvBiasFusion): the same bits as the convolution
// followed by adding the bias, without the second output-sized tensor the
// addition allocates, in float32 and float64.
func TestConv2dBiasFused(t *testing.T) {
	dev := CPU()
	for _, dt := range []DType{Float32, Float64} {
		x := attnRandom(dev, dt, 1, 16, 8, 13, 13)
		w := attnRandom(dev, dt, 2, 12, 8, 3, 3)
		b := attnRandom(dev, dt, 3, 12)
		var fused, composed []float64
		peak := func(fn func() *Tensor, dst *[]float64) int64 {
			var p int64
			Scope(func() {
				base := dev.MemoryStats().LiveBytes
				dev.st.peak.Store(dev.st.live.Load())
				*dst = fn().Float64s()
				p = dev.MemoryStats().PeakBytes - base
			})
			return p
		}
		pf := peak(func() *Tensor { return Conv2d(x, w, b, ConvConfig{}) }, &fused)
		pc := peak(func() *Tensor { return Conv2d(x, w, nil, ConvConfig{}).Add(b.Reshape(12, 1, 1)) }, &composed)
		for i := range fused {
			if math.Float64bits(fused[i]) != math.Float64bits(composed[i]) {
				t.Fatalf("%s: element %d = %v, want %v (the convolution plus the bias)", dt, i, fused[i], composed[i])
			}
		}
		out := int64(16*12*11*11) * int64(dt.Size())
		if pf >= pc || pf > out+out/2 {
			t.Errorf("%s: the biased convolution peaked at %d bytes, the composed one at %d: want one output (%d bytes)", dt, pf, pc, out)
		}
	}
}

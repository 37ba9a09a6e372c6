package onnx

import (
	"github.com/kiln-ml/kiln/tensor"
)

// Normalisations without a Kiln layer of their own, composed of tensor
// ops: LRN (AlexNet's local response normalisation across channels) and
// MeanVarianceNormalization.

func init() {
	ops["LRN"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		if x.Dims() < 3 {
			c.fail(tensor.ErrShape, "input %v must be [N, C, D1, …]", x.Shape())
		}
		size := int(c.attrInt("size", 0))
		if size <= 0 {
			c.fail(tensor.ErrArgument, "size %d must be positive", size)
		}
		alpha, beta, bias := c.attrFloat("alpha", 1e-4), c.attrFloat("beta", 0.75), c.attrFloat("bias", 1)
		// The window over channels runs from c − ⌊(size−1)/2⌋ to
		// c + ⌈(size−1)/2⌉; zero padding stands for channels outside.
		lo, hi := (size-1)/2, size-1-(size-1)/2
		pads := make([]int, 0, 2*(x.Dims()-1))
		for range x.Dims() - 2 {
			pads = append(pads, 0, 0)
		}
		pads = append(pads, lo, hi)
		sq := x.Square().Pad(pads, "constant", 0)
		ch := x.Dim(1)
		sum := sq.Narrow(1, 0, ch)
		for k := 1; k < size; k++ {
			sum = sum.Add(sq.Narrow(1, k, ch))
		}
		den := sum.MulScalar(alpha / float64(size)).AddScalar(bias).PowScalar(beta)
		return outs(x.Div(den))
	}}
	ops["MeanVarianceNormalization"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		axes := []int{0, 2, 3}
		if a := c.attrInts("axes"); a != nil {
			axes = axes[:0]
			for _, v := range a {
				axes = append(axes, c.axis(v, x.Dims()))
			}
		}
		for _, a := range axes {
			if a >= x.Dims() {
				c.fail(tensor.ErrArgument, "axis %d is out of range for input %v", a, x.Shape())
			}
		}
		// ONNX's function body: (x − E[x]) / (√(E[x²] − E[x]²) + 1e-9).
		mean := x.MeanKeep(axes...)
		variance := x.Square().MeanKeep(axes...).Sub(mean.Square())
		return outs(x.Sub(mean).Div(variance.Sqrt().AddScalar(1e-9)))
	}}
}

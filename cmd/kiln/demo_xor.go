package main

import (
	"fmt"
	"io"
	"time"

	"github.com/kiln-ml/kiln/tensor"
)

// xorDemo trains a two-layer perceptron, written directly with tensors, on
// noisy XOR data (four Gaussian blobs) for steps steps on dev and prints
// the loss as it falls (`kiln demo -xor`).
func xorDemo(out io.Writer, dev tensor.Device, steps int) error {
	ad := dev.Autodiff()
	ad.Seed(1)

	// 512 points around the four corners of the unit square; the label is
	// the XOR of the corner's coordinates.
	const n = 512
	corners := tensor.RandInt(ad, 0, 2, n, 2).To(tensor.Float32)
	x := corners.Add(tensor.Normal(ad, 0, 0.15, n, 2))
	s := corners.Sum(1)                                    // a+b: 0, 1 or 2
	y := s.Mul(s.MulScalar(-1).AddScalar(2)).Reshape(n, 1) // (a+b)(2-a-b) = a XOR b

	w1, b1 := tensor.Normal(ad, 0, 0.7, 2, 32).RequireGrad(), tensor.Zeros(ad, 32).RequireGrad()
	w2, b2 := tensor.Normal(ad, 0, 0.2, 32, 1).RequireGrad(), tensor.Zeros(ad, 1).RequireGrad()
	params := []*tensor.Tensor{w1, b1, w2, b2}
	start := time.Now()
	for step := 1; step <= steps; step++ {
		var loss float64
		tensor.Scope(func() {
			h := x.Matmul(w1).Add(b1).Tanh()
			p := h.Matmul(w2).Add(b2).Sigmoid()
			l := p.Sub(y).Square().Mean()
			grads := l.Backward()
			for _, w := range params {
				w.Assign(w.Detach().Sub(grads.Get(w).MulScalar(2)))
			}
			loss = l.Item()
		})
		if step == 1 || step%max(1, steps/10) == 0 {
			fmt.Fprintf(out, "step %4d  loss %.5f  memory: %s\n", step, loss, ad.MemoryStats())
		}
	}
	fmt.Fprintf(out, "trained %d steps in %s\n", steps, time.Since(start).Round(time.Millisecond))
	return ad.Sync()
}

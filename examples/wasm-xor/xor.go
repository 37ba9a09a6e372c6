// Command wasm-xor trains the XOR network with Kiln's nn and optim packages
// inside a browser tab, compiled to WebAssembly (GOOS=js GOARCH=wasm), and
// shows each step's loss on the page as it falls.
//
// Built for the browser, it is loaded by index.html through loader.js and
// Go's own wasm_exec.js, which is copied from $(go env GOROOT)/lib/wasm when
// the page is built or served and never committed. Built natively, the same
// command trains in the terminal, or builds the page and serves it:
//
//	go run ./examples/wasm-xor                       # train here, print the losses
//	go run ./examples/wasm-xor -serve localhost:8080 # build xor.wasm, serve the page
//
// or by hand:
//
//	GOOS=js GOARCH=wasm go build -o site/xor.wasm ./examples/wasm-xor
//	cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" examples/wasm-xor/index.html examples/wasm-xor/loader.js site/
//	python3 -m http.server -d site
//
// The network is 2 → 8 (tanh) → 1, trained full-batch on the four XOR
// points with Adam and a binary cross-entropy on the logit. It runs on the
// portable CPU path: a wasm module has no SIMD kernels, threads or GPU.
package main

import (
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// steps is how many full-batch steps the page trains for.
const steps = 300

// xorNet is the two-layer perceptron that learns XOR.
type xorNet struct {
	Hidden *nn.Linear
	Out    *nn.Linear
}

// forward returns the logits, one per row of x.
func (m *xorNet) forward(x *tensor.Tensor) *tensor.Tensor {
	return m.Out.Forward(m.Hidden.Forward(x).Tanh())
}

// result is what a training run reports at its end: the loss after each
// step and the network's probability for each XOR input, in the order
// (0,0), (0,1), (1,0), (1,1).
type result struct {
	Losses  []float64 `json:"losses"`
	Outputs []float64 `json:"outputs"`
}

// train fits the XOR network for n steps, calling report after each step
// with its index and loss (so the page can draw it while training runs).
func train(n int, report func(step int, loss float64)) result {
	dev := tensor.CPU().Autodiff()
	dev.Seed(7)
	model := &xorNet{Hidden: nn.NewLinear(dev, 2, 8), Out: nn.NewLinear(dev, 8, 1)}
	x := tensor.FromFloat32s(dev, []float32{0, 0, 0, 1, 1, 0, 1, 1}, 4, 2)
	y := tensor.FromFloat32s(dev, []float32{0, 1, 1, 0}, 4, 1)
	opt := optim.NewAdam(optim.AdamConfig{LR: 0.05})
	defer opt.ZeroState()

	var res result
	for step := range n {
		tensor.Scope(func() {
			loss := nn.BCEWithLogits(model.forward(x), y, nn.BCEWithLogitsOptions{})
			l := loss.Item()
			opt.Step(model, loss.Backward())
			res.Losses = append(res.Losses, l)
			report(step, l)
		})
	}
	tensor.Scope(func() {
		probs := model.forward(x).Sigmoid().Float32s()
		for _, p := range probs {
			res.Outputs = append(res.Outputs, float64(p))
		}
	})
	return res
}

package nn

import "github.com/kiln-ml/kiln/tensor"

// PlainRNNConfig configures an RNN: the options LSTM and GRU take, plus
// the nonlinearity. Its zero value is PyTorch's default.
type PlainRNNConfig struct {
	RNNConfig
	// Nonlinearity is "tanh" (the default, also "") or "relu".
	Nonlinearity string `json:"nonlinearity,omitempty"`
}

// RNN is a multi-layer Elman recurrent network, torch.nn.RNN without
// packed sequences. For each layer and direction, with input x_t and
// previous state h:
//
//	h' = act(W_ih x_t + b_ih + W_hh h + b_hh)
//
// where act is tanh or ReLU. The parameters are PyTorch's, named and laid
// out as LSTM's with one gate: weight_ih_l{k} [H, in], weight_hh_l{k}
// [H, H], bias_ih_l{k} and bias_hh_l{k} [H], with a _reverse suffix for
// the backward direction; they live in the inline map Weights, so state
// dicts map one to one.
type RNN struct {
	Mode
	InputSize     int     `kiln:"-"`
	HiddenSize    int     `kiln:"-"`
	NumLayers     int     `kiln:"-"`
	Nonlinearity  string  `kiln:"-"` // "tanh" or "relu"
	Bidirectional bool    `kiln:"-"`
	BatchFirst    bool    `kiln:"-"`
	Dropout       float64 `kiln:"-"`

	Weights map[string]*Param `kiln:",inline"`
}

// NewRNN returns an RNN from input to hidden features on dev, with
// PyTorch's default initialisation: every weight and bias drawn from
// U(−1/√hidden, 1/√hidden). It panics with ErrArgument for non-positive
// sizes, a negative NumLayers, a Dropout outside [0, 1) or an unknown
// Nonlinearity.
func NewRNN(dev tensor.Device, input, hidden int, cfg ...PlainRNNConfig) *RNN {
	const op = "nn.NewRNN"
	var c PlainRNNConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	act := c.Nonlinearity
	switch act {
	case "":
		act = "tanh"
	case "tanh", "relu":
	default:
		argError(op, "unknown Nonlinearity %q (want \"tanh\" or \"relu\")", c.Nonlinearity)
	}
	w := newRNNWeights(op, dev, 1, input, hidden, c.RNNConfig)
	return &RNN{InputSize: input, HiddenSize: hidden, NumLayers: max(c.NumLayers, 1), Nonlinearity: act,
		Bidirectional: c.Bidirectional, BatchFirst: c.BatchFirst, Dropout: c.Dropout, Weights: w}
}

func (r *RNN) core() *rnn {
	return &rnn{kind: "RNN", input: r.InputSize, hidden: r.HiddenSize, layers: r.NumLayers,
		bidir: r.Bidirectional, batch1: r.BatchFirst, dropout: r.Dropout, weights: r.Weights}
}

// Forward runs the RNN over the sequence x: [T, N, InputSize], or
// [N, T, InputSize] with BatchFirst, or [T, InputSize] for one unbatched
// sequence, from the initial state h0 [NumLayers·D, N, HiddenSize]
// (D = 2 when bidirectional, else 1; no batch dimension for unbatched
// input, and never batch-first); nil means zeros. It returns the last
// layer's output at every step, out [T, N, D·HiddenSize] (in x's layout;
// the two directions concatenated on the last dimension), and the final
// state hn of every layer and direction, shaped as h0. In training mode,
// Dropout applies to each layer's output but the last.
//
// It panics with a *tensor.Error (ErrShape) naming nn.RNN, what it
// expected and what it got, when x or h0 has the wrong shape, with
// ErrDType for a non-float input, and with ErrArgument for a Nonlinearity
// other than "tanh" or "relu".
func (r *RNN) Forward(x, h0 *tensor.Tensor) (out, hn *tensor.Tensor) {
	core := r.core()
	var act func(*tensor.Tensor) *tensor.Tensor
	switch r.Nonlinearity {
	case "", "tanh":
		act = (*tensor.Tensor).Tanh
	case "relu":
		act = (*tensor.Tensor).Relu
	default:
		argError("nn.RNN", "unknown Nonlinearity %q (want \"tanh\" or \"relu\")", r.Nonlinearity)
	}
	x3, batched := core.prepare(x)
	init := [][]*tensor.Tensor{core.initialState("h0", h0, x3, batched)}
	// Without h0 the first step's state is zeros: W_hh·0 + b_hh is b_hh,
	// so the product is skipped (which also keeps the zeros, a constant
	// that is no parameter, out of an exported graph).
	zero := map[*tensor.Tensor]bool{}
	if h0 == nil {
		for _, z := range init[0] {
			zero[z] = true
		}
	}
	step := func(xw, w, b *tensor.Tensor, s []*tensor.Tensor) []*tensor.Tensor {
		switch {
		case !zero[s[0]]:
			return []*tensor.Tensor{act(xw.Add(tensor.Linear(s[0], w, b)))}
		case b != nil:
			return []*tensor.Tensor{act(xw.Add(b))}
		}
		return []*tensor.Tensor{act(xw)}
	}
	seq, states := core.run(x3, init, step, r.Training())
	out, states = core.finish(seq, states, batched)
	return out, states[0]
}

package nn

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// RNNConfig configures an LSTM or a GRU; the zero value of each field is
// PyTorch's default.
type RNNConfig struct {
	// NumLayers is the number of stacked recurrent layers, each reading
	// the previous one's output sequence; 0 means 1.
	NumLayers int `json:"num_layers,omitempty"`
	// NoBias leaves out bias_ih and bias_hh (PyTorch's bias=False).
	NoBias bool `json:"no_bias,omitempty"`
	// BatchFirst makes the input and output sequences [N, T, F] instead of
	// [T, N, F]. The initial and final states stay [layers·directions, N, H],
	// as in PyTorch.
	BatchFirst bool `json:"batch_first,omitempty"`
	// Dropout is the probability of dropout applied in training mode to
	// the output of every layer except the last; default 0.
	Dropout float64 `json:"dropout,omitempty"`
	// Bidirectional adds a second pass over each layer's input running
	// backwards in time; the two passes' outputs are concatenated.
	Bidirectional bool `json:"bidirectional,omitempty"`
	// DType is the parameters' dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// rnn is what LSTM and GRU share: sizes, options and the weights, named
// as PyTorch names them.
type rnn struct {
	kind    string // "LSTM" or "GRU", for messages
	input   int
	hidden  int
	layers  int
	bidir   bool
	batch1  bool
	dropout float64
	weights map[string]*Param
}

// rnnParamName returns PyTorch's name of a recurrent layer's parameter:
// kind is "weight_ih", "weight_hh", "bias_ih" or "bias_hh".
func rnnParamName(kind string, layer, dir int) string {
	s := fmt.Sprintf("%s_l%d", kind, layer)
	if dir == 1 {
		s += "_reverse"
	}
	return s
}

// newRNNWeights makes the parameters of a recurrent layer stack with
// PyTorch's shapes and its default initialisation, U(−1/√H, 1/√H) for
// every weight and bias.
func newRNNWeights(op string, dev tensor.Device, gates, input, hidden int, c RNNConfig) map[string]*Param {
	if input <= 0 || hidden <= 0 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("sizes must be positive, got input=%d hidden=%d", input, hidden),
			Err: tensor.ErrArgument})
	}
	if c.NumLayers < 0 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("NumLayers %d is negative", c.NumLayers), Err: tensor.ErrArgument})
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("Dropout %v outside [0, 1)", c.Dropout), Err: tensor.ErrArgument})
	}
	layers := max(c.NumLayers, 1)
	dirs := 1
	if c.Bidirectional {
		dirs = 2
	}
	b := 1 / math.Sqrt(float64(hidden))
	u := Uniform{Low: -b, High: b}
	w := map[string]*Param{}
	for l := range layers {
		in := input
		if l > 0 {
			in = hidden * dirs
		}
		for d := range dirs {
			w[rnnParamName("weight_ih", l, d)] = NewParam(convert(u.Init(dev, []int{gates * hidden, in}, in, gates*hidden), c.DType))
			w[rnnParamName("weight_hh", l, d)] = NewParam(convert(u.Init(dev, []int{gates * hidden, hidden}, hidden, gates*hidden), c.DType))
			if !c.NoBias {
				w[rnnParamName("bias_ih", l, d)] = NewParam(convert(u.Init(dev, []int{gates * hidden}, hidden, gates*hidden), c.DType))
				w[rnnParamName("bias_hh", l, d)] = NewParam(convert(u.Init(dev, []int{gates * hidden}, hidden, gates*hidden), c.DType))
			}
		}
	}
	return w
}

func (r *rnn) dirs() int {
	if r.bidir {
		return 2
	}
	return 1
}

// tensorOf returns the named parameter's tensor, or nil when the layer has
// no such parameter (biases of a layer built with NoBias).
func (r *rnn) tensorOf(kind string, layer, dir int) *tensor.Tensor {
	p := r.weights[rnnParamName(kind, layer, dir)]
	if p == nil {
		return nil
	}
	return p.Tensor
}

// inputShape describes the input the layer expects, for messages.
func (r *rnn) inputShape() string {
	if r.batch1 {
		return fmt.Sprintf("[N, T, %d] (or [T, %d] unbatched)", r.input, r.input)
	}
	return fmt.Sprintf("[T, N, %d] (or [T, %d] unbatched)", r.input, r.input)
}

// prepare validates x and returns it as [T, N, I] with whether it was
// batched.
func (r *rnn) prepare(x *tensor.Tensor) (*tensor.Tensor, bool) {
	if x == nil {
		shapeError(r.kind, "expects input %s, got nil", r.inputShape())
	}
	xs := x.Shape()
	if (len(xs) != 2 && len(xs) != 3) || xs[len(xs)-1] != r.input {
		shapeError(r.kind, "expects input %s, got %v", r.inputShape(), xs)
	}
	if !x.DType().IsFloat() {
		panic(&tensor.Error{Op: "nn." + r.kind, Msg: fmt.Sprintf("expects a floating-point input, got %s", x.DType()),
			Err: tensor.ErrDType})
	}
	batched := len(xs) == 3
	switch {
	case !batched:
		x = x.Unsqueeze(1)
	case r.batch1:
		x = x.Transpose(0, 1)
	}
	if x.Dim(0) == 0 || x.Dim(1) == 0 {
		shapeError(r.kind, "expects at least one time step and one sequence, got input %v", xs)
	}
	return x, batched
}

// initialState validates an initial state (h0 or c0; nil means zeros) for
// input x [T, N, I] and returns one [N, H] tensor per layer and direction.
func (r *rnn) initialState(name string, s, x *tensor.Tensor, batched bool) []*tensor.Tensor {
	n, ld := x.Dim(1), r.layers*r.dirs()
	out := make([]*tensor.Tensor, ld)
	if s == nil {
		z := tensor.ZerosOf(x.Device(), x.DType(), n, r.hidden)
		for i := range out {
			out[i] = z
		}
		return out
	}
	want := []int{ld, n, r.hidden}
	if !batched {
		want = []int{ld, r.hidden}
	}
	if fmt.Sprint(s.Shape()) != fmt.Sprint(want) {
		shapeError(r.kind, "expects %s %v for input %v, got %v", name, want, inputShapeOf(x, batched, r.batch1), s.Shape())
	}
	if !batched {
		s = s.Unsqueeze(1)
	}
	for i := range out {
		out[i] = s.Select(0, i)
	}
	return out
}

// inputShapeOf recovers the caller's input shape from x [T, N, I].
func inputShapeOf(x *tensor.Tensor, batched, batchFirst bool) []int {
	s := x.Shape()
	switch {
	case !batched:
		return []int{s[0], s[2]}
	case batchFirst:
		return []int{s[1], s[0], s[2]}
	}
	return s
}

// timeSteps returns the T slices x[t] of x [T, …]. It splits x in halves
// recursively rather than selecting each step from the whole: the backward
// pass of a view writes its gradient into a zero tensor of the viewed
// tensor's size, so T selections of x would cost T·|x|, and halving costs
// |x|·log₂T.
func timeSteps(x *tensor.Tensor) []*tensor.Tensor {
	out := make([]*tensor.Tensor, 0, x.Dim(0))
	var split func(x *tensor.Tensor)
	split = func(x *tensor.Tensor) {
		n := x.Dim(0)
		if n == 1 {
			out = append(out, x.Select(0, 0))
			return
		}
		h := n / 2
		split(x.Narrow(0, 0, h))
		split(x.Narrow(0, h, n-h))
	}
	split(x)
	return out
}

// cell advances one time step: it maps the input projection xw [N, G·H]
// (x·W_ihᵀ + b_ih) and the states to the new states. LSTM has two states
// (h, c), GRU one (h).
type cell func(xw *tensor.Tensor, w, b *tensor.Tensor, states []*tensor.Tensor) []*tensor.Tensor

// run applies the layer stack to x [T, N, I] from the given initial states
// (one slice per kind of state, each with one [N, H] tensor per layer and
// direction). It returns the last layer's output [T, N, D·H] and the final
// states, each [L·D, N, H].
func (r *rnn) run(x *tensor.Tensor, init [][]*tensor.Tensor, step cell, training bool) (*tensor.Tensor, []*tensor.Tensor) {
	dirs := r.dirs()
	finals := make([][]*tensor.Tensor, len(init))
	for k := range finals {
		finals[k] = make([]*tensor.Tensor, r.layers*dirs)
	}
	layerIn := x
	for l := range r.layers {
		outs := make([]*tensor.Tensor, dirs)
		for d := range dirs {
			xw := tensor.Linear(layerIn, r.tensorOf("weight_ih", l, d), r.tensorOf("bias_ih", l, d))
			steps := timeSteps(xw)
			w, b := r.tensorOf("weight_hh", l, d), r.tensorOf("bias_hh", l, d)
			states := make([]*tensor.Tensor, len(init))
			for k := range init {
				states[k] = init[k][l*dirs+d]
			}
			hs := make([]*tensor.Tensor, len(steps))
			for i := range steps {
				t := i
				if d == 1 {
					t = len(steps) - 1 - i
				}
				states = step(steps[t], w, b, states)
				hs[t] = states[0]
			}
			outs[d] = tensor.Stack(hs, 0)
			for k := range states {
				finals[k][l*dirs+d] = states[k]
			}
		}
		out := outs[0]
		if dirs == 2 {
			out = tensor.Cat(outs, -1)
		}
		if training && r.dropout > 0 && l < r.layers-1 {
			out = (&Dropout{P: r.dropout}).Forward(out)
		}
		layerIn = out
	}
	stacked := make([]*tensor.Tensor, len(finals))
	for k := range finals {
		stacked[k] = tensor.Stack(finals[k], 0)
	}
	return layerIn, stacked
}

// finish puts the output sequence [T, N, F] and the final states
// [L·D, N, H] back into the caller's layout.
func (r *rnn) finish(out *tensor.Tensor, states []*tensor.Tensor, batched bool) (*tensor.Tensor, []*tensor.Tensor) {
	switch {
	case !batched:
		out = out.Squeeze(1)
		for k := range states {
			states[k] = states[k].Squeeze(1)
		}
	case r.batch1:
		out = out.Transpose(0, 1)
	}
	return out, states
}

// LSTM is a multi-layer long short-term memory network, PyTorch's
// torch.nn.LSTM without proj_size and packed sequences. For each layer
// and direction, with input x_t and previous states h, c:
//
//	i = σ(W_ii x_t + b_ii + W_hi h + b_hi)
//	f = σ(W_if x_t + b_if + W_hf h + b_hf)
//	g = tanh(W_ig x_t + b_ig + W_hg h + b_hg)
//	o = σ(W_io x_t + b_io + W_ho h + b_ho)
//	c' = f ⊙ c + i ⊙ g
//	h' = o ⊙ tanh(c')
//
// The parameters are PyTorch's, with PyTorch's names and layouts, so state
// dicts map one to one: weight_ih_l{k} [4H, in] (the gates stacked in the
// order i, f, g, o), weight_hh_l{k} [4H, H], bias_ih_l{k} and bias_hh_l{k}
// [4H], with a _reverse suffix for the backward direction of a
// bidirectional layer. They live in Weights, keyed by those names (the map
// is inline: its keys are the parameters' names in the model).
type LSTM struct {
	Mode
	InputSize     int     `kiln:"-"`
	HiddenSize    int     `kiln:"-"`
	NumLayers     int     `kiln:"-"`
	Bidirectional bool    `kiln:"-"`
	BatchFirst    bool    `kiln:"-"`
	Dropout       float64 `kiln:"-"`

	Weights map[string]*Param `kiln:",inline"`
}

// NewLSTM returns an LSTM from input to hidden features on dev, with
// PyTorch's default initialisation: every weight and bias drawn from
// U(−1/√hidden, 1/√hidden). It panics with ErrArgument for non-positive
// sizes, a negative NumLayers or a Dropout outside [0, 1).
func NewLSTM(dev tensor.Device, input, hidden int, cfg ...RNNConfig) *LSTM {
	var c RNNConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	w := newRNNWeights("nn.NewLSTM", dev, 4, input, hidden, c)
	return &LSTM{InputSize: input, HiddenSize: hidden, NumLayers: max(c.NumLayers, 1), Bidirectional: c.Bidirectional,
		BatchFirst: c.BatchFirst, Dropout: c.Dropout, Weights: w}
}

func (l *LSTM) core() *rnn {
	return &rnn{kind: "LSTM", input: l.InputSize, hidden: l.HiddenSize, layers: l.NumLayers,
		bidir: l.Bidirectional, batch1: l.BatchFirst, dropout: l.Dropout, weights: l.Weights}
}

// Forward runs the LSTM over the sequence x: [T, N, InputSize], or
// [N, T, InputSize] with BatchFirst, or [T, InputSize] for one unbatched
// sequence. h0 and c0 are the initial hidden and cell states,
// [NumLayers·D, N, HiddenSize] (D = 2 when bidirectional, else 1; no batch
// dimension for unbatched input, and never batch-first); nil means zeros.
//
// It returns the last layer's hidden state at every step, out
// [T, N, D·HiddenSize] (in x's layout; the forward and backward passes
// concatenated on the last dimension), and the final hidden and cell
// states hn and cn of every layer and direction, shaped as h0. In training
// mode, Dropout applies to each layer's output but the last.
//
// It panics with a *tensor.Error (ErrShape) naming nn.LSTM, what it
// expected and what it got, when x or a state has the wrong shape, and
// with ErrDType for a non-float input.
func (l *LSTM) Forward(x, h0, c0 *tensor.Tensor) (out, hn, cn *tensor.Tensor) {
	r := l.core()
	x3, batched := r.prepare(x)
	init := [][]*tensor.Tensor{r.initialState("h0", h0, x3, batched), r.initialState("c0", c0, x3, batched)}
	H := l.HiddenSize
	step := func(xw, w, b *tensor.Tensor, s []*tensor.Tensor) []*tensor.Tensor {
		gates := xw.Add(tensor.Linear(s[0], w, b))
		i := gates.Narrow(-1, 0, H).Sigmoid()
		f := gates.Narrow(-1, H, H).Sigmoid()
		g := gates.Narrow(-1, 2*H, H).Tanh()
		o := gates.Narrow(-1, 3*H, H).Sigmoid()
		c := f.Mul(s[1]).Add(i.Mul(g))
		return []*tensor.Tensor{o.Mul(c.Tanh()), c}
	}
	seq, states := r.run(x3, init, step, l.Training())
	out, states = r.finish(seq, states, batched)
	return out, states[0], states[1]
}

// GRU is a multi-layer gated recurrent unit network, PyTorch's
// torch.nn.GRU without packed sequences. For each layer and direction,
// with input x_t and previous state h:
//
//	r = σ(W_ir x_t + b_ir + W_hr h + b_hr)
//	z = σ(W_iz x_t + b_iz + W_hz h + b_hz)
//	n = tanh(W_in x_t + b_in + r ⊙ (W_hn h + b_hn))
//	h' = (1 − z) ⊙ n + z ⊙ h
//
// (b_hn inside the reset gate's product, as PyTorch and cuDNN compute it).
// The parameters are PyTorch's, named and laid out as LSTM's with three
// gates stacked in the order r, z, n: weight_ih_l{k} [3H, in],
// weight_hh_l{k} [3H, H], bias_ih_l{k} and bias_hh_l{k} [3H], with a
// _reverse suffix for the backward direction; they live in the inline map
// Weights.
type GRU struct {
	Mode
	InputSize     int     `kiln:"-"`
	HiddenSize    int     `kiln:"-"`
	NumLayers     int     `kiln:"-"`
	Bidirectional bool    `kiln:"-"`
	BatchFirst    bool    `kiln:"-"`
	Dropout       float64 `kiln:"-"`

	Weights map[string]*Param `kiln:",inline"`
}

// NewGRU returns a GRU from input to hidden features on dev, initialised
// and checked as NewLSTM does.
func NewGRU(dev tensor.Device, input, hidden int, cfg ...RNNConfig) *GRU {
	var c RNNConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	w := newRNNWeights("nn.NewGRU", dev, 3, input, hidden, c)
	return &GRU{InputSize: input, HiddenSize: hidden, NumLayers: max(c.NumLayers, 1), Bidirectional: c.Bidirectional,
		BatchFirst: c.BatchFirst, Dropout: c.Dropout, Weights: w}
}

func (g *GRU) core() *rnn {
	return &rnn{kind: "GRU", input: g.InputSize, hidden: g.HiddenSize, layers: g.NumLayers,
		bidir: g.Bidirectional, batch1: g.BatchFirst, dropout: g.Dropout, weights: g.Weights}
}

// Forward runs the GRU over the sequence x, shaped as for LSTM.Forward,
// from the initial state h0 [NumLayers·D, N, HiddenSize] (nil means
// zeros). It returns the last layer's output at every step
// [T, N, D·HiddenSize] (in x's layout) and the final state hn of every
// layer and direction, shaped as h0. It panics as LSTM.Forward does,
// naming nn.GRU.
func (g *GRU) Forward(x, h0 *tensor.Tensor) (out, hn *tensor.Tensor) {
	r := g.core()
	x3, batched := r.prepare(x)
	init := [][]*tensor.Tensor{r.initialState("h0", h0, x3, batched)}
	H := g.HiddenSize
	step := func(xw, w, b *tensor.Tensor, s []*tensor.Tensor) []*tensor.Tensor {
		hw := tensor.Linear(s[0], w, b)
		rz := xw.Narrow(-1, 0, 2*H).Add(hw.Narrow(-1, 0, 2*H)).Sigmoid()
		reset, update := rz.Narrow(-1, 0, H), rz.Narrow(-1, H, H)
		n := xw.Narrow(-1, 2*H, H).Add(reset.Mul(hw.Narrow(-1, 2*H, H))).Tanh()
		// (1 − z) ⊙ n + z ⊙ h = n + z ⊙ (h − n)
		return []*tensor.Tensor{n.Add(update.Mul(s[0].Sub(n)))}
	}
	seq, states := r.run(x3, init, step, g.Training())
	out, states = r.finish(seq, states, batched)
	return out, states[0]
}

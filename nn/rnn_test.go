package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

func lstmRun(l *nn.LSTM) seqRun {
	return func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
		out, hn, cn := l.Forward(in["x"], in["h0"], in["c0"])
		return map[string]*tensor.Tensor{"out": out, "hn": hn, "cn": cn}
	}
}

func gruRun(g *nn.GRU) seqRun {
	return func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
		out, hn := g.Forward(in["x"], in["h0"])
		return map[string]*tensor.Tensor{"out": out, "hn": hn}
	}
}

// TestRNNMatchesPyTorch checks outputs, final states and the gradients of
// every parameter and input against torch.nn.LSTM and torch.nn.GRU.
func TestRNNMatchesPyTorch(t *testing.T) {
	fixtures := testutil.LoadFixtures(t, "seq_rnn.json")
	cases := []struct {
		name  string
		build func(dev tensor.Device) (any, seqRun)
	}{
		{"lstm_basic", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewLSTM(dev, 3, 4)
			return l, lstmRun(l)
		}},
		{"lstm_bidirectional_2layer", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewLSTM(dev, 3, 4, nn.RNNConfig{NumLayers: 2, Bidirectional: true})
			return l, lstmRun(l)
		}},
		{"lstm_batch_first_2layer", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewLSTM(dev, 3, 4, nn.RNNConfig{NumLayers: 2, BatchFirst: true})
			return l, lstmRun(l)
		}},
		{"lstm_unbatched_bidirectional", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewLSTM(dev, 3, 4, nn.RNNConfig{Bidirectional: true})
			return l, lstmRun(l)
		}},
		{"lstm_no_bias", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewLSTM(dev, 3, 4, nn.RNNConfig{NoBias: true})
			return l, lstmRun(l)
		}},
		{"lstm_deep_bidirectional", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewLSTM(dev, 2, 3, nn.RNNConfig{NumLayers: 3, Bidirectional: true, BatchFirst: true})
			return l, lstmRun(l)
		}},
		{"gru_basic", func(dev tensor.Device) (any, seqRun) {
			g := nn.NewGRU(dev, 3, 4)
			return g, gruRun(g)
		}},
		{"gru_bidirectional_2layer", func(dev tensor.Device) (any, seqRun) {
			g := nn.NewGRU(dev, 3, 4, nn.RNNConfig{NumLayers: 2, Bidirectional: true})
			return g, gruRun(g)
		}},
		{"gru_batch_first_bidirectional", func(dev tensor.Device) (any, seqRun) {
			g := nn.NewGRU(dev, 3, 4, nn.RNNConfig{BatchFirst: true, Bidirectional: true})
			return g, gruRun(g)
		}},
		{"gru_unbatched_2layer", func(dev tensor.Device) (any, seqRun) {
			g := nn.NewGRU(dev, 3, 4, nn.RNNConfig{NumLayers: 2})
			return g, gruRun(g)
		}},
		{"gru_no_bias", func(dev tensor.Device) (any, seqRun) {
			g := nn.NewGRU(dev, 3, 4, nn.RNNConfig{NoBias: true})
			return g, gruRun(g)
		}},
	}
	if len(cases) != len(fixtures) {
		t.Errorf("%d cases for %d fixtures", len(cases), len(fixtures))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fc, ok := fixtures[c.name]
			if !ok {
				t.Fatalf("no fixture %s", c.name)
			}
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				m, run := c.build(dev.Autodiff())
				nn.Eval(m)
				checkSeqFixture(t, dev, fc, m, run, 1e-5, 1e-6)
			})
		})
	}
}

// TestRNNParamNames checks that the parameters carry PyTorch's names, in
// a state dict and in Params.
func TestRNNParamNames(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		l := nn.NewLSTM(dev, 3, 5, nn.RNNConfig{NumLayers: 2, Bidirectional: true})
		want := map[string][]int{}
		for layer := range 2 {
			in := 3
			if layer > 0 {
				in = 10
			}
			for _, sfx := range []string{"", "_reverse"} {
				want[fmt.Sprintf("weight_ih_l%d%s", layer, sfx)] = []int{20, in}
				want[fmt.Sprintf("weight_hh_l%d%s", layer, sfx)] = []int{20, 5}
				want[fmt.Sprintf("bias_ih_l%d%s", layer, sfx)] = []int{20}
				want[fmt.Sprintf("bias_hh_l%d%s", layer, sfx)] = []int{20}
			}
		}
		sd := nn.StateDict(l)
		if len(sd) != len(want) {
			t.Errorf("state dict has %d entries, want %d", len(sd), len(want))
		}
		for k, shape := range want {
			got, ok := sd[k]
			if !ok {
				t.Errorf("state dict lacks %s", k)
				continue
			}
			if fmt.Sprint(got.Shape()) != fmt.Sprint(shape) {
				t.Errorf("%s: shape %v, want %v", k, got.Shape(), shape)
			}
		}
		g := nn.NewGRU(dev, 4, 2, nn.RNNConfig{NoBias: true})
		var names []string
		for _, np := range nn.Params(g) {
			names = append(names, np.Name)
		}
		if fmt.Sprint(names) != "[weight_hh_l0 weight_ih_l0]" {
			t.Errorf("GRU params %v", names)
		}
		type model struct{ Enc *nn.GRU }
		m := model{Enc: g}
		if _, ok := nn.StateDict(m)["Enc.weight_ih_l0"]; !ok {
			t.Errorf("nested GRU: state dict keys %v", nn.StateDict(m))
		}
	})
}

// TestRNNInit checks PyTorch's default initialisation: every parameter in
// U(−1/√H, 1/√H), spread over the interval.
func TestRNNInit(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		const hidden = 16
		bound := 1 / math.Sqrt(hidden)
		for _, m := range []any{nn.NewLSTM(dev, 8, hidden), nn.NewGRU(dev, 8, hidden, nn.RNNConfig{DType: tensor.Float64})} {
			for _, np := range nn.Params(m) {
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, v := range np.Param.Float64s() {
					lo, hi = min(lo, v), max(hi, v)
				}
				if lo < -bound || hi > bound || hi-lo < bound {
					t.Errorf("%s: values in [%v, %v], want spread over [−%v, %v]", np.Name, lo, hi, bound, bound)
				}
			}
		}
		if dt := nn.NewGRU(dev, 2, 2, nn.RNNConfig{DType: tensor.Float64}).Weights["weight_ih_l0"].DType(); dt != tensor.Float64 {
			t.Errorf("DType Float64 gave %s parameters", dt)
		}
	})
}

// TestRNNGradCheck checks the gradients of both cells, through two layers
// and both directions, with respect to the input, the initial states and
// every parameter, against finite differences.
func TestRNNGradCheck(t *testing.T) {
	if raceEnabled {
		t.Skip("finite differences over every weight check numbers, not concurrency; the plain run checks them (under the race detector they take minutes)")
	}
	cfg := nn.RNNConfig{NumLayers: 2, Bidirectional: true, DType: tensor.Float64}
	// withParams installs in[k:] as the model's parameters, in name order.
	withParams := func(w map[string]*nn.Param, names []string, in []*tensor.Tensor) {
		for i, n := range names {
			w[n] = nn.NewParam(in[i])
		}
	}
	paramInputs := func(m any) ([]string, []*tensor.Tensor) {
		var names []string
		var ts []*tensor.Tensor
		for _, np := range nn.Params(m) {
			names = append(names, np.Name)
			ts = append(ts, np.Param.Detach())
		}
		return names, ts
	}
	t.Run("lstm", func(t *testing.T) {
		testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
			l := nn.NewLSTM(dev, 2, 2, cfg)
			names, ps := paramInputs(l)
			x := testutil.RandFloat64(dev, 1, -1, 1, 3, 2, 2)
			h0 := testutil.RandFloat64(dev, 2, -1, 1, 4, 2, 2)
			c0 := testutil.RandFloat64(dev, 3, -1, 1, 4, 2, 2)
			testutil.GradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor {
				withParams(l.Weights, names, in[3:])
				out, hn, cn := l.Forward(in[0], in[1], in[2])
				return tensor.Cat([]*tensor.Tensor{out.Flatten(0, -1), hn.Flatten(0, -1), cn.Flatten(0, -1)}, 0)
			}, append([]*tensor.Tensor{x, h0, c0}, ps...)...)
		})
	})
	t.Run("gru", func(t *testing.T) {
		testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
			g := nn.NewGRU(dev, 2, 2, cfg)
			g.BatchFirst = true
			names, ps := paramInputs(g)
			x := testutil.RandFloat64(dev, 4, -1, 1, 2, 3, 2)
			h0 := testutil.RandFloat64(dev, 5, -1, 1, 4, 2, 2)
			testutil.GradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor {
				withParams(g.Weights, names, in[2:])
				out, hn := g.Forward(in[0], in[1])
				return tensor.Cat([]*tensor.Tensor{out.Flatten(0, -1), hn.Flatten(0, -1)}, 0)
			}, append([]*tensor.Tensor{x, h0}, ps...)...)
		})
	})
}

// TestRNNDropout checks that dropout between layers acts in training mode
// only, and never on the last layer's output.
func TestRNNDropout(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dev.Seed(3)
		x := tensor.Randn(dev, 4, 2, 3)
		l := nn.NewLSTM(dev, 3, 8, nn.RNNConfig{NumLayers: 2, Dropout: 0.5})
		nn.Eval(l)
		e1, _, _ := l.Forward(x, nil, nil)
		e2, _, _ := l.Forward(x, nil, nil)
		if !e1.AllClose(e2, 0, 0) {
			t.Errorf("eval mode is not deterministic")
		}
		nn.Train(l)
		tr, _, _ := l.Forward(x, nil, nil)
		if tr.AllClose(e1, 1e-6, 1e-6) {
			t.Errorf("training mode applied no dropout")
		}
		one := nn.NewGRU(dev, 3, 8, nn.RNNConfig{Dropout: 0.5})
		nn.Train(one)
		a, _ := one.Forward(x, nil)
		nn.Eval(one)
		b, _ := one.Forward(x, nil)
		if !a.AllClose(b, 0, 0) {
			t.Errorf("a single layer applied dropout to its output")
		}
	})
}

// TestRNNBadInput checks the errors for inputs and states of the wrong
// shape or dtype.
func TestRNNBadInput(t *testing.T) {
	cases := []struct {
		name      string
		fn        func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU)
		kind      error
		fragments []string
	}{
		{"lstm wrong features", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { l.Forward(tensor.Zeros(dev, 5, 3, 7), nil, nil) }, tensor.ErrShape,
			[]string{"nn.LSTM: expects input [T, N, 8]", "got [5 3 7]"}},
		{"lstm rank 4", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { l.Forward(tensor.Zeros(dev, 5, 3, 2, 8), nil, nil) }, tensor.ErrShape,
			[]string{"nn.LSTM", "[5 3 2 8]"}},
		{"lstm rank 1", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { l.Forward(tensor.Zeros(dev, 8), nil, nil) }, tensor.ErrShape,
			[]string{"nn.LSTM", "[8]"}},
		{"lstm nil input", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { l.Forward(nil, nil, nil) }, tensor.ErrShape, []string{"nn.LSTM", "nil"}},
		{"lstm integer input", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) {
			l.Forward(tensor.ZerosOf(dev, tensor.Int64, 5, 3, 8), nil, nil)
		}, tensor.ErrDType,
			[]string{"nn.LSTM", "int64"}},
		{"lstm empty sequence", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { l.Forward(tensor.Zeros(dev, 0, 3, 8), nil, nil) }, tensor.ErrShape,
			[]string{"nn.LSTM", "at least one time step"}},
		{"lstm h0 missing layer", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) {
			l.Forward(tensor.Zeros(dev, 5, 3, 8), tensor.Zeros(dev, 1, 3, 4), nil)
		},
			tensor.ErrShape, []string{"nn.LSTM: expects h0 [2 3 4] for input [5 3 8], got [1 3 4]"}},
		{"lstm c0 wrong hidden", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) {
			l.Forward(tensor.Zeros(dev, 5, 3, 8), nil, tensor.Zeros(dev, 2, 3, 5))
		},
			tensor.ErrShape, []string{"nn.LSTM: expects c0 [2 3 4]", "got [2 3 5]"}},
		{"lstm unbatched h0 batched", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) {
			l.Forward(tensor.Zeros(dev, 5, 8), tensor.Zeros(dev, 2, 1, 4), nil)
		},
			tensor.ErrShape, []string{"expects h0 [2 4] for input [5 8]"}},
		{"gru batch first wrong features", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { bf.Forward(tensor.Zeros(dev, 2, 5, 3), nil) }, tensor.ErrShape,
			[]string{"nn.GRU: expects input [N, T, 8]", "got [2 5 3]"}},
		{"gru h0 batch first", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) {
			bf.Forward(tensor.Zeros(dev, 2, 5, 8), tensor.Zeros(dev, 2, 5, 4))
		},
			tensor.ErrShape, []string{"nn.GRU: expects h0 [2 2 4] for input [2 5 8], got [2 5 4]"}},
		{"new with zero hidden", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { nn.NewLSTM(dev, 3, 0) }, tensor.ErrArgument, []string{"nn.NewLSTM", "hidden=0"}},
		{"new with bad dropout", func(dev tensor.Device, l *nn.LSTM, bf *nn.GRU) { nn.NewGRU(dev, 3, 2, nn.RNNConfig{Dropout: 1}) }, tensor.ErrArgument,
			[]string{"nn.NewGRU", "Dropout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				l := nn.NewLSTM(dev, 8, 4, nn.RNNConfig{NumLayers: 2})
				bf := nn.NewGRU(dev, 8, 4, nn.RNNConfig{BatchFirst: true, Bidirectional: true})
				expectPanic(t, func() { c.fn(dev, l, bf) }, c.kind, c.fragments...)
			})
		})
	}
}

// TestInlineMapNames checks the `kiln:",inline"` tag recurrent layers rely
// on: a map's entries are named as the parent's own fields, in key order,
// for Params, state dicts, loading and Freeze patterns.
func TestInlineMapNames(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		type layer struct {
			Scale   *nn.Param            `kiln:"scale"`
			Weights map[string]*nn.Param `kiln:",inline"`
		}
		type model struct{ Blocks []*layer }
		newModel := func() *model {
			return &model{Blocks: []*layer{{Scale: nn.NewParam(tensor.Ones(dev, 1)),
				Weights: map[string]*nn.Param{"w_l1": nn.NewParam(tensor.Zeros(dev, 2)), "w_l0": nn.NewParam(tensor.Zeros(dev, 3))}}}}
		}
		m := newModel()
		var names []string
		for _, np := range nn.Params(m) {
			names = append(names, np.Name)
		}
		if fmt.Sprint(names) != "[Blocks.0.scale Blocks.0.w_l0 Blocks.0.w_l1]" {
			t.Errorf("names %v", names)
		}
		if n := nn.Freeze(m, "Blocks.*.w_*"); n != 2 {
			t.Errorf("Freeze matched %d", n)
		}
		m.Blocks[0].Weights["w_l0"].Assign(tensor.Full(dev, 7, 3))
		fresh := newModel()
		if _, _, err := nn.LoadStateDict(fresh, nn.StateDict(m)); err != nil {
			t.Fatal(err)
		}
		if v := fresh.Blocks[0].Weights["w_l0"].Float64s()[2]; v != 7 {
			t.Errorf("loaded %v, want 7", v)
		}
	})
}

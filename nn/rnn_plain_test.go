package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestPlainRNNFixtures checks nn.RNN against torch.nn.RNN (the "rnn …" cases of
// testdata/layers2.json): the output sequence, the final state and the
// gradients of Σ out·w + Σ hn·w' with respect to the inputs, the initial
// state and every parameter, in float32 and float64.
func TestPlainRNNFixtures(t *testing.T) {
	cases := []struct {
		name string
		cfg  nn.PlainRNNConfig
		in   int
		hid  int
	}{
		{"rnn tanh", nn.PlainRNNConfig{}, 3, 4},
		{"rnn relu two layers h0", nn.PlainRNNConfig{RNNConfig: nn.RNNConfig{NumLayers: 2}, Nonlinearity: "relu"}, 3, 4},
		{"rnn bidirectional batch first", nn.PlainRNNConfig{RNNConfig: nn.RNNConfig{BatchFirst: true, Bidirectional: true}}, 2, 3},
		{"rnn no bias unbatched h0", nn.PlainRNNConfig{RNNConfig: nn.RNNConfig{NoBias: true}}, 3, 2},
		{"rnn two layers bidirectional", nn.PlainRNNConfig{RNNConfig: nn.RNNConfig{NumLayers: 2, Bidirectional: true}}, 2, 3},
	}
	fixtures := testutil.LoadFixtures(t, "layers2.json")
	for _, rc := range cases {
		c, ok := fixtures[rc.name]
		if !ok {
			t.Errorf("no fixture %q", rc.name)
			continue
		}
		t.Run(rc.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				forEachDType(t, []tensor.DType{tensor.Float32, tensor.Float64}, func(t *testing.T, dt tensor.DType) {
					ad := dev.Autodiff()
					cfg := rc.cfg
					cfg.DType = dt
					m := nn.NewRNN(ad, rc.in, rc.hid, cfg)
					loadFixtureState(t, m, c, "sd.", dev)
					rtol, atol := tolerances(dt)
					x := fixtureInput(ad, c["x0"], dt)
					var h0 *tensor.Tensor
					if f, ok := c["x1"]; ok {
						h0 = fixtureInput(ad, f, dt)
					}
					out, hn := m.Forward(x, h0)
					testutil.AssertClose(t, "out", out, c["out"], rtol, atol)
					testutil.AssertClose(t, "hn", hn, c["hn"], rtol, atol)
					w := tensor.FromFloat64s(ad, lossWeights(out.NumElements()), out.Shape()...).Reshape(out.Shape()...)
					wh := tensor.FromFloat64s(ad, lossWeights(hn.NumElements()), hn.Shape()...).Reshape(hn.Shape()...)
					loss := out.To(tensor.Float64).Mul(w).Sum().Add(hn.To(tensor.Float64).Mul(wh).Sum())
					grads := loss.Backward()
					defer grads.Release()
					testutil.AssertClose(t, "grad.x0", grads.Get(x), c["grad.x0"], rtol, atol)
					if h0 != nil {
						testutil.AssertClose(t, "grad.x1", grads.Get(h0), c["grad.x1"], rtol, atol)
					}
					for _, np := range nn.Params(m) {
						want, ok := c["grad."+np.Name]
						if !ok {
							t.Errorf("parameter %s has no reference gradient", np.Name)
							continue
						}
						testutil.AssertClose(t, "grad."+np.Name, grads.Get(np.Param.Tensor), want, rtol, atol)
					}
				})
			})
		})
	}
}

// TestPlainRNNGradCheck checks the RNN's gradients with respect to its input
// and initial state against finite differences.
func TestPlainRNNGradCheck(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, act := range []string{"tanh", "relu"} {
			m := nn.NewRNN(dev.Autodiff(), 2, 3, nn.PlainRNNConfig{Nonlinearity: act,
				RNNConfig: nn.RNNConfig{NumLayers: 2, Bidirectional: true, DType: tensor.Float64}})
			testutil.GradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor {
				out, hn := m.Forward(in[0].Transpose(0, 1), in[1])
				return tensor.Cat([]*tensor.Tensor{out.Reshape(-1), hn.Reshape(-1)}, 0)
			}, testutil.RandFloat64(dev, 1, -1, 1, 2, 3, 2), testutil.RandFloat64(dev, 2, -1, 1, 4, 2, 3))
		}
	})
}

func TestPlainRNNBadInputs(t *testing.T) {
	runBadInputs(t, []badInput{
		{"nonlinearity", "nn.NewRNN", tensor.ErrArgument, []string{"unknown Nonlinearity \"gelu\""}, func(d tensor.Device) {
			nn.NewRNN(d, 2, 3, nn.PlainRNNConfig{Nonlinearity: "gelu"})
		}},
		{"sizes", "nn.NewRNN", tensor.ErrArgument, []string{"input=0"}, func(d tensor.Device) { nn.NewRNN(d, 0, 3) }},
		{"input features", "nn.RNN", tensor.ErrShape, []string{"[T, N, 2]", "[4 1 3]"}, func(d tensor.Device) {
			nn.NewRNN(d, 2, 3).Forward(tensor.Zeros(d, 4, 1, 3), nil)
		}},
		{"h0 shape", "nn.RNN", tensor.ErrShape, []string{"h0 [2 1 3]", "[1 1 3]"}, func(d tensor.Device) {
			nn.NewRNN(d, 2, 3, nn.PlainRNNConfig{RNNConfig: nn.RNNConfig{NumLayers: 2}}).Forward(tensor.Zeros(d, 4, 1, 2),
				tensor.Zeros(d, 1, 1, 3))
		}},
		{"integer input", "nn.RNN", tensor.ErrDType, []string{"int64"}, func(d tensor.Device) {
			nn.NewRNN(d, 2, 3).Forward(tensor.ZerosOf(d, tensor.Int64, 4, 1, 2), nil)
		}},
	})
}

func TestPlainRNNStateDictNames(t *testing.T) {
	m := nn.NewRNN(tensor.CPU(), 2, 3, nn.PlainRNNConfig{RNNConfig: nn.RNNConfig{NumLayers: 2, Bidirectional: true}})
	sd := nn.StateDict(m)
	for _, k := range []string{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l1_reverse",
		"bias_hh_l1_reverse"} {
		if _, ok := sd[k]; !ok {
			t.Errorf("no %s in the state dict", k)
		}
	}
	if got := sd["weight_ih_l1"].Shape(); len(got) != 2 || got[0] != 3 || got[1] != 6 {
		t.Errorf("weight_ih_l1 %v, want [3 6]", got)
	}
	if len(sd) != 16 {
		t.Errorf("%d tensors in the state dict, want 16", len(sd))
	}
}

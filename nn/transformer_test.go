package nn_test

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// encoder is what TransformerEncoderLayer and TransformerEncoder share.
type encoder interface {
	ForwardMasked(src *tensor.Tensor, m nn.EncoderMasks) *tensor.Tensor
}

// decoder is what TransformerDecoderLayer and TransformerDecoder share.
type decoder interface {
	ForwardMasked(tgt, memory *tensor.Tensor, m nn.DecoderMasks) *tensor.Tensor
}

func encoderRun(e encoder, m nn.EncoderMasks) seqRun {
	return func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
		m.Mask, m.KeyPaddingMask = in["src_mask"], in["src_key_padding_mask"]
		return map[string]*tensor.Tensor{"out": e.ForwardMasked(in["src"], m)}
	}
}

func decoderRun(d decoder, m nn.DecoderMasks) seqRun {
	return func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
		m.TargetMask, m.MemoryMask = in["tgt_mask"], in["memory_mask"]
		m.TargetKeyPaddingMask, m.MemoryKeyPaddingMask = in["tgt_key_padding_mask"], in["memory_key_padding_mask"]
		return map[string]*tensor.Tensor{"out": d.ForwardMasked(in["tgt"], in["memory"], m)}
	}
}

// TestTransformerMatchesPyTorch checks encoder and decoder layers and
// stacks (post- and pre-norm, relu and gelu, every mask) against
// torch.nn.Transformer{Encoder,Decoder}{Layer,}: outputs and the
// gradients of every parameter and input.
func TestTransformerMatchesPyTorch(t *testing.T) {
	fixtures := testutil.LoadFixtures(t, "seq_encoder.json")
	for k, v := range testutil.LoadFixtures(t, "seq_decoder.json") {
		fixtures[k] = v
	}
	const e, h, f = 8, 2, 12
	cases := []struct {
		name  string
		build func(dev tensor.Device) (any, seqRun)
	}{
		{"encoder_layer_post_norm", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewTransformerEncoderLayer(dev, e, h, nn.TransformerLayerConfig{DimFeedforward: f})
			return l, encoderRun(l, nn.EncoderMasks{})
		}},
		{"encoder_layer_pre_norm_gelu_batch_first", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewTransformerEncoderLayer(dev, e, h, nn.TransformerLayerConfig{DimFeedforward: f, Activation: "gelu",
				BatchFirst: true, NormFirst: true, LayerNormEps: 1e-6})
			return l, encoderRun(l, nn.EncoderMasks{})
		}},
		{"encoder_layer_unbatched_causal", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewTransformerEncoderLayer(dev, e, h, nn.TransformerLayerConfig{DimFeedforward: f})
			return l, encoderRun(l, nn.EncoderMasks{})
		}},
		{"encoder_stack_norm", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewTransformerEncoderLayer(dev, e, h, nn.TransformerLayerConfig{DimFeedforward: f})
			s := nn.NewTransformerEncoder(l, 3, nn.NewLayerNorm(dev, []int{e}))
			return s, encoderRun(s, nn.EncoderMasks{})
		}},
		{"decoder_layer_post_norm", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewTransformerDecoderLayer(dev, e, h, nn.TransformerLayerConfig{DimFeedforward: f})
			return l, decoderRun(l, nn.DecoderMasks{})
		}},
		{"decoder_layer_pre_norm_gelu_batch_first", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewTransformerDecoderLayer(dev, e, h, nn.TransformerLayerConfig{DimFeedforward: f, Activation: "gelu",
				BatchFirst: true, NormFirst: true})
			return l, decoderRun(l, nn.DecoderMasks{})
		}},
		{"decoder_stack_causal_norm", func(dev tensor.Device) (any, seqRun) {
			l := nn.NewTransformerDecoderLayer(dev, e, h, nn.TransformerLayerConfig{DimFeedforward: f, BatchFirst: true})
			s := nn.NewTransformerDecoder(l, 2, nn.NewLayerNorm(dev, []int{e}))
			return s, decoderRun(s, nn.DecoderMasks{TargetIsCausal: true})
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

// TestTransformerNames checks the state-dict names of a stack against
// PyTorch's.
func TestTransformerNames(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		fixtures := testutil.LoadFixtures(t, "seq_decoder.json")
		d := nn.NewTransformerDecoder(nn.NewTransformerDecoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 12}), 2,
			nn.NewLayerNorm(dev, []int{8}))
		var got []string
		for k := range nn.StateDict(d) {
			got = append(got, "param."+k)
		}
		for _, k := range got {
			if _, ok := fixtures["decoder_stack_causal_norm"][k]; !ok {
				t.Errorf("%s is not a PyTorch name", k)
			}
		}
		if len(got) != 2*18+2 {
			t.Errorf("%d entries, want %d", len(got), 2*18+2)
		}
	})
}

// TestTransformerClones checks that a stack's layers start as copies of
// the given layer, in its mode, and are independent parameters.
func TestTransformerClones(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		l := nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 12, NoDropout: true,
			Activation: "gelu", NormFirst: true, BatchFirst: true, DType: tensor.Float64})
		nn.Eval(l)
		e := nn.NewTransformerEncoder(l, 3, nil)
		if e.Layers[0] != l || len(e.Layers) != 3 {
			t.Fatalf("layers %v", e.Layers)
		}
		for i, c := range e.Layers[1:] {
			if nn.IsTraining(c) {
				t.Errorf("layer %d is in training mode", i+1)
			}
			if c.Activation != "gelu" || !c.NormFirst || !c.SelfAttn.BatchFirst || c.Dropout.P != 0 {
				t.Errorf("layer %d has another configuration", i+1)
			}
			if c.Linear1.Weight == l.Linear1.Weight || c.Linear1.Weight.DType() != tensor.Float64 ||
				!c.Linear1.Weight.AllClose(l.Linear1.Weight.Tensor, 0, 0) || !c.SelfAttn.InProjWeight.AllClose(l.SelfAttn.InProjWeight.Tensor, 0, 0) {
				t.Errorf("layer %d is not an independent copy", i+1)
			}
		}
		x := tensor.Randn(dev, 2, 3, 8).To(tensor.Float64)
		if got := e.Forward(x).Shape(); fmt.Sprint(got) != "[2 3 8]" {
			t.Errorf("output %v", got)
		}
		if nn.NumParams(e) != 3*nn.NumParams(l) {
			t.Errorf("%d params, want %d", nn.NumParams(e), 3*nn.NumParams(l))
		}
	})
}

// TestTransformerDefaults checks PyTorch's defaults: 2048 hidden units,
// dropout 0.1, relu, post-norm, eps 1e-5.
func TestTransformerDefaults(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		l := nn.NewTransformerDecoderLayer(dev, 8, 2)
		if l.Linear1.Weight.Dim(0) != 2048 || l.Dropout.P != 0.1 || l.Dropout3.P != 0.1 || l.SelfAttn.Dropout != 0.1 ||
			l.CrossAttn.Dropout != 0.1 || l.Activation != "relu" || l.NormFirst || l.Norm3.Eps != 1e-5 || l.SelfAttn.BatchFirst {
			t.Errorf("defaults differ from PyTorch's: %+v", l)
		}
	})
}

// TestTransformerDropout checks that a layer is deterministic in eval
// mode and applies dropout in training mode.
func TestTransformerDropout(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dev.Seed(4)
		l := nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, Dropout: 0.3})
		x := tensor.Randn(dev, 3, 2, 8)
		nn.Eval(l)
		a, b := l.Forward(x), l.Forward(x)
		if !a.AllClose(b, 0, 0) {
			t.Errorf("eval mode is not deterministic")
		}
		nn.Train(l)
		if l.Forward(x).AllClose(a, 1e-5, 1e-5) {
			t.Errorf("training mode applied no dropout")
		}
	})
}

// TestTransformerGradCheck checks the gradients of a small decoder layer
// (pre-norm, gelu, causal) with respect to the target and the memory.
func TestTransformerGradCheck(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		l := nn.NewTransformerDecoderLayer(dev, 4, 2, nn.TransformerLayerConfig{DimFeedforward: 6, NoDropout: true,
			Activation: "gelu", NormFirst: true, DType: tensor.Float64})
		testutil.GradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor {
			return l.ForwardMasked(in[0], in[1], nn.DecoderMasks{TargetIsCausal: true})
		}, testutil.RandFloat64(dev, 1, -1, 1, 3, 2, 4), testutil.RandFloat64(dev, 2, -1, 1, 2, 2, 4))
	})
}

// TestTransformerDecoderIncremental decodes a target one piece at a time
// through a DecoderCache and checks that the outputs equal one causal
// call over the whole target, for post- and pre-norm stacks.
func TestTransformerDecoderIncremental(t *testing.T) {
	for _, normFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("norm_first=", normFirst), func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				dev.Seed(11)
				layer := nn.NewTransformerDecoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, NormFirst: normFirst,
					BatchFirst: true})
				d := nn.NewTransformerDecoder(layer, 2, nn.NewLayerNorm(dev, []int{8}))
				nn.Eval(d)
				tgt, memory := tensor.Randn(dev, 2, 5, 8), tensor.Randn(dev, 2, 3, 8)
				pad := tensor.FromBools(dev, []bool{false, false, true, false, false, false}, 2, 3) // memory padding
				m := nn.DecoderMasks{TargetIsCausal: true, MemoryKeyPaddingMask: pad}
				full := d.ForwardMasked(tgt, memory, m)
				var cache nn.DecoderCache
				defer cache.Reset()
				var pieces []*tensor.Tensor
				for _, span := range [][2]int{{0, 2}, {2, 3}, {3, 4}, {4, 5}} {
					pieces = append(pieces, d.ForwardCached(tgt.Narrow(1, span[0], span[1]-span[0]), memory, m, &cache))
				}
				if cache.Len() != 5 {
					t.Errorf("cache holds %d positions, want 5", cache.Len())
				}
				got := tensor.Cat(pieces, 1)
				testutil.AssertValues(t, "incremental decoding", got, full.Shape(), full.Float64s(), 1e-5, 1e-6)
			})
		})
	}
}

// TestTransformerBadInput checks the errors for inputs and configs that do
// not fit.
func TestTransformerBadInput(t *testing.T) {
	cases := []struct {
		name      string
		fn        func(dev tensor.Device)
		kind      error
		fragments []string
	}{
		{"encoder wrong width", func(dev tensor.Device) {
			nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 4}).Forward(tensor.Zeros(dev, 3, 2, 6))
		}, tensor.ErrShape, []string{"nn.TransformerEncoderLayer: expects src [S, N, 8] (or [S, 8] unbatched), got [3 2 6]"}},
		{"encoder batch first rank 4", func(dev tensor.Device) {
			nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 4, BatchFirst: true}).
				Forward(tensor.Zeros(dev, 1, 3, 2, 8))
		}, tensor.ErrShape, []string{"expects src [N, S, 8]", "got [1 3 2 8]"}},
		{"decoder memory width", func(dev tensor.Device) {
			nn.NewTransformerDecoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 4}).
				Forward(tensor.Zeros(dev, 3, 2, 8), tensor.Zeros(dev, 3, 2, 4))
		}, tensor.ErrShape, []string{"nn.TransformerDecoderLayer: expects memory [S, N, 8]", "got [3 2 4]"}},
		{"encoder mask shape", func(dev tensor.Device) {
			nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 4}).
				ForwardMasked(tensor.Zeros(dev, 3, 2, 8), nn.EncoderMasks{Mask: tensor.ZerosOf(dev, tensor.Bool, 2, 2)})
		}, tensor.ErrShape, []string{"attention mask", "got [2 2]"}},
		{"unknown activation", func(dev tensor.Device) {
			nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{Activation: "tanh"})
		}, tensor.ErrArgument, []string{"nn.NewTransformerEncoderLayer", `"tanh"`}},
		{"heads do not divide", func(dev tensor.Device) { nn.NewTransformerDecoderLayer(dev, 8, 3) }, tensor.ErrArgument,
			[]string{"nn.NewTransformerDecoderLayer", "multiple of nhead 3"}},
		{"cache of another decoder", func(dev tensor.Device) {
			d := nn.NewTransformerDecoder(nn.NewTransformerDecoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 4}), 2, nil)
			c := nn.DecoderCache{Layers: make([]nn.KVCache, 3)}
			d.ForwardCached(tensor.Zeros(dev, 1, 2, 8), tensor.Zeros(dev, 3, 2, 8), nn.DecoderMasks{}, &c)
		}, tensor.ErrArgument, []string{"nn.TransformerDecoder: the cache holds 3 layers, the decoder has 2"}},
		{"no layers", func(dev tensor.Device) {
			nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 4}), 0, nil)
		}, tensor.ErrArgument, []string{"nn.NewTransformerEncoder", "numLayers"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) { expectPanic(t, func() { c.fn(dev) }, c.kind, c.fragments...) })
		})
	}
}

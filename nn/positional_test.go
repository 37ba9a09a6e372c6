package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestPositionalMatchesNumPy checks RotaryEncoding, PositionalEncoding
// and SwiGLU against NumPy references computed from their definitions:
// outputs and the gradients of Σ out·w, in float32 and float64.
func TestPositionalMatchesNumPy(t *testing.T) {
	fixtures := testutil.LoadFixtures(t, "seq_numpy.json")
	type build func(dev tensor.Device, dt tensor.DType) (any, seqRun)
	at := func(f func(x *tensor.Tensor, start int) *tensor.Tensor, start int) seqRun {
		return func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"out": f(in["x"], start)}
		}
	}
	cases := []struct {
		name  string
		build build
	}{
		{"rope_interleaved", func(tensor.Device, tensor.DType) (any, seqRun) {
			r := nn.NewRotaryEncoding(8)
			return r, at(r.ForwardAt, 0)
		}},
		{"rope_interleaved_offset_base", func(tensor.Device, tensor.DType) (any, seqRun) {
			r := nn.NewRotaryEncoding(6, nn.RotaryEncodingConfig{Base: 500})
			return r, at(r.ForwardAt, 7)
		}},
		{"rope_half_split", func(tensor.Device, tensor.DType) (any, seqRun) {
			r := nn.NewRotaryEncoding(8, nn.RotaryEncodingConfig{HalfSplit: true})
			return r, at(r.ForwardAt, 0)
		}},
		{"rope_half_split_offset", func(tensor.Device, tensor.DType) (any, seqRun) {
			r := nn.NewRotaryEncoding(6, nn.RotaryEncodingConfig{HalfSplit: true})
			return r, at(r.ForwardAt, 11)
		}},
		{"positional_seq_first", func(tensor.Device, tensor.DType) (any, seqRun) {
			p := nn.NewPositionalEncoding(8)
			return p, at(p.ForwardAt, 0)
		}},
		{"positional_batch_first_offset", func(tensor.Device, tensor.DType) (any, seqRun) {
			p := nn.NewPositionalEncoding(8, nn.PositionalEncodingConfig{BatchFirst: true, Dropout: 0.5})
			nn.Eval(p)
			return p, at(p.ForwardAt, 4990)
		}},
		{"positional_unbatched", func(tensor.Device, tensor.DType) (any, seqRun) {
			p := nn.NewPositionalEncoding(4)
			return p, at(p.ForwardAt, 2)
		}},
		{"swiglu", func(dev tensor.Device, dt tensor.DType) (any, seqRun) {
			s := nn.NewSwiGLU(dev, 6, 10, nn.SwiGLUConfig{DType: dt})
			return s, func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"out": s.Forward(in["x"])}
			}
		}},
		{"swiglu_bias", func(dev tensor.Device, dt tensor.DType) (any, seqRun) {
			s := nn.NewSwiGLU(dev, 6, 10, nn.SwiGLUConfig{Bias: true, DType: dt})
			return s, func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"out": s.Forward(in["x"])}
			}
		}},
	}
	if len(cases) != len(fixtures) {
		t.Errorf("%d cases for %d fixtures", len(cases), len(fixtures))
	}
	for _, c := range cases {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			t.Run(fmt.Sprint(c.name, "/", dt), func(t *testing.T) {
				fc, ok := fixtures[c.name]
				if !ok {
					t.Fatalf("no fixture %s", c.name)
				}
				rtol, atol := 1e-5, 1e-6
				if dt == tensor.Float64 {
					rtol, atol = 1e-12, 1e-12
				}
				testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
					m, run := c.build(dev.Autodiff(), dt)
					checkSeqFixtureIn(t, dev, fc, m, run, dt == tensor.Float64, rtol, atol)
				})
			})
		}
	}
}

// TestRotaryEncodingBurnExample checks the interleaved layout against the
// worked example of Burn's RotaryEncoding tests (d_model 4, positions 0
// and 1).
func TestRotaryEncodingBurnExample(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromFloat32s(dev, seq(1, 16), 2, 2, 4)
		got := nn.NewRotaryEncoding(4).Forward(x)
		want := []float64{1, 2, 3, 4, -2.3473, 7.4492, 6.9197, 8.0696, 9, 10, 11, 12, -4.7567, 18.5034, 14.8393, 16.1492}
		testutil.AssertValues(t, "rotated", got, []int{2, 2, 4}, want, 0, 1e-4)
	})
}

// TestRotaryEncodingRelative checks the property RoPE exists for: the
// score between a rotated query at position m and a rotated key at n
// depends only on m − n.
func TestRotaryEncodingRelative(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, half := range []bool{false, true} {
			r := nn.NewRotaryEncoding(8, nn.RotaryEncodingConfig{HalfSplit: half})
			q := testutil.RandFloat64(dev, 1, -1, 1, 1, 8)
			k := testutil.RandFloat64(dev, 2, -1, 1, 1, 8)
			score := func(m, n int) float64 {
				return r.ForwardAt(q, m).Mul(r.ForwardAt(k, n)).Sum().Item()
			}
			if a, b := score(5, 2), score(103, 100); math.Abs(a-b) > 1e-9 {
				t.Errorf("half split %v: score(5, 2) = %v, score(103, 100) = %v", half, a, b)
			}
		}
	})
}

// TestPositionalGradCheck checks gradients through RotaryEncoding (a
// strided input), PositionalEncoding and SwiGLU against finite
// differences.
func TestPositionalGradCheck(t *testing.T) {
	testutil.RunGradCases(t, []testutil.GradCase{
		{Name: "rope interleaved transposed input", F: func(in []*tensor.Tensor) *tensor.Tensor {
			return nn.NewRotaryEncoding(4).ForwardAt(in[0].Transpose(1, 2), 3)
		}, Inputs: func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{testutil.RandFloat64(dev, 1, -1, 1, 2, 4, 3, 4)}
		}},
		{Name: "rope half split", F: func(in []*tensor.Tensor) *tensor.Tensor {
			return nn.NewRotaryEncoding(6, nn.RotaryEncodingConfig{HalfSplit: true}).Forward(in[0])
		}, Inputs: func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{testutil.RandFloat64(dev, 2, -1, 1, 3, 6)}
		}},
		{Name: "positional", F: func(in []*tensor.Tensor) *tensor.Tensor {
			return nn.NewPositionalEncoding(4).Forward(in[0])
		}, Inputs: func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{testutil.RandFloat64(dev, 3, -1, 1, 3, 2, 4)}
		}},
		{Name: "swiglu", F: func(in []*tensor.Tensor) *tensor.Tensor {
			s := &nn.SwiGLU{W1: &nn.Linear{Weight: nn.NewParam(in[1])}, W2: &nn.Linear{Weight: nn.NewParam(in[2])},
				W3: &nn.Linear{Weight: nn.NewParam(in[3])}}
			return s.Forward(in[0])
		}, Inputs: func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{testutil.RandFloat64(dev, 4, -1, 1, 2, 3), testutil.RandFloat64(dev, 5, -1, 1, 4, 3),
				testutil.RandFloat64(dev, 6, -1, 1, 3, 4), testutil.RandFloat64(dev, 7, -1, 1, 4, 3)}
		}},
	})
}

// TestPositionalDropoutAndNames checks PositionalEncoding's dropout modes
// and that none of these layers has parameters beyond SwiGLU's w1, w2, w3.
func TestPositionalDropoutAndNames(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dev.Seed(2)
		p := nn.NewPositionalEncoding(8, nn.PositionalEncodingConfig{Dropout: 0.5})
		x := tensor.Randn(dev, 4, 2, 8)
		nn.Eval(p)
		e := p.Forward(x)
		nn.Train(p)
		if p.Forward(x).AllClose(e, 1e-6, 1e-6) {
			t.Errorf("training mode applied no dropout")
		}
		if n := len(nn.StateDict(p)) + len(nn.StateDict(nn.NewRotaryEncoding(4))); n != 0 {
			t.Errorf("%d state entries, want none", n)
		}
		var names []string
		for k := range nn.StateDict(nn.NewSwiGLU(dev, 4, 6)) {
			names = append(names, k)
		}
		if len(names) != 3 {
			t.Errorf("SwiGLU state %v, want w1.weight, w2.weight, w3.weight", names)
		}
		if got := nn.NewSwiGLU(dev, 4, 6).W2.Weight.Shape(); fmt.Sprint(got) != "[4 6]" {
			t.Errorf("w2.weight %v, want [4 6]", got)
		}
	})
}

// TestPositionalBadInput checks the errors of the three layers.
func TestPositionalBadInput(t *testing.T) {
	cases := []struct {
		name      string
		fn        func(dev tensor.Device)
		kind      error
		fragments []string
	}{
		{"rope wrong dim", func(dev tensor.Device) { nn.NewRotaryEncoding(8).Forward(tensor.Zeros(dev, 2, 5, 6)) }, tensor.ErrShape,
			[]string{"nn.RotaryEncoding: expects input [..., T, 8], got [2 5 6]"}},
		{"rope rank 1", func(dev tensor.Device) { nn.NewRotaryEncoding(8).Forward(tensor.Zeros(dev, 8)) }, tensor.ErrShape,
			[]string{"nn.RotaryEncoding", "got [8]"}},
		{"rope integer", func(dev tensor.Device) { nn.NewRotaryEncoding(2).Forward(tensor.ZerosOf(dev, tensor.Int64, 3, 2)) },
			tensor.ErrDType, []string{"nn.RotaryEncoding", "int64"}},
		{"rope negative start", func(dev tensor.Device) { nn.NewRotaryEncoding(2).ForwardAt(tensor.Zeros(dev, 3, 2), -1) },
			tensor.ErrArgument, []string{"start position -1"}},
		{"rope odd dim", func(tensor.Device) { nn.NewRotaryEncoding(5) }, tensor.ErrArgument, []string{"nn.NewRotaryEncoding", "even"}},
		{"positional wrong width", func(dev tensor.Device) { nn.NewPositionalEncoding(8).Forward(tensor.Zeros(dev, 5, 2, 4)) },
			tensor.ErrShape, []string{"nn.PositionalEncoding: expects input [T, N, 8] (or [T, 8] unbatched), got [5 2 4]"}},
		{"positional too long", func(dev tensor.Device) {
			nn.NewPositionalEncoding(4, nn.PositionalEncodingConfig{MaxLen: 10, BatchFirst: true}).ForwardAt(tensor.Zeros(dev, 1, 4, 4), 8)
		}, tensor.ErrShape, []string{"positions 8…11", "exceed MaxLen 10"}},
		{"positional odd", func(tensor.Device) { nn.NewPositionalEncoding(3) }, tensor.ErrArgument, []string{"nn.NewPositionalEncoding"}},
		{"swiglu wrong dim", func(dev tensor.Device) { nn.NewSwiGLU(dev, 4, 6).Forward(tensor.Zeros(dev, 2, 6)) }, tensor.ErrShape,
			[]string{"nn.SwiGLU: expects input [..., 4], got [2 6]"}},
		{"swiglu zero hidden", func(dev tensor.Device) { nn.NewSwiGLU(dev, 4, 0) }, tensor.ErrArgument, []string{"nn.NewSwiGLU"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) { expectPanic(t, func() { c.fn(dev) }, c.kind, c.fragments...) })
		})
	}
}

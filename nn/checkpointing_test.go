package nn_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// checkpointEncoderRun trains an 8-layer transformer encoder (batch 8, 128
// positions, width 64, 4 heads, feed-forward 256, dropout 0.1) with a
// linear head for 10 AdamW steps on a device of its own, checkpointing
// each layer or not, and returns the losses and the device's peak memory.
func checkpointEncoderRun(t *testing.T, checkpoint bool) (losses []float64, peak int64) {
	start := time.Now()
	defer func() { t.Logf("checkpoint %v: 10 steps in %v", checkpoint, time.Since(start).Round(time.Millisecond)) }()
	dev := testutil.FreshDevices(t)[0]
	ad := dev.Autodiff()
	ad.Seed(5)
	var enc *nn.TransformerEncoder
	var head *nn.Linear
	tensor.NoScope(func() {
		layer := nn.NewTransformerEncoderLayer(ad, 64, 4, nn.TransformerLayerConfig{DimFeedforward: 256, BatchFirst: true})
		enc = nn.NewTransformerEncoder(layer, 8, nil)
		head = nn.NewLinear(ad, 64, 16)
	})
	var body nn.Module = enc
	if checkpoint {
		body = nn.NewCheckpointedEncoder(enc)
	}
	model := nn.NewSequential(body, head)
	defer nn.Release(model)
	x := tensor.Randn(ad, 8, 128, 64)
	y := tensor.RandInt(ad, 0, 16, 8, 128)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
	for range 10 {
		tensor.Scope(func() {
			logits := model.Forward(x).Reshape(-1, 16)
			loss := nn.CrossEntropy(logits, y.Reshape(-1), nn.CrossEntropyOptions{})
			opt.Step(model, loss.Backward())
			losses = append(losses, loss.Item())
		})
	}
	opt.ZeroState()
	return losses, dev.MemoryStats().PeakBytes
}

// TestCheckpointedEncoderTrainsInLessMemory is issue 22's check: the same
// 8-layer transformer trained for 10 steps with each layer checkpointed
// peaks at no more than 40% of the device memory the plain one needs, with
// the same loss at every step within 1e-6.
func TestCheckpointedEncoderTrainsInLessMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("measures peak memory over 10 training steps; the plain run checks it")
	}
	plain, plainPeak := checkpointEncoderRun(t, false)
	ckpt, ckptPeak := checkpointEncoderRun(t, true)
	ratio := float64(ckptPeak) / float64(plainPeak)
	t.Logf("peak memory: plain %s, checkpointed %s (%.1f%%)", tensor.FormatBytes(plainPeak), tensor.FormatBytes(ckptPeak), 100*ratio)
	t.Logf("losses plain %v", plain)
	t.Logf("losses checkpointed %v", ckpt)
	if ratio > 0.40 {
		t.Errorf("checkpointed training peaked at %.1f%% of the plain one's memory, want at most 40%%", 100*ratio)
	}
	for i := range plain {
		if d := math.Abs(plain[i] - ckpt[i]); d > 1e-6 || math.IsNaN(d) {
			t.Errorf("step %d: loss %v checkpointed, %v plain (diff %g)", i, ckpt[i], plain[i], d)
		}
	}
	if !(plain[9] < plain[0]) {
		t.Errorf("loss did not fall: %v → %v", plain[0], plain[9])
	}
}

// TestCheckpointedGradientsMatchPlain compares, on every test device and in
// float32 and float64, the gradients of every parameter and of the input
// through a small encoder (dropout on, so the replayed masks matter) and a
// Sequential, checkpointed and not.
func TestCheckpointedGradientsMatchPlain(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				ad := dev.Autodiff()
				ad.Seed(3)
				layer := nn.NewTransformerEncoderLayer(ad, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, DType: dt, Dropout: 0.2})
				enc := nn.NewTransformerEncoder(layer, 2, nn.NewLayerNorm(ad, []int{8}, nn.LayerNormConfig{DType: dt}))
				seq := nn.NewSequential(nn.NewLinear(ad, 8, 8, nn.LinearConfig{DType: dt}), nn.GELU{}, nn.NewDropout(0.3),
					nn.NewLinear(ad, 8, 8, nn.LinearConfig{DType: dt}))
				defer nn.Release(enc)
				defer nn.Release(seq)
				// a transposed (non-contiguous) input: [S, N, E] read from [N, S, E]
				x0 := tensor.Randn(ad, 3, 5, 8).To(dt).Detach()
				type model struct {
					name        string
					plain, ckpt nn.Module
					params      any
				}
				for _, m := range []model{
					{"encoder", enc, nn.NewCheckpointedEncoder(enc), enc},
					{"sequential", seq, nn.CheckpointedSequential(seq), seq},
					{"wrapped", seq, nn.NewCheckpointed(seq), seq},
				} {
					grads := func(mod nn.Module) ([]float64, [][]float64) {
						x := x0.Transpose(0, 1).Detach().RequireGrad()
						ad.Seed(9)
						g := mod.Forward(x).Square().Sum().Backward()
						var ps [][]float64
						for _, np := range nn.Params(m.params) {
							ps = append(ps, np.Param.Grad(g).Float64s())
						}
						return g.Get(x).Float64s(), ps
					}
					gx1, gp1 := grads(m.plain)
					gx2, gp2 := grads(m.ckpt)
					tol := 1e-12
					if dt == tensor.Float32 {
						tol = 1e-5
					}
					closeAll(t, m.name+" input gradient", gx2, gx1, tol)
					for i := range gp1 {
						closeAll(t, m.name+" parameter gradient", gp2[i], gp1[i], tol)
					}
				}
			})
		})
	}
}

func closeAll(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d]: %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestCheckpointedKeepsNames(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	enc := nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(ad, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16}), 2, nil)
	seq := nn.NewSequential(nn.NewLinear(ad, 4, 4), nn.ReLU{}, nn.NewLinear(ad, 4, 2))
	names := func(m any) []string {
		var out []string
		for _, np := range nn.Params(m) {
			out = append(out, np.Name)
		}
		return out
	}
	if a, b := names(enc), names(nn.NewCheckpointedEncoder(enc)); !slices.Equal(a, b) {
		t.Errorf("checkpointed encoder names %v, want %v", b, a)
	}
	if a, b := names(seq), names(nn.CheckpointedSequential(seq)); !slices.Equal(a, b) {
		t.Errorf("checkpointed sequential names %v, want %v", b, a)
	}
	if n := names(nn.NewCheckpointed(seq)); len(n) != 4 || n[0] != "Module.0.weight" {
		t.Errorf("wrapped names %v", n)
	}
	nn.Eval(nn.NewCheckpointedEncoder(enc))
	if nn.IsTraining(enc) {
		t.Error("Eval on the checkpointed encoder left the encoder training")
	}
}

func TestCheckpointedBadInput(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	lin := nn.NewLinear(ad, 4, 4)
	cases := []struct {
		name string
		run  func()
		want error
	}{
		{"nil module", func() { nn.NewCheckpointed(nil) }, tensor.ErrArgument},
		{"nil encoder", func() { nn.NewCheckpointedEncoder(nil) }, tensor.ErrArgument},
		{"nil function", func() { nn.Checkpoint(nil, tensor.Randn(ad, 2, 4), lin) }, tensor.ErrArgument},
		{"wrong shape", func() { nn.NewCheckpointed(lin).Forward(tensor.Randn(ad, 2, 3)) }, tensor.ErrShape},
		{"parameter of another module", func() {
			other := nn.NewLinear(ad, 4, 4)
			y := nn.Checkpoint(func(x *tensor.Tensor) *tensor.Tensor { return other.Forward(lin.Forward(x)) }, tensor.Randn(ad, 2, 4), lin)
			y.Sum().Backward()
		}, tensor.ErrArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := tensor.Try(c.run); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want an error wrapping %v", err, c.want)
			}
		})
	}
}

// TestCheckpointedStepsAsideInEval checks that evaluation mode runs the
// plain module, recording no checkpoint node (what ONNX export needs),
// and training mode records one per checkpointed layer.
func TestCheckpointedStepsAsideInEval(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	seq := nn.NewSequential(nn.NewLinear(ad, 4, 4), nn.NewDropout(0.1), nn.NewLinear(ad, 4, 2))
	count := func(y *tensor.Tensor) int {
		n := 0
		autodiff.Walk([]*autodiff.Node{y.Node()}, func(nd *autodiff.Node) {
			if nd.Op == "checkpoint" {
				n++
			}
		})
		return n
	}
	x := tensor.Randn(ad, 3, 4)
	for _, m := range []nn.Module{nn.CheckpointedSequential(seq), nn.NewCheckpointed(seq)} {
		nn.Train(m)
		train := count(m.Forward(x))
		nn.Eval(m)
		eval := count(m.Forward(x))
		if train == 0 || eval != 0 {
			t.Errorf("%T: %d checkpoint nodes in training, %d in evaluation; want some, then none", m, train, eval)
		}
	}
}

package nn_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

func TestDropout(t *testing.T) {
	const p, rows, cols = 0.3, 200, 100
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		d := nn.NewDropout(p)
		x := tensor.Ones(ad, rows, cols).RequireGrad()
		dev.Seed(5)
		y := d.Forward(x)
		vals := y.Float64s()
		zeros := 0
		for _, v := range vals {
			switch {
			case v == 0:
				zeros++
			case float32(v) != float32(1/(1-p)):
				t.Fatalf("kept value %v, want 1/(1−p) = %v", v, 1/(1-p))
			}
		}
		frac := float64(zeros) / float64(len(vals))
		if sd := math.Sqrt(p * (1 - p) / float64(len(vals))); math.Abs(frac-p) > 5*sd {
			t.Errorf("dropped %v of the elements, want %v", frac, p)
		}

		// The gradient is the scaled mask: y itself, for x = 1.
		g := y.Sum().Backward().Get(x)
		if fmt.Sprint(g.Float64s()) != fmt.Sprint(vals) {
			t.Errorf("gradient is not the scaled mask")
		}

		// The same seed gives the same mask; the stream moves on otherwise.
		dev.Seed(5)
		again := d.Forward(x).Float64s()
		other := d.Forward(x).Float64s()
		if fmt.Sprint(again) != fmt.Sprint(vals) {
			t.Errorf("reseeding gave another mask")
		}
		if fmt.Sprint(other) == fmt.Sprint(vals) {
			t.Errorf("two draws gave the same mask")
		}

		// Evaluation mode and p = 0 return the input itself.
		nn.Eval(d)
		if d.Forward(x) != x {
			t.Errorf("Eval: Forward is not the identity")
		}
		nn.Train(d)
		if nn.NewDropout(0).Forward(x) != x {
			t.Errorf("p = 0: Forward is not the identity")
		}
	})
}

func TestDropout2d(t *testing.T) {
	const p = 0.5
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		d := nn.NewDropout2d(p)
		for _, shape := range [][]int{{20, 50, 3, 2}, {400, 2, 3}} {
			x := tensor.Ones(dev, shape...)
			vals := d.Forward(x).Float64s()
			plane := shape[len(shape)-1] * shape[len(shape)-2]
			planes := len(vals) / plane
			dropped := 0
			for i := range planes {
				first := vals[i*plane]
				if first != 0 && first != 1/(1-p) {
					t.Fatalf("%v: value %v, want 0 or %v", shape, first, 1/(1-p))
				}
				for _, v := range vals[i*plane : (i+1)*plane] {
					if v != first {
						t.Fatalf("%v: channel %d is partly dropped", shape, i)
					}
				}
				if first == 0 {
					dropped++
				}
			}
			frac := float64(dropped) / float64(planes)
			if sd := math.Sqrt(p * (1 - p) / float64(planes)); math.Abs(frac-p) > 5*sd {
				t.Errorf("%v: dropped %v of the channels, want %v", shape, frac, p)
			}
		}
		x := tensor.Ones(dev, 2, 3, 4, 4)
		dev.Seed(3)
		a := d.Forward(x).Float64s()
		dev.Seed(3)
		if fmt.Sprint(d.Forward(x).Float64s()) != fmt.Sprint(a) {
			t.Errorf("reseeding gave another mask")
		}
		nn.Eval(d)
		if d.Forward(x) != x {
			t.Errorf("Eval: Forward is not the identity")
		}
	})
}

// cnn is a model holding a Sequential in a field, as torchvision's models
// hold "features".
type cnn struct {
	Features nn.Sequential `kiln:"features"`
	Head     *nn.Linear    `kiln:"classifier"`
}

func TestSequentialNames(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		seq := nn.NewSequential(
			nn.NewConv2d(dev, 1, 4, 3),
			nn.NewBatchNorm2d(dev, 4),
			nn.ReLU{},
			nn.NewDropout(0.2),
			nn.NewFlatten(),
			nn.NewLinear(dev, 4*4*4, 2, nn.LinearConfig{NoBias: true}),
		)
		want := "0.weight 0.bias 1.weight 1.bias 1.running_mean 1.running_var 1.num_batches_tracked 5.weight"
		if got := strings.Join(keys(nn.StateDict(seq)), " "); got != sortedWords(want) {
			t.Errorf("state dict keys %q, want %q", got, sortedWords(want))
		}
		m := &cnn{Features: seq, Head: nn.NewLinear(dev, 2, 3)}
		var names []string
		for _, np := range nn.Params(m) {
			names = append(names, np.Name)
		}
		if got, want := strings.Join(names, " "),
			"features.0.weight features.0.bias features.1.weight features.1.bias features.5.weight classifier.weight classifier.bias"; got != want {
			t.Errorf("names %q, want %q", got, want)
		}

		// Modes reach the layers inside the slice.
		nn.Eval(m)
		if seq[1].(*nn.BatchNorm2d).Training() || seq[3].(*nn.Dropout).Training() || nn.IsTraining(m) {
			t.Errorf("Eval did not reach the Sequential's layers")
		}
		nn.Train(seq)
		if !seq[1].(*nn.BatchNorm2d).Training() || !seq[3].(*nn.Dropout).Training() {
			t.Errorf("Train on a Sequential did not reach its layers")
		}

		// Forward chains the layers: [2 1 6 6] → conv [2 4 4 4] → … → [2 2].
		y := seq.Forward(tensor.Randn(dev, 2, 1, 6, 6))
		if fmt.Sprint(y.Shape()) != "[2 2]" {
			t.Errorf("output shape %v, want [2 2]", y.Shape())
		}

		// Every layer, parameterless ones included, is a row of the summary.
		s := nn.Summary(seq).String()
		for _, row := range [][2]string{{"├─0 ", "nn.Conv2d"}, {"├─2 ", "nn.ReLU"}, {"├─4 ", "nn.Flatten"},
			{"└─5 ", "nn.Linear"}} {
			found := false
			for _, line := range strings.Split(s, "\n") {
				found = found || (strings.HasPrefix(line, row[0]) && strings.Contains(line, row[1]))
			}
			if !found {
				t.Errorf("summary lacks a row %q … %q:\n%s", row[0], row[1], s)
			}
		}
	})
}

func keys(sd map[string]*tensor.Tensor) []string {
	var out []string
	for k := range sd {
		out = append(out, k)
	}
	return sortStrings(out)
}

func sortedWords(s string) string { return strings.Join(sortStrings(strings.Fields(s)), " ") }

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestDefaultInitialisation checks each layer's initial parameters against
// PyTorch's defaults: bounds of the uniform draws, constant norm
// parameters, a zero padding row.
func TestDefaultInitialisation(t *testing.T) {
	within := func(t *testing.T, what string, p *nn.Param, bound float64) {
		t.Helper()
		v := p.Float64s()
		_, _, lo, hi := moments(v)
		// With 30 values or more, the spread is at least half the range
		// but for a chance under 2⁻²⁵.
		if lo < -bound || hi > bound || (len(v) >= 30 && hi-lo < bound) {
			t.Errorf("%s in [%v, %v], want U(−%v, %v)", what, lo, hi, bound, bound)
		}
	}
	constant := func(t *testing.T, what string, p *nn.Param, v float64) {
		t.Helper()
		for _, x := range p.Float64s() {
			if x != v {
				t.Fatalf("%s holds %v, want all %v", what, x, v)
			}
		}
	}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		conv := nn.NewConv2d(ad, 6, 8, 3, nn.ConvConfig{Groups: 2}) // fan-in 3·3·3
		within(t, "conv weight", conv.Weight, 1/math.Sqrt(27))
		within(t, "conv bias", conv.Bias, 1/math.Sqrt(27))
		if !conv.Weight.RequiresGrad() {
			t.Errorf("conv weight does not require gradients on an autodiff device")
		}
		c1 := nn.NewConv1d(dev, 4, 5, 5)
		within(t, "conv1d weight", c1.Weight, 1/math.Sqrt(20))
		ct := nn.NewConvTranspose2d(dev, 4, 6, 2) // weight [4 6 2 2], fan-in 6·2·2
		if fmt.Sprint(ct.Weight.Shape()) != "[4 6 2 2]" {
			t.Errorf("conv transpose weight %v, want [4 6 2 2]", ct.Weight.Shape())
		}
		within(t, "conv transpose weight", ct.Weight, 1/math.Sqrt(24))
		within(t, "conv transpose bias", ct.Bias, 1/math.Sqrt(24))
		bl := nn.NewBilinear(dev, 5, 3, 40)
		within(t, "bilinear weight", bl.Weight, 1/math.Sqrt(5))
		within(t, "bilinear bias", bl.Bias, 1/math.Sqrt(5))

		e := nn.NewEmbedding(ad, 500, 40, nn.EmbeddingConfig{Padded: true, PaddingIndex: -2})
		if e.PaddingIndex != 498 {
			t.Errorf("padding index %d, want 498", e.PaddingIndex)
		}
		w := e.Weight.Float64s()
		for _, v := range w[498*40 : 499*40] {
			if v != 0 {
				t.Fatalf("padding row holds %v", v)
			}
		}
		if mean, std, _, _ := moments(w); math.Abs(mean) > 0.03 || math.Abs(std-1) > 0.03 {
			t.Errorf("embedding weight mean %v std %v, want N(0, 1)", mean, std)
		}
		if !e.Weight.RequiresGrad() {
			t.Errorf("embedding weight does not require gradients")
		}

		bn := nn.NewBatchNorm1d(ad, 3)
		constant(t, "batch norm weight", bn.Weight, 1)
		constant(t, "batch norm bias", bn.Bias, 0)
		constant(t, "running mean", bn.RunningMean, 0)
		constant(t, "running var", bn.RunningVar, 1)
		if bn.NumBatchesTracked.DType() != tensor.Int64 || bn.NumBatchesTracked.Dims() != 0 ||
			!bn.RunningMean.IsBuffer() || bn.RunningMean.RequiresGrad() {
			t.Errorf("batch norm buffers are not an Int64 scalar count and statistics buffers")
		}
		if bn.Eps != 1e-5 || bn.Momentum != 0.1 {
			t.Errorf("batch norm eps %v momentum %v, want 1e-5 and 0.1", bn.Eps, bn.Momentum)
		}
		gn := nn.NewGroupNorm(dev, 2, 4)
		constant(t, "group norm weight", gn.Weight, 1)
		constant(t, "group norm bias", gn.Bias, 0)
		constant(t, "rms norm weight", nn.NewRMSNorm(dev, []int{2, 3}).Weight, 1)
	})
}

// TestBatchNormEvalIgnoresBatch checks that in evaluation mode each sample
// is normalised by the running statistics alone, and no statistic moves.
func TestBatchNormEvalIgnoresBatch(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		bn := nn.NewBatchNorm2d(dev, 2, nn.BatchNormConfig{Eps: 1e-12})
		bn.RunningMean.Assign(floats(dev, []float32{1, -1}, 2))
		bn.RunningVar.Assign(floats(dev, []float32{4, 0.25}, 2))
		nn.Eval(bn)
		x := floats(dev, []float32{3, 5, -1, 0}, 1, 2, 2, 1)
		assertValues(t, "eval output", bn.Forward(x), []float64{1, 2, 0, 2})
		assertValues(t, "running mean", bn.RunningMean.Tensor, []float64{1, -1})
		if n := bn.NumBatchesTracked.Item(); n != 0 {
			t.Errorf("num_batches_tracked %v after an eval step, want 0", n)
		}
		nn.Train(bn)
		bn.Forward(tensor.Randn(dev, 4, 2, 3, 3))
		bn.Forward(tensor.Randn(dev, 4, 2, 3, 3))
		if n := bn.NumBatchesTracked.Item(); n != 2 {
			t.Errorf("num_batches_tracked %v after two training steps, want 2", n)
		}
	})
}

func TestMaxPool2dIndices(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := floats(dev, []float32{1, 5, 2, 0, 3, 4, 9, 8, 7, 6, 1, 2, 0, 0, 3, 4}, 1, 1, 4, 4)
		v, i := nn.NewMaxPool2d(2).ForwardWithIndices(x)
		assertValues(t, "values", v, []float64{5, 9, 7, 4})
		assertValues(t, "indices", i, []float64{1, 6, 8, 15})
	})
}

// TestActivationsAreValues checks that the parameterless modules are
// plain values (several in one Sequential stay distinct rows) that the
// walk does not mistake for parameters.
func TestActivationsAreValues(t *testing.T) {
	mods := []nn.Module{nn.ReLU{}, nn.LeakyReLU{}, nn.ReLU6{}, nn.ELU{}, nn.SELU{}, nn.CELU{}, nn.GELU{},
		nn.Sigmoid{}, nn.LogSigmoid{}, nn.Hardsigmoid{}, nn.SiLU{}, nn.Hardswish{}, nn.Mish{}, nn.Softplus{},
		nn.Softsign{}, nn.Tanh{}, nn.Softmax{}, nn.LogSoftmax{}, nn.Identity{}, nn.Flatten{}, nn.MaxPool2d{},
		nn.AvgPool2d{}, nn.AdaptiveAvgPool2d{}}
	seq := nn.NewSequential(mods...)
	if n := len(nn.Params(seq)); n != 0 {
		t.Errorf("%d parameters, want none", n)
	}
	if n := len(nn.Summary(seq).Root.Modules); n != len(mods) {
		t.Errorf("summary shows %d modules, want %d", n, len(mods))
	}
}

// TestNormHalfPrecision checks that normalisation layers with float32
// parameters give half-precision outputs for half-precision inputs, close
// to the float32 result.
func TestNormHalfPrecision(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		layers := map[string]nn.Module{
			"batch norm": nn.NewBatchNorm2d(dev, 4),
			"group norm": nn.NewGroupNorm(dev, 2, 4),
			"rms norm":   nn.NewRMSNorm(dev, []int{3}),
			"layer norm": nn.NewLayerNorm(dev, []int{3}),
		}
		// fixed values of magnitude about 1: with random ones a row of
		// small values now and then met RMSNorm's default epsilon (the
		// dtype's, 2^-7 for bfloat16, as in PyTorch), which moves the
		// result by more than the half-precision tolerance
		data := make([]float32, 2*4*2*3)
		for i := range data {
			data[i] = float32(1 + 1.5*math.Sin(1.3*float64(i)+0.4))
		}
		x := tensor.FromFloat32s(dev, data, 2, 4, 2, 3)
		for name, l := range layers {
			for _, half := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
				nn.Eval(l)
				want := l.Forward(x).Float64s()
				y := l.Forward(x.To(half))
				if y.DType() != half {
					t.Errorf("%s: %s input gives %s output", name, half, y.DType())
					continue
				}
				for i, v := range y.Float64s() {
					if math.Abs(v-want[i]) > 0.02*(1+math.Abs(want[i])) {
						t.Errorf("%s %s: element %d = %v, float32 gives %v", name, half, i, v, want[i])
						break
					}
				}
			}
		}
	})
}

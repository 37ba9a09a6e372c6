package tensor_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// actCEOptions builds the options of a cross-entropy fixture case on dev.
func actCEOptions(c fixtureCase, reduction string, dev tensor.Device, dtype tensor.DType) tensor.CrossEntropyOptions {
	opts := tensor.CrossEntropyOptions{Reduction: reduction}
	if w, ok := c["weight"]; ok {
		opts.Weight = w.Tensor(dev).To(dtype)
	}
	if ig, ok := c["ignore"]; ok {
		v := int(ig.Float64s()[0])
		opts.IgnoreIndex = &v
	}
	if s, ok := c["smoothing"]; ok {
		opts.LabelSmoothing = s.Float64s()[0]
	}
	return opts
}

// TestCrossEntropyFixtures compares CrossEntropyFromLogits and its
// gradients with PyTorch: class indices and probabilities, class weights,
// ignore indices (default and explicit, class 0 included), label smoothing,
// each reduction, huge logits, 3-D and 4-D logits and unbatched [C] logits.
func TestCrossEntropyFixtures(t *testing.T) {
	all := loadFixtures(t, "act.json")
	names := actCases(all, "cross_entropy/")
	if len(names) < 45 {
		t.Errorf("only %d cross-entropy fixtures", len(names))
	}
	for _, name := range names {
		c := all[name]
		reduction := name[strings.LastIndex(name, "/")+1:]
		probs := c["target"].DType != "int64"
		grads := []string{"dlogits", ""}
		if probs {
			grads[1] = "dtarget"
		}
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			rtol, atol := 1e-11, 1e-12
			if dt == tensor.Float32 {
				rtol, atol = 1e-4, 1e-5
			}
			t.Run(name+"/"+dt.String(), func(t *testing.T) {
				forEachDevice(t, func(t *testing.T, dev tensor.Device) {
					opts := actCEOptions(c, reduction, dev, dt)
					f := func(in []*tensor.Tensor) *tensor.Tensor { return tensor.CrossEntropyFromLogits(in[0], in[1], opts) }
					actRun(t, dev, c, []string{"logits", "target"}, grads, f, dt, rtol, atol)
				})
			})
		}
	}
}

// TestCrossEntropyGradients checks the backward by finite differences,
// including probability targets (whose gradient is checked too) and
// logits that are transposed or permuted views.
func TestCrossEntropyGradients(t *testing.T) {
	idx := func(d tensor.Device, v []int64, shape ...int) *tensor.Tensor {
		return tensor.FromInt64s(d, v, shape...)
	}
	zero := 0
	cases := []struct {
		name   string
		opts   func(d tensor.Device) tensor.CrossEntropyOptions
		inputs func(d tensor.Device) []*tensor.Tensor
		view   func(l *tensor.Tensor) *tensor.Tensor
	}{
		{"index mean", nil, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 4, 5), idx(d, []int64{0, 4, 2, 2}, 4)}
		}, nil},
		{"index sum", func(tensor.Device) tensor.CrossEntropyOptions { return tensor.CrossEntropyOptions{Reduction: "sum"} },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 4, 5), idx(d, []int64{0, 4, 2, 2}, 4)}
			}, nil},
		{"index none ignore 0", func(tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{Reduction: "none", IgnoreIndex: &zero}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 4, 5), idx(d, []int64{0, 4, 2, 1}, 4)}
		}, nil},
		{"index weight smoothing ignore mean", func(d tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{Weight: tensor.FromFloat64s(d, []float64{1, 0.5, 2, 0.1, 3}), LabelSmoothing: 0.2}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 4, 5), idx(d, []int64{0, -100, 2, 3}, 4)}
		}, nil},
		{"index smoothing ignore mean", func(tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{LabelSmoothing: 0.3}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 4, 5), idx(d, []int64{0, -100, 2, 3}, 4)}
		}, nil},
		{"index weight smoothing none", func(d tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{Weight: tensor.FromFloat64s(d, []float64{1, 0.5, 2}), LabelSmoothing: 0.1, Reduction: "none"}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 2, 3), idx(d, []int64{2, 1}, 2)}
		}, nil},
		{"index 3d permuted logits", func(tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{LabelSmoothing: 0.1}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 2, 3, 4), idx(d, []int64{0, 3, 1, 2, 2, 0}, 2, 3)}
		}, func(l *tensor.Tensor) *tensor.Tensor { return l.Permute(0, 2, 1) }},
		{"index 4d weight sum", func(d tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{Weight: tensor.FromFloat64s(d, []float64{1, 0.5, 2}), Reduction: "sum"}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 2, 3, 2, 2), idx(d, []int64{0, 1, 2, 1, 1, 1, 0, 2}, 2, 2, 2)}
		}, nil},
		{"index transposed logits", nil, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 5, 3), idx(d, []int64{4, 0, 1}, 3)}
		}, func(l *tensor.Tensor) *tensor.Tensor { return l.T() }},
		{"index unbatched", nil, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 5), tensor.FromInt64s(d, []int64{3}).Reshape()}
		}, nil},
		{"probabilities mean", nil, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 3, 4), randFloat64(d, 2, 0, 1, 3, 4)}
		}, nil},
		{"probabilities weight smoothing none", func(d tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{Weight: tensor.FromFloat64s(d, []float64{1, 0.5, 2, 0.1}), LabelSmoothing: 0.25, Reduction: "none"}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 3, 4), randFloat64(d, 2, 0, 1, 3, 4)}
		}, nil},
		{"probabilities 3d sum permuted", func(tensor.Device) tensor.CrossEntropyOptions {
			return tensor.CrossEntropyOptions{Reduction: "sum"}
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -3, 3, 2, 3, 4), randFloat64(d, 2, 0, 1, 2, 4, 3)}
		}, func(l *tensor.Tensor) *tensor.Tensor { return l.Permute(0, 2, 1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				var opts tensor.CrossEntropyOptions
				if c.opts != nil {
					opts = c.opts(dev)
				}
				gradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor {
					l := in[0]
					if c.view != nil {
						l = c.view(l)
					}
					return tensor.CrossEntropyFromLogits(l, in[1], opts)
				}, c.inputs(dev)...)
			})
		})
	}
}

// TestCrossEntropyDefaults checks that the zero options are PyTorch's
// defaults, that ignoring every position gives NaN for "mean" and 0 for
// "sum", and the single graph node.
func TestCrossEntropyDefaults(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		logits := tensor.FromFloat32s(dev, []float32{1, 2, 3, 4, 0, -1}, 2, 3)
		target := tensor.FromInt64s(dev, []int64{2, -100})
		m100 := -100
		a := tensor.CrossEntropyFromLogits(logits, target, tensor.CrossEntropyOptions{})
		b := tensor.CrossEntropyFromLogits(logits, target, tensor.CrossEntropyOptions{Reduction: "mean", IgnoreIndex: &m100})
		// Only row 0 counts: −log_softmax([1 2 3])[2].
		assertValues(t, "zero options", a, []int{}, []float64{0.40760596}, 1e-6, 0)
		assertValues(t, "explicit defaults", b, []int{}, []float64{0.40760596}, 1e-6, 0)
		none := tensor.FromInt64s(dev, []int64{-100, -100})
		assertValues(t, "all ignored mean", tensor.CrossEntropyFromLogits(logits, none, tensor.CrossEntropyOptions{}), []int{}, []float64{math.NaN()}, 0, 0)
		assertValues(t, "all ignored sum", tensor.CrossEntropyFromLogits(logits, none, tensor.CrossEntropyOptions{Reduction: "sum"}), []int{}, []float64{0}, 0, 0)
		seven := 7
		assertValues(t, "ignore index past the classes", tensor.CrossEntropyFromLogits(logits, tensor.FromInt64s(dev, []int64{7, 2}),
			tensor.CrossEntropyOptions{IgnoreIndex: &seven, Reduction: "none"}), []int{2}, []float64{0, 5.02474502}, 1e-6, 0)
		empty := tensor.CrossEntropyFromLogits(tensor.Zeros(dev, 0, 3), tensor.FromInt64s(dev, []int64{}), tensor.CrossEntropyOptions{})
		assertValues(t, "empty batch mean", empty, []int{}, []float64{math.NaN()}, 0, 0)

		ad := dev.Autodiff()
		l := tensor.Zeros(ad, 2, 3).RequireGrad()
		w := tensor.Ones(ad, 3)
		y := tensor.CrossEntropyFromLogits(l, target.ToDevice(ad), tensor.CrossEntropyOptions{Weight: w})
		n := y.Node()
		if n == nil || n.Op != "cross_entropy" || len(n.Inputs) != 3 || n.Inputs[0] != l.Node() {
			t.Errorf("node %+v, want one cross_entropy node on logits, target and weight", n)
		}
		g := y.Backward().Get(l)
		assertValues(t, "gradient", g, []int{2, 3}, []float64{1. / 3, 1. / 3, -2. / 3, 0, 0, 0}, 1e-6, 1e-7)
	})
}

// TestCrossEntropyBadInput checks the errors for mismatched shapes and
// dtypes (the messages name them) and bad options.
func TestCrossEntropyBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		logits := tensor.Zeros(dev, 5, 4)
		idx := tensor.FromInt64s(dev, []int64{0, 1, 2, 3, 0})
		probs := tensor.Zeros(dev, 5, 4)
		one := 1
		ce := func(l, t *tensor.Tensor, o tensor.CrossEntropyOptions) func() {
			return func() { tensor.CrossEntropyFromLogits(l, t, o) }
		}
		none := tensor.CrossEntropyOptions{}
		cases := []struct {
			name string
			call func()
			kind error
			want []string
		}{
			{"int32 target", ce(logits, tensor.FromInt32s(dev, []int32{0, 1, 2, 3, 0}), none), tensor.ErrDType, []string{"int32", "[5]", "int64"}},
			{"bool target", ce(logits, tensor.FromBools(dev, []bool{true, false, true, false, true}), none), tensor.ErrDType, []string{"bool"}},
			{"float64 probabilities for float32 logits", ce(logits, probs.To(tensor.Float64), none), tensor.ErrDType, []string{"float64", "float32"}},
			{"index target with class dim", ce(logits, idx.Reshape(5, 1), none), tensor.ErrShape, []string{"[5 1]", "[5 4]", "want [5]"}},
			{"index target wrong batch", ce(logits, tensor.FromInt64s(dev, []int64{0, 1}), none), tensor.ErrShape, []string{"[2]", "[5 4]"}},
			{"index target 3d logits", ce(tensor.Zeros(dev, 2, 3, 4), tensor.FromInt64s(dev, []int64{0, 1, 2, 0, 1, 2}, 2, 3), none), tensor.ErrShape, []string{"[2 3]", "[2 3 4]", "want [2 4]"}},
			{"probability target shape", ce(logits, tensor.Zeros(dev, 5, 3), none), tensor.ErrShape, []string{"[5 3]", "[5 4]"}},
			{"int logits", ce(tensor.FromInt64s(dev, []int64{1, 2}, 1, 2), tensor.FromInt64s(dev, []int64{0}), none), tensor.ErrDType, []string{"int64"}},
			{"0-d logits", ce(tensor.Scalar(dev, 1), tensor.FromInt64s(dev, []int64{0}).Reshape(), none), tensor.ErrShape, []string{"0-d"}},
			{"weight shape", ce(logits, idx, tensor.CrossEntropyOptions{Weight: tensor.Ones(dev, 3)}), tensor.ErrShape, []string{"[3]", "4 classes", "[5 4]"}},
			{"int weight", ce(logits, idx, tensor.CrossEntropyOptions{Weight: tensor.FromInt64s(dev, []int64{1, 1, 1, 1})}), tensor.ErrDType, []string{"int64"}},
			{"reduction", ce(logits, idx, tensor.CrossEntropyOptions{Reduction: "avg"}), tensor.ErrArgument, []string{`"avg"`}},
			{"smoothing above 1", ce(logits, idx, tensor.CrossEntropyOptions{LabelSmoothing: 1.5}), tensor.ErrArgument, []string{"1.5"}},
			{"smoothing negative", ce(logits, idx, tensor.CrossEntropyOptions{LabelSmoothing: -0.1}), tensor.ErrArgument, []string{"-0.1"}},
			{"ignore index with probabilities", ce(logits, probs, tensor.CrossEntropyOptions{IgnoreIndex: &one}), tensor.ErrArgument, []string{"ignore index 1"}},
		}
		for _, c := range cases {
			actExpectError(t, c.name, c.call, c.kind, "tensor.CrossEntropyFromLogits", c.want...)
		}
	})
}

// TestCrossEntropyTargetOutOfRange checks that class indices outside
// [0, C) (other than the ignore index) are reported by the device at the
// next read or Sync, as data-dependent failures are. It runs on private
// devices (not forEachDevice's) because the failure would stay sticky.
func TestCrossEntropyTargetOutOfRange(t *testing.T) {
	cases := []struct {
		name   string
		target []int64
		sync   bool
	}{
		{"index C read", []int64{0, 4, 1}, false},
		{"index C sync", []int64{0, 4, 1}, true},
		{"negative index read", []int64{0, -1, 1}, false},
		{"large negative index sync", []int64{-7, 0, 1}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, dev := range testutil.FreshDevices(t) {
				tensor.Scope(func() {
					logits := tensor.Zeros(dev.Autodiff(), 3, 4).RequireGrad()
					y := tensor.CrossEntropyFromLogits(logits, tensor.FromInt64s(dev.Autodiff(), c.target), tensor.CrossEntropyOptions{})
					y.Backward()
					var err error
					if c.sync {
						err = dev.Sync()
					} else {
						err = tensor.Try(func() { y.Item() })
					}
					if !errors.Is(err, tensor.ErrDeviceFailed) || !strings.Contains(err.Error(), "out of range") {
						t.Errorf("%s: error %v, want a device failure for an index out of range", dev, err)
					}
				})
			}
		})
	}
	// The same devices' fresh siblings run valid targets without error.
	for _, dev := range testutil.FreshDevices(t) {
		tensor.Scope(func() {
			y := tensor.CrossEntropyFromLogits(tensor.Zeros(dev, 3, 4), tensor.FromInt64s(dev, []int64{0, 3, -100}), tensor.CrossEntropyOptions{})
			if err := tensor.Try(func() { y.Item() }); err != nil || dev.Sync() != nil {
				t.Errorf("%s: valid targets failed: %v", dev, err)
			}
		})
	}
}

package nn_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// norm is a batch-norm-like module with a buffer.
type norm struct {
	Weight, Bias *nn.Param
	RunningMean  *nn.Param
	Steps        *nn.Param // an integer buffer
}

type stateModel struct {
	Embed  *nn.Param
	Blocks []*leaf
	Norm   norm
}

// newStateModel builds a model whose values start at start, so two models
// built with different starts differ everywhere.
func newStateModel(dev tensor.Device, start float32) *stateModel {
	return &stateModel{
		Embed: nn.NewParam(floats(dev, seq(start, 6), 3, 2)),
		Blocks: []*leaf{
			{Weight: nn.NewParam(floats(dev, seq(start+10, 4), 2, 2)), Bias: nn.NewParam(floats(dev, seq(start+20, 2), 2))},
			{Weight: nn.NewParam(floats(dev, seq(start+30, 4), 2, 2)), Bias: nn.NewParam(floats(dev, seq(start+40, 2), 2))},
		},
		Norm: norm{
			Weight:      nn.NewParam(floats(dev, seq(start+50, 2), 2)),
			Bias:        nn.NewParam(floats(dev, seq(start+60, 2), 2)),
			RunningMean: nn.NewBuffer(floats(dev, seq(start+70, 2), 2)),
			Steps:       nn.NewBuffer(tensor.FromInt64s(dev, []int64{int64(start)})),
		},
	}
}

var stateKeys = []string{"Blocks.0.Bias", "Blocks.0.Weight", "Blocks.1.Bias", "Blocks.1.Weight", "Embed",
	"Norm.Bias", "Norm.RunningMean", "Norm.Steps", "Norm.Weight"}

// snapshot copies every value of m to the host.
func snapshot(m any) map[string][]float64 {
	out := map[string][]float64{}
	for k, v := range nn.StateDict(m) {
		out[k] = v.Float64s()
	}
	return out
}

func assertSnapshot(t *testing.T, what string, m any, want map[string][]float64) {
	t.Helper()
	got := snapshot(m)
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], w)
		}
	}
}

func TestStateDictRoundTrip(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dev = dev.Autodiff()
		src, dst := newStateModel(dev, 1), newStateModel(dev, 100)
		sd := nn.StateDict(src)
		keys := make([]string, 0, len(sd))
		for k := range sd {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, stateKeys) {
			t.Fatalf("StateDict keys %q, want %q", keys, stateKeys)
		}
		for k, v := range sd {
			if v.RequiresGrad() {
				t.Errorf("state dict tensor %s requires grad", k)
			}
		}
		ids := map[string]uint64{}
		for _, np := range append(nn.Params(dst), nn.Buffers(dst)...) {
			ids[np.Name] = np.Param.ID()
		}
		missing, unexpected, err := nn.LoadStateDict(dst, sd)
		if err != nil || len(missing) > 0 || len(unexpected) > 0 {
			t.Fatalf("LoadStateDict: %v (missing %q, unexpected %q)", err, missing, unexpected)
		}
		assertSnapshot(t, "loaded model", dst, snapshot(src))
		for _, np := range append(nn.Params(dst), nn.Buffers(dst)...) {
			if np.Param.ID() != ids[np.Name] {
				t.Errorf("%s: id changed by loading", np.Name)
			}
			if np.Param.RequiresGrad() != !np.Param.IsBuffer() {
				t.Errorf("%s: RequiresGrad %v after loading", np.Name, np.Param.RequiresGrad())
			}
		}
		// Loading copies: later changes to the source do not reach dst.
		src.Embed.Assign(tensor.Zeros(dev, 3, 2))
		assertValues(t, "Embed after source changed", dst.Embed.Tensor, []float64{1, 2, 3, 4, 5, 6})
		// The state dict is a view: it shows the change, and releasing it leaves the model intact.
		assertValues(t, "state dict view", sd["Embed"], []float64{0, 0, 0, 0, 0, 0})
		for _, v := range sd {
			v.Release()
		}
		assertValues(t, "Embed after releasing the state dict", src.Embed.Tensor, []float64{0, 0, 0, 0, 0, 0})
	})
}

func TestLoadStateDictAcrossDevicesAndDTypes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		other := tensor.CPU()
		if dev.Kind() == "cpu" {
			other = tensor.MustDevice("strict")
		}
		src, dst := newStateModel(other, 1), newStateModel(dev, 100)
		sd := nn.StateDict(src)
		for _, k := range []string{"Embed", "Norm.RunningMean"} {
			sd[k] = sd[k].To(tensor.Float64) // float dtypes convert
		}
		if _, _, err := nn.LoadStateDict(dst, sd); err != nil {
			t.Fatal(err)
		}
		assertSnapshot(t, "loaded across devices", dst, snapshot(src))
		if dst.Embed.DType() != tensor.Float32 || !dst.Embed.Device().Same(dev) {
			t.Errorf("loading changed Embed to %s on %s", dst.Embed.DType(), dst.Embed.Device())
		}
	})
}

func TestLoadStateDictErrors(t *testing.T) {
	type tc struct {
		name           string
		edit           func(dev tensor.Device, sd map[string]*tensor.Tensor)
		wantMissing    []string
		wantUnexpected []string
		wantInError    []string
	}
	cases := []tc{
		{"missing keys", func(_ tensor.Device, sd map[string]*tensor.Tensor) {
			delete(sd, "Embed")
			delete(sd, "Norm.RunningMean")
		}, []string{"Embed", "Norm.RunningMean"}, nil, []string{"missing keys: Embed, Norm.RunningMean"}},
		{"unexpected keys", func(dev tensor.Device, sd map[string]*tensor.Tensor) {
			sd["Extra"] = tensor.Zeros(dev, 1)
			sd["Blocks.2.Weight"] = tensor.Zeros(dev, 2, 2)
		}, nil, []string{"Blocks.2.Weight", "Extra"}, []string{"unexpected keys: Blocks.2.Weight, Extra"}},
		{"mismatched shapes", func(dev tensor.Device, sd map[string]*tensor.Tensor) {
			sd["Embed"] = tensor.Zeros(dev, 2, 3)
			sd["Blocks.1.Bias"] = tensor.Zeros(dev, 3)
		}, nil, nil, []string{"Embed: shape [2 3], model has [3 2]", "Blocks.1.Bias: shape [3], model has [2]"}},
		{"integer and float dtypes do not mix", func(dev tensor.Device, sd map[string]*tensor.Tensor) {
			sd["Norm.Steps"] = tensor.Zeros(dev, 1)
			sd["Norm.Weight"] = tensor.FromInt64s(dev, []int64{1, 2})
		}, nil, nil, []string{"Norm.Steps: dtype float32, model has int64", "Norm.Weight: dtype int64, model has float32"}},
		{"nil and released tensors", func(dev tensor.Device, sd map[string]*tensor.Tensor) {
			sd["Embed"] = nil
			r := tensor.Zeros(dev, 2)
			r.Release()
			sd["Norm.Bias"] = r
		}, nil, nil, []string{"Embed: nil tensor", "Norm.Bias: released tensor"}},
		{"every kind at once", func(dev tensor.Device, sd map[string]*tensor.Tensor) {
			delete(sd, "Blocks.0.Weight")
			sd["Bogus"] = tensor.Zeros(dev, 1)
			sd["Embed"] = tensor.Zeros(dev, 6)
		}, []string{"Blocks.0.Weight"}, []string{"Bogus"},
			[]string{"missing keys: Blocks.0.Weight", "unexpected keys: Bogus", "Embed: shape [6], model has [3 2]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				src, dst := newStateModel(dev, 1), newStateModel(dev, 100)
				sd := nn.StateDict(src)
				c.edit(dev, sd)
				before := snapshot(dst)
				missing, unexpected, err := nn.LoadStateDict(dst, sd)
				if !errors.Is(err, nn.ErrStateDict) {
					t.Fatalf("LoadStateDict: %v, want ErrStateDict", err)
				}
				for _, want := range c.wantInError {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if !slices.Equal(missing, c.wantMissing) || !slices.Equal(unexpected, c.wantUnexpected) {
					t.Errorf("missing %q unexpected %q, want %q %q", missing, unexpected, c.wantMissing, c.wantUnexpected)
				}
				assertSnapshot(t, "model after a refused load", dst, before)
			})
		})
	}
}

func TestLoadStateDictPartial(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		src, dst := newStateModel(dev, 1), newStateModel(dev, 100)
		want := snapshot(dst)
		sd := nn.StateDict(src)
		delete(sd, "Embed")
		sd["Head.Weight"] = tensor.Zeros(dev, 2)
		sd["Blocks.1.Weight"] = tensor.Zeros(dev, 4)
		res, err := nn.LoadStateDictPartial(dst, sd)
		if err != nil {
			t.Fatal(err)
		}
		wantLoaded := []string{"Blocks.0.Bias", "Blocks.0.Weight", "Blocks.1.Bias", "Norm.Bias", "Norm.RunningMean",
			"Norm.Steps", "Norm.Weight"}
		checks := []struct {
			name      string
			got, want []string
		}{
			{"Loaded", res.Loaded, wantLoaded},
			{"Missing", res.Missing, []string{"Embed"}},
			{"Unexpected", res.Unexpected, []string{"Head.Weight"}},
			{"Mismatched", res.Mismatched, []string{"Blocks.1.Weight"}},
		}
		for _, c := range checks {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
			}
		}
		if r := res.Reasons["Blocks.1.Weight"]; r != "shape [4], model has [2 2]" {
			t.Errorf("reason %q", r)
		}
		if s := res.String(); !strings.Contains(s, "loaded 7") || !strings.Contains(s, "Blocks.1.Weight (shape [4]") {
			t.Errorf("String() = %q", s)
		}
		srcVals := snapshot(src)
		for _, k := range wantLoaded {
			want[k] = srcVals[k]
		}
		assertSnapshot(t, "partially loaded model", dst, want)
	})
}

func TestLoadStateDictStagingFailureLoadsNothing(t *testing.T) {
	target := tensor.MustDevice("strict")
	src, dst := newStateModel(tensor.CPU(), 1), newStateModel(target, 100)
	defer nn.Release(dst)
	before := snapshot(dst)
	stats := target.MemoryStats()
	target.SetMemoryBudget(stats.LiveBytes + 30)
	_, _, err := nn.LoadStateDict(dst, nn.StateDict(src))
	target.SetMemoryBudget(stats.BudgetBytes)
	if !errors.Is(err, tensor.ErrOutOfMemory) {
		t.Fatalf("LoadStateDict over budget: %v, want ErrOutOfMemory", err)
	}
	assertSnapshot(t, "model after a failed load", dst, before)
	if live := target.MemoryStats().LiveBytes; live != stats.LiveBytes {
		t.Errorf("failed load left %d bytes staged", live-stats.LiveBytes)
	}
}

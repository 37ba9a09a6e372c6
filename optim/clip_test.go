package optim_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// gradsFor returns parameters whose gradients (of Σ pᵢ·gᵢ) are gs.
func gradsFor(dev tensor.Device, gs []*tensor.Tensor) ([]*nn.Param, *tensor.Gradients) {
	ad := dev.Autodiff()
	ps := make([]*nn.Param, len(gs))
	var loss *tensor.Tensor
	for i, g := range gs {
		ps[i] = nn.NewParam(tensor.ZerosOf(ad, tensor.Float64, g.Shape()...))
		term := ps[i].Mul(g).Sum()
		if loss == nil {
			loss = term
		} else {
			loss = loss.Add(term)
		}
	}
	return ps, loss.Backward()
}

// TestClipMatchesPyTorch compares ClipGradNorm and ClipGradValue with
// torch.nn.utils.clip_grad_norm_ and clip_grad_value_.
func TestClipMatchesPyTorch(t *testing.T) {
	fx := testutil.LoadFixtures(t, "clip.json")
	cases := map[string]func(g *tensor.Gradients, ps []*nn.Param) *tensor.Tensor{
		"norm2":         func(g *tensor.Gradients, ps []*nn.Param) *tensor.Tensor { return optim.ClipGradNorm(g, ps, 1, 2) },
		"norm2_no_clip": func(g *tensor.Gradients, ps []*nn.Param) *tensor.Tensor { return optim.ClipGradNorm(g, ps, 100, 2) },
		"norm_inf": func(g *tensor.Gradients, ps []*nn.Param) *tensor.Tensor {
			return optim.ClipGradNorm(g, ps, 0.5, math.Inf(1))
		},
		"norm1": func(g *tensor.Gradients, ps []*nn.Param) *tensor.Tensor { return optim.ClipGradNorm(g, ps, 2, 1) },
		"norm3": func(g *tensor.Gradients, ps []*nn.Param) *tensor.Tensor { return optim.ClipGradNorm(g, ps, 1.5, 3) },
		"value": func(g *tensor.Gradients, ps []*nn.Param) *tensor.Tensor {
			optim.ClipGradValue(g, ps, 0.3)
			return nil
		},
	}
	for name, clip := range cases {
		t.Run(name, func(t *testing.T) {
			c := fx[name]
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				gs := []*tensor.Tensor{c["g0"].Tensor(dev), c["g1"].Tensor(dev), c["g2"].Tensor(dev)}
				ps, grads := gradsFor(dev, gs)
				total := clip(grads, ps)
				if want, ok := c["total_norm"]; ok {
					testutil.AssertClose(t, "total norm", total, want, 1e-12, 0)
				}
				for i, p := range ps {
					testutil.AssertClose(t, "clipped gradient", grads.Get(p.Tensor), c[[]string{"clipped0", "clipped1", "clipped2"}[i]], 1e-12, 0)
				}
			})
		})
	}
}

// TestClipSharedGradientsOnce: Backward hands both inputs of an addition
// views of one gradient tensor; clipping must scale that storage once.
func TestClipSharedGradientsOnce(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		a := nn.NewParam(tensor.ZerosOf(ad, tensor.Float64, 3))
		b := nn.NewParam(tensor.ZerosOf(ad, tensor.Float64, 3))
		w := tensor.FromFloat64s(dev, []float64{3, 4, 0}, 3)
		grads := a.Add(b.Tensor).Mul(w).Sum().Backward()
		// Each gradient is w = [3 4 0]: the total 2-norm is √50.
		total := optim.ClipGradNorm(grads, []*nn.Param{a, b}, 1, 2)
		if got := total.Item(); math.Abs(got-math.Sqrt(50)) > 1e-12 {
			t.Fatalf("total norm %v, want √50", got)
		}
		k := 1 / (math.Sqrt(50) + 1e-6)
		for _, p := range []*nn.Param{a, b} {
			testutil.AssertValues(t, "gradient", grads.Get(p.Tensor), []int{3}, []float64{3 * k, 4 * k, 0}, 1e-12, 0)
		}
		optim.ClipGradValue(grads, []*nn.Param{a, b}, 0.1)
		for _, p := range []*nn.Param{a, b} {
			testutil.AssertValues(t, "gradient", grads.Get(p.Tensor), []int{3}, []float64{0.1, 0.1, 0}, 0, 0)
		}
	})
}

// TestClipAcceptsModelsAndLists: params may be a model, named params, a
// []*nn.Param or one *nn.Param; without gradients the norm is 0.
func TestClipAcceptsModelsAndLists(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newProblem(t, dev)
		grads := m.loss().Backward()
		var ref float64
		tensor.Scope(func() {
			var sq float64
			for _, np := range nn.TrainableParams(m) {
				for _, v := range grads.Get(np.Param.Tensor).Float64s() {
					sq += v * v
				}
			}
			ref = math.Sqrt(sq)
		})
		for name, params := range map[string]any{
			"model": m, "named": nn.TrainableParams(m),
		} {
			if got := optim.ClipGradNorm(grads, params, 1e9, 2).Item(); math.Abs(got-ref) > 1e-12*ref {
				t.Errorf("%s: norm %v, want %v", name, got, ref)
			}
		}
		qOnly := optim.ClipGradNorm(grads, m.Q, 1e9, math.Inf(1)).Item()
		want := 0.0
		for _, v := range grads.Get(m.Q.Tensor).Float64s() {
			want = math.Max(want, math.Abs(v))
		}
		if qOnly != want {
			t.Errorf("one param: max norm %v, want %v", qOnly, want)
		}
		if got := optim.ClipGradNorm(&tensor.Gradients{}, m, 1, 2).Item(); got != 0 {
			t.Errorf("no gradients: norm %v, want 0", got)
		}
	})
}

// TestClipBadInput: out-of-range arguments panic with ErrArgument.
func TestClipBadInput(t *testing.T) {
	for name, fn := range map[string]func(){
		"negative max norm": func() { optim.ClipGradNorm(nil, []*nn.Param{}, -1, 2) },
		"NaN max norm":      func() { optim.ClipGradNorm(nil, []*nn.Param{}, math.NaN(), 2) },
		"norm type 0":       func() { optim.ClipGradNorm(nil, []*nn.Param{}, 1, 0) },
		"negative value":    func() { optim.ClipGradValue(nil, []*nn.Param{}, -0.1) },
		"nil params":        func() { optim.ClipGradValue(nil, nil, 0.1) },
	} {
		t.Run(name, func(t *testing.T) {
			err := mustPanic(t, fn)
			if !isTensorError(err, tensor.ErrArgument) {
				t.Errorf("error %v, want a *tensor.Error wrapping ErrArgument", err)
			}
		})
	}
}

// TestGradClipJSON: an infinite norm type survives JSON as "inf".
func TestGradClipJSON(t *testing.T) {
	for _, c := range []struct {
		clip optim.GradClip
		json string
	}{
		{optim.GradClip{MaxNorm: 1, NormType: math.Inf(1)}, `{"max_norm":1,"norm_type":"inf"}`},
		{optim.GradClip{MaxNorm: 2, NormType: 1, Value: 0.5}, `{"max_norm":2,"value":0.5,"norm_type":1}`},
		{optim.GradClip{}, `{}`},
	} {
		raw, err := json.Marshal(c.clip)
		if err != nil || string(raw) != c.json {
			t.Errorf("%+v: JSON %s (%v), want %s", c.clip, raw, err, c.json)
		}
		var back optim.GradClip
		if err := json.Unmarshal(raw, &back); err != nil || back != c.clip {
			t.Errorf("%s: read back %+v (%v)", raw, back, err)
		}
	}
	var g optim.GradClip
	if err := json.Unmarshal([]byte(`{"norm_type":"max"}`), &g); err == nil {
		t.Error(`norm_type "max" accepted`)
	}
}

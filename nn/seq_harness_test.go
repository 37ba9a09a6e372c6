package nn_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// seqRun applies a model to named inputs and returns its named outputs.
type seqRun func(in map[string]*tensor.Tensor) map[string]*tensor.Tensor

// checkSeqFixture loads a case written by testdata/gen_seq.py into model
// (built on dev.Autodiff()), runs it, and compares the outputs and the
// gradients of Σ output·w with respect to every parameter and float input
// with PyTorch's. The case's "param.*" tensors are the state dict; keys
// without a dot that have no "w." twin are inputs; those with one are
// outputs.
func checkSeqFixture(t *testing.T, dev tensor.Device, fc testutil.FixtureCase, model any, run seqRun, rtol, atol float64) {
	t.Helper()
	checkSeqFixtureIn(t, dev, fc, model, run, false, rtol, atol)
}

// checkSeqFixtureIn is checkSeqFixture, with the fixture's float32 tensors
// converted to float64 (after rounding to float32, as they were written)
// when wide is set.
func checkSeqFixtureIn(t *testing.T, dev tensor.Device, fc testutil.FixtureCase, model any, run seqRun, wide bool, rtol, atol float64) {
	t.Helper()
	ad := dev.Autodiff()
	load := func(f testutil.Fixture) *tensor.Tensor {
		x := f.Tensor(ad)
		if wide && x.DType() == tensor.Float32 {
			x = x.To(tensor.Float64)
		}
		return x
	}
	sd := map[string]*tensor.Tensor{}
	for k, f := range fc {
		if name, ok := strings.CutPrefix(k, "param."); ok {
			sd[name] = load(f)
		}
	}
	if _, _, err := nn.LoadStateDict(model, sd); err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{}
	for k, f := range fc {
		if strings.Contains(k, ".") {
			continue
		}
		if _, isOut := fc["w."+k]; isOut {
			continue
		}
		in[k] = load(f)
		if _, ok := fc["grad."+k]; ok {
			in[k].RequireGrad()
		}
	}
	outs := run(in)
	names := make([]string, 0, len(outs))
	for k := range outs {
		names = append(names, k)
	}
	sort.Strings(names)
	var loss *tensor.Tensor
	for _, k := range names {
		want, ok := fc[k]
		if !ok {
			t.Fatalf("output %s is not in the fixture", k)
		}
		testutil.AssertClose(t, k, outs[k], want, rtol, atol)
		term := outs[k].Mul(load(fc["w."+k]).To(outs[k].DType())).Sum()
		if loss == nil {
			loss = term
		} else {
			loss = loss.Add(term)
		}
	}
	for k := range fc {
		if strings.HasPrefix(k, "w.") && outs[k[2:]] == nil {
			t.Errorf("the model gave no output %s", k[2:])
		}
	}
	grads := loss.Backward()
	for _, np := range nn.Params(model) {
		want, ok := fc["grad."+np.Name]
		if !ok {
			t.Errorf("parameter %s has no gradient in the fixture", np.Name)
			continue
		}
		g := grads.Get(np.Param.Tensor)
		if g == nil {
			t.Errorf("parameter %s: no gradient", np.Name)
			continue
		}
		testutil.AssertClose(t, "grad."+np.Name, g, want, rtol, atol)
	}
	for k, x := range in {
		want, ok := fc["grad."+k]
		if !ok {
			continue
		}
		g := grads.Get(x)
		if g == nil {
			t.Errorf("input %s: no gradient", k)
			continue
		}
		testutil.AssertClose(t, "grad."+k, g, want, rtol, atol)
	}
}

// expectPanic runs fn and checks that it panics with a *tensor.Error
// wrapping kind whose message contains every fragment.
func expectPanic(t *testing.T, fn func(), kind error, fragments ...string) {
	t.Helper()
	err := tensor.Try(fn)
	if err == nil {
		t.Fatalf("no panic, want %v", kind)
	}
	if !isTensorError(err, kind) {
		t.Fatalf("error %v (%T), want a *tensor.Error wrapping %v", err, err, kind)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

package optim_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// steps is the length of every recorded trajectory.
const steps = 20

// problem is the fixed problem of testdata/gen_optim.py: a two-layer
// network fitted by mean squared error plus a separate quadratic in q.
type problem struct {
	L1 *nn.Linear `kiln:"l1"`
	L2 *nn.Linear `kiln:"l2"`
	Q  *nn.Param  `kiln:"q"`

	x, y, a, t *tensor.Tensor `kiln:"-"`
}

// paramOrder is the order trajectories list the parameters in.
var paramOrder = []string{"l1.weight", "l1.bias", "l2.weight", "l2.bias", "q"}

// loadFixtures merges fixture files.
func loadFixtures(t *testing.T, names ...string) map[string]testutil.FixtureCase {
	t.Helper()
	all := map[string]testutil.FixtureCase{}
	for _, n := range names {
		maps.Copy(all, testutil.LoadFixtures(t, n))
	}
	return all
}

// newProblem builds the problem on dev (its autodiff view) in float64.
func newProblem(t *testing.T, dev tensor.Device) *problem {
	t.Helper()
	fx := testutil.LoadFixtures(t, "problem.json")["problem"]
	ad := dev.Autodiff()
	param := func(name string) *nn.Param { return nn.NewParam(fx[name].Tensor(ad)) }
	return &problem{
		L1: &nn.Linear{Weight: param("l1.weight"), Bias: param("l1.bias")},
		L2: &nn.Linear{Weight: param("l2.weight"), Bias: param("l2.bias")},
		Q:  param("q"),
		x:  fx["x"].Tensor(dev), y: fx["y"].Tensor(dev), a: fx["a"].Tensor(dev), t: fx["t"].Tensor(dev),
	}
}

// loss is the problem's objective.
func (m *problem) loss() *tensor.Tensor {
	out := m.L2.Forward(m.L1.Forward(m.x).Tanh())
	mse := out.Sub(m.y).Square().Mean()
	return mse.Add(m.Q.Sub(m.t).Square().Mul(m.a).Sum().MulScalar(0.5))
}

// flat returns the parameters in paramOrder, flattened.
func (m *problem) flat() []float64 {
	sd := nn.StateDict(m)
	var out []float64
	for _, n := range paramOrder {
		out = append(out, sd[n].Float64s()...)
		sd[n].Release()
	}
	return out
}

// step runs one optimizer step on the problem.
func (m *problem) step(opt optim.Optimizer) {
	tensor.Scope(func() { opt.Step(m, m.loss().Backward()) })
}

// trajectory runs n steps and returns the parameters after each.
func (m *problem) trajectory(opt optim.Optimizer, n int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		m.step(opt)
		out[i] = m.flat()
	}
	return out
}

// assertTrajectory compares a trajectory with a [steps, params] fixture.
func assertTrajectory(t *testing.T, got [][]float64, want testutil.Fixture, rtol, atol float64) {
	t.Helper()
	w := want.Float64s()
	n := want.Shape[1]
	for i, row := range got {
		if len(row) != n {
			t.Fatalf("step %d: %d values, want %d", i+1, len(row), n)
		}
		for j, v := range row {
			ref := w[i*n+j]
			if !(math.Abs(v-ref) <= atol+rtol*math.Abs(ref)) {
				t.Fatalf("step %d, value %d (%s): got %.15g, want %.15g (rel err %.2g)",
					i+1, j, paramName(j), v, ref, math.Abs(v-ref)/math.Abs(ref))
			}
		}
	}
}

// paramName names the j-th flattened value.
func paramName(j int) string {
	sizes := []int{6, 3, 6, 2, 4}
	for i, s := range sizes {
		if j < s {
			return fmt.Sprintf("%s[%d]", paramOrder[i], j)
		}
		j -= s
	}
	return "?"
}

// mustPanic returns the error fn panics with, failing when it does not.
func mustPanic(t *testing.T, fn func()) (err error) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("no panic")
		}
		e, ok := r.(error)
		if !ok {
			t.Fatalf("panic with %T %v, want an error", r, r)
		}
		err = e
	}()
	fn()
	return nil
}

// isTensorError reports whether err is a *tensor.Error wrapping kind.
func isTensorError(err error, kind error) bool {
	var te *tensor.Error
	return errors.As(err, &te) && errors.Is(err, kind)
}

// releaser is an optimizer whose state must be freed at the end of a test
// (the strict device fails tests that leak).
func release(opts ...optim.Optimizer) {
	for _, o := range opts {
		o.ZeroState()
	}
}

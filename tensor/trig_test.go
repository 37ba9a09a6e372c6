package tensor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// elementwise2Tables lists the fixture tables that check
// testdata/elementwise2.json (written by testdata/gen_elementwise2.py).
func elementwise2Tables() []map[string]mathFixture {
	return []map[string]mathFixture{trigFixtures(), selectFixtures(), countFixtures(), bitwiseFixtures(),
		logcumsumexpFixtures(), statsFixtures()}
}

// runElementwise2Fixtures checks every case of table against
// elementwise2.json on every test device, with runMathFixtures' tolerances.
func runElementwise2Fixtures(t *testing.T, table map[string]mathFixture) {
	t.Helper()
	runFixtureFile(t, "elementwise2", table)
}

// TestElementwise2FixtureCoverage checks that every case in
// elementwise2.json is checked by some test.
func TestElementwise2FixtureCoverage(t *testing.T) {
	known := map[string]bool{}
	for _, table := range elementwise2Tables() {
		for n := range table {
			known[n] = true
		}
	}
	for name := range loadFixtures(t, "elementwise2.json") {
		if !known[name] {
			t.Errorf("fixture %s is not checked by any test", name)
		}
	}
}

var trigOps = map[string]func(*tensor.Tensor) *tensor.Tensor{
	"asin": (*tensor.Tensor).Asin, "acos": (*tensor.Tensor).Acos, "atan": (*tensor.Tensor).Atan,
	"sinh": (*tensor.Tensor).Sinh, "cosh": (*tensor.Tensor).Cosh, "asinh": (*tensor.Tensor).Asinh,
	"acosh": (*tensor.Tensor).Acosh, "atanh": (*tensor.Tensor).Atanh,
}

func trigFixtures() map[string]mathFixture {
	table := map[string]mathFixture{
		"atan2_broadcast":   func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Atan2(f.T("b"))) },
		"atan2_special":     func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Atan2(f.T("b"))) },
		"atan2_f64":         func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Atan2(f.T("b"))) },
		"atan2_int":         func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Atan2(f.T("b"))) },
		"atan2_int_float":   func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Atan2(f.T("b"))) },
		"atan2_empty":       func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Atan2(f.T("b"))) },
		"grad_atan2":        gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Atan2(in[1]) }),
		"grad_atan2_origin": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Atan2(in[1]) }),
	}
	for name, op := range trigOps {
		plain := func(f mathCase) map[string]*tensor.Tensor { return out(op(f.T("x"))) }
		table["trig_"+name+"_f32"] = plain
		table["trig_"+name+"_f64"] = plain
		table["trig_"+name+"_int"] = plain
		table["trig_"+name+"_empty"] = plain
		table["trig_"+name+"_t"] = func(f mathCase) map[string]*tensor.Tensor { return out(op(f.T("x").T())) }
		table["grad_"+name] = gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return op(in[0]) })
		switch name {
		case "asin", "acos", "atanh", "acosh":
			table["grad_"+name+"_edge"] = gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return op(in[0]) })
		}
	}
	return table
}

func TestTrigFixtures(t *testing.T) { runElementwise2Fixtures(t, trigFixtures()) }

func TestTrigGradients(t *testing.T) {
	unary := func(op func(*tensor.Tensor) *tensor.Tensor) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return op(in[0].Transpose(0, 1)) }
	}
	cases := []gradCase{
		{"asin", unary((*tensor.Tensor).Asin), inputs(spec(1, -0.9, 0.9, 3, 4))},
		{"acos", unary((*tensor.Tensor).Acos), inputs(spec(1, -0.9, 0.9, 3, 4))},
		{"atan", unary((*tensor.Tensor).Atan), inputs(spec(1, -3, 3, 3, 4))},
		{"sinh", unary((*tensor.Tensor).Sinh), inputs(spec(1, -3, 3, 3, 4))},
		{"cosh", unary((*tensor.Tensor).Cosh), inputs(spec(1, -3, 3, 3, 4))},
		{"asinh", unary((*tensor.Tensor).Asinh), inputs(spec(1, -3, 3, 3, 4))},
		{"acosh", unary((*tensor.Tensor).Acosh), inputs(spec(1, 1.2, 3, 3, 4))},
		{"atanh", unary((*tensor.Tensor).Atanh), inputs(spec(1, -0.9, 0.9, 3, 4))},
		{"atan2 broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Atan2(in[1]) },
			inputs(spec(1, -2, 2, 2, 1, 3), spec(2, -2, 2, 4, 1))},
		{"atan2 transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Atan2(in[1]) },
			inputs(spec(1, -2, 2, 3, 2), spec(2, 0.5, 2, 2, 3))},
	}
	runGradCases(t, cases)
}

func TestTrigBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		err := tensor.Try(func() { tensor.Zeros(dev, 2, 3).Atan2(tensor.Zeros(dev, 4)) })
		if !errors.Is(err, tensor.ErrShape) {
			t.Errorf("Atan2 of [2 3] and [4]: %v, want ErrShape", err)
		}
		// Float64 stays Float64, and the float32 forms agree with math.
		x := tensor.FromFloat64s(dev, []float64{0.25}, 1)
		if got := x.Asin().Float64s()[0]; got != math.Asin(0.25) {
			t.Errorf("Asin(0.25) = %v, want %v", got, math.Asin(0.25))
		}
	})
}

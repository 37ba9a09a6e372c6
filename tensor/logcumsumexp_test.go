package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func logcumsumexpFixtures() map[string]mathFixture {
	along := func(dim int) mathFixture {
		return func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Logcumsumexp(dim)) }
	}
	return map[string]mathFixture{
		"logcumsumexp":         along(1),
		"logcumsumexp_dim0":    along(0),
		"logcumsumexp_neg":     along(-1),
		"logcumsumexp_t":       func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").T().Logcumsumexp(1)) },
		"logcumsumexp_special": along(0),
		"logcumsumexp_inf":     along(0),
		"logcumsumexp_empty":   along(1),
		"logcumsumexp_scalar":  along(0),
		"logcumsumexp_long":    along(1),
		"grad_logcumsumexp": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Logcumsumexp(1)
		}),
		"grad_logcumsumexp_wide": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Logcumsumexp(0)
		}),
		"grad_logcumsumexp_signed": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			w := tensor.FromFloat64s(in[0].Device(), []float64{1, -2, 0, 3, -1})
			return in[0].Logcumsumexp(0).Mul(w)
		}),
	}
}

func TestLogcumsumexpFixtures(t *testing.T) { runElementwise2Fixtures(t, logcumsumexpFixtures()) }

func TestLogcumsumexpGradients(t *testing.T) {
	cases := []gradCase{
		{"last dim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Logcumsumexp(-1) },
			inputs(spec(1, -3, 3, 3, 9))},
		{"first dim transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Logcumsumexp(0) },
			inputs(spec(1, -3, 3, 5, 4))},
		{"wide range", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].MulScalar(20).Logcumsumexp(0) },
			inputs(spec(1, -3, 3, 6))},
	}
	runGradCases(t, cases)
}

func TestLogcumsumexpBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		if err := tensor.Try(func() { tensor.FromInt64s(dev, []int64{1, 2}).Logcumsumexp(0) }); !errors.Is(err, tensor.ErrDType) {
			t.Errorf("int64 input: %v, want ErrDType", err)
		}
		if err := tensor.Try(func() { tensor.Zeros(dev, 2, 3).Logcumsumexp(2) }); !errors.Is(err, tensor.ErrArgument) {
			t.Errorf("dim 2 of a matrix: %v, want ErrArgument", err)
		}
	})
}

// BenchmarkLogcumsumexp scans a [256, 4096] Float32 tensor along its last
// dimension (12 passes of the log-add-exp scan) and reports elements/s.
func BenchmarkLogcumsumexp(b *testing.B) {
	dev := tensor.CPU()
	x := tensor.Randn(dev, 256, 4096)
	defer x.Release()
	b.ResetTimer()
	for range b.N {
		tensor.Scope(func() { x.Logcumsumexp(1).Sum().Item() })
	}
	b.ReportMetric(float64(b.N)*256*4096/b.Elapsed().Seconds(), "elements/s")
}

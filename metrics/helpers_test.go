package metrics_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

var forEachDevice = testutil.ForEachDevice

// rows describes a data set fed to a tensor metric: n rows of outputs (w
// values each; w == 0 means a 1-D outputs tensor) and targets (tw values
// each, 0 for 1-D), the targets as Int64 when intTargets.
type rows struct {
	out        []float64
	w          int
	tgt        []float64
	tw         int
	intTargets bool
}

func (r rows) n() int {
	if r.w == 0 {
		return len(r.out)
	}
	return len(r.out) / r.w
}

func width(w int) int { return max(w, 1) }

func shape(n, w int) []int {
	if w == 0 {
		return []int{n}
	}
	return []int{n, w}
}

// feed feeds rows [lo, hi) as one batch.
func (r rows) feed(t *testing.T, dev tensor.Device, m metrics.Metric, lo, hi int) {
	t.Helper()
	ow, tw := width(r.w), width(r.tw)
	out := tensor.FromFloat64s(dev, r.out[lo*ow:hi*ow], shape(hi-lo, r.w)...)
	var tgt *tensor.Tensor
	if r.intTargets {
		v := make([]int64, (hi-lo)*tw)
		for i := range v {
			v[i] = int64(r.tgt[lo*tw+i])
		}
		tgt = tensor.FromInt64s(dev, v, shape(hi-lo, r.tw)...)
	} else {
		tgt = tensor.FromFloat64s(dev, r.tgt[lo*tw:hi*tw], shape(hi-lo, r.tw)...)
	}
	if err := m.Update(out, tgt); err != nil {
		t.Fatalf("%s.Update(rows %d..%d): %v", m.Name(), lo, hi, err)
	}
}

// splits returns batchings of n rows: one batch, uneven batches, and
// single rows.
func splits(n int) [][]int {
	out := [][]int{{n}}
	if n >= 3 {
		out = append(out, []int{1, n - 3, 2}, []int{n - 1, 1})
	}
	if n >= 2 {
		ones := make([]int, n)
		for i := range ones {
			ones[i] = 1
		}
		out = append(out, ones)
	}
	return out
}

func close(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

// checkRows feeds r to fresh metrics from mk in every batching and checks
// that Value (and Values, when multi-valued) equal want (and wantValues),
// then that Reset and refeeding give the same.
func checkRows(t *testing.T, mk func() metrics.Metric, r rows, want float64, wantValues map[string]float64) {
	t.Helper()
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		t.Helper()
		for _, sp := range splits(r.n()) {
			m := mk()
			for round := range 2 {
				lo := 0
				for _, k := range sp {
					r.feed(t, dev, m, lo, lo+k)
					lo += k
				}
				if got := m.Value(); !close(got, want) {
					t.Errorf("%s batches %v round %d: Value = %v, want %v", m.Name(), sp, round, got, want)
				}
				if mv, ok := m.(metrics.MultiValued); ok {
					vs := mv.Values()
					if !close(vs[m.Name()], m.Value()) {
						t.Errorf("%s: Values()[%q] = %v, Value = %v", m.Name(), m.Name(), vs[m.Name()], m.Value())
					}
					for k, w := range wantValues {
						if g, ok := vs[k]; !ok || !close(g, w) {
							t.Errorf("%s batches %v: Values()[%q] = %v, want %v", m.Name(), sp, k, g, w)
						}
					}
				}
				m.Reset()
				if !math.IsNaN(m.Value()) {
					if _, ok := m.(*metrics.ConfusionMatrix); !ok {
						t.Errorf("%s: Value after Reset = %v, want NaN", m.Name(), m.Value())
					}
				}
			}
		}
	})
}

package metrics

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// labels turns a batch into predicted and true class indices. outputs of
// shape [N, C] with C >= 2 are class scores (logits or probabilities; the
// prediction is the first arg max); outputs of shape [N] or [N, 1] are
// binary scores, predicted 1 where the score is greater than threshold.
// targets hold N class indices ([N] or [N, 1], any dtype with whole values).
// classes is C (2 for binary outputs).
func labels(metric string, outputs, targets *tensor.Tensor, threshold float64) (pred, truth []int64, classes int, err error) {
	out, oshape, err := host(metric, "outputs", outputs)
	if err != nil {
		return nil, nil, 0, err
	}
	truth, tshape, err := hostInts(metric, "targets", targets)
	if err != nil {
		return nil, nil, 0, err
	}
	var n int
	switch {
	case len(oshape) == 2 && oshape[1] >= 2:
		n, classes = oshape[0], oshape[1]
		pred = make([]int64, n)
		for i := range n {
			row := out[i*classes : (i+1)*classes]
			best := 0
			for c, v := range row {
				if v > row[best] || (math.IsNaN(row[best]) && !math.IsNaN(v)) {
					best = c
				}
			}
			pred[i] = int64(best)
		}
	case len(oshape) == 1 || (len(oshape) == 2 && oshape[1] == 1):
		n, classes = oshape[0], 2
		pred = make([]int64, n)
		for i, v := range out {
			if v > threshold {
				pred[i] = 1
			}
		}
	default:
		return nil, nil, 0, inputErr(metric, "outputs %s must be [N, C] class scores or [N] binary scores", shapeStr(oshape))
	}
	if !(len(tshape) == 1 || (len(tshape) == 2 && tshape[1] == 1)) || len(truth) != n {
		return nil, nil, 0, inputErr(metric, "targets %s must hold one class index per row of outputs %s", shapeStr(tshape), shapeStr(oshape))
	}
	for _, t := range truth {
		if t < 0 || t >= int64(classes) {
			return nil, nil, 0, inputErr(metric, "target class %d is outside [0, %d) for outputs %s", t, classes, shapeStr(oshape))
		}
	}
	return pred, truth, classes, nil
}

// Accuracy is the fraction of items whose predicted class equals the target.
// Outputs are [N, C] class scores (arg max) or [N]/[N, 1] binary scores
// (predicted positive above Threshold); targets are N class indices.
type Accuracy struct {
	// Threshold for binary scores: 0.5 for probabilities (the default), 0
	// for logits.
	Threshold      float64
	correct, total float64
}

// NewAccuracy returns an Accuracy metric with threshold 0.5.
func NewAccuracy() *Accuracy { return &Accuracy{Threshold: 0.5} }

// Name implements Metric.
func (m *Accuracy) Name() string { return "accuracy" }

// Update implements Metric.
func (m *Accuracy) Update(outputs, targets *tensor.Tensor) error {
	pred, truth, _, err := labels(m.Name(), outputs, targets, m.Threshold)
	if err != nil {
		return err
	}
	for i := range pred {
		if pred[i] == truth[i] {
			m.correct++
		}
	}
	m.total += float64(len(pred))
	return nil
}

// Value is correct / total, NaN before any item.
func (m *Accuracy) Value() float64 { return nanIfZero(m.correct, m.total) }

// Reset implements Metric.
func (m *Accuracy) Reset() { m.correct, m.total = 0, 0 }

// State implements Summable: correct and total.
func (m *Accuracy) State() []float64 { return []float64{m.correct, m.total} }

// SetState implements Summable.
func (m *Accuracy) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.correct, m.total = s[0], s[1]
	return nil
}

// TopKAccuracy is the fraction of items whose target class is among the K
// highest scores. Ties are broken by class index (a lower index ranks first),
// as a stable descending sort would. Outputs are [N, C], targets N indices.
type TopKAccuracy struct {
	K              int
	correct, total float64
}

// NewTopKAccuracy returns a TopKAccuracy metric; k must be at least 1.
func NewTopKAccuracy(k int) *TopKAccuracy {
	if k < 1 {
		panic(fmt.Sprintf("metrics.NewTopKAccuracy: k = %d must be at least 1", k))
	}
	return &TopKAccuracy{K: k}
}

// Name is "top<K>_accuracy".
func (m *TopKAccuracy) Name() string { return fmt.Sprintf("top%d_accuracy", m.K) }

// Update implements Metric.
func (m *TopKAccuracy) Update(outputs, targets *tensor.Tensor) error {
	out, oshape, err := host(m.Name(), "outputs", outputs)
	if err != nil {
		return err
	}
	truth, tshape, err := hostInts(m.Name(), "targets", targets)
	if err != nil {
		return err
	}
	if len(oshape) != 2 {
		return inputErr(m.Name(), "outputs %s must be [N, C] class scores", shapeStr(oshape))
	}
	n, c := oshape[0], oshape[1]
	if len(truth) != n || len(tshape) > 2 {
		return inputErr(m.Name(), "targets %s must hold one class index per row of outputs %s", shapeStr(tshape), shapeStr(oshape))
	}
	correct := 0
	for i := range n {
		t := truth[i]
		if t < 0 || t >= int64(c) {
			return inputErr(m.Name(), "target class %d is outside [0, %d)", t, c)
		}
		row := out[i*c : (i+1)*c]
		s := row[t]
		rank := 0
		for j, v := range row {
			if v > s || (v == s && int64(j) < t) {
				rank++
			}
		}
		if rank < m.K {
			correct++
		}
	}
	m.correct += float64(correct)
	m.total += float64(n)
	return nil
}

// Value is the top-K hit rate, NaN before any item.
func (m *TopKAccuracy) Value() float64 { return nanIfZero(m.correct, m.total) }

// Reset implements Metric.
func (m *TopKAccuracy) Reset() { m.correct, m.total = 0, 0 }

// State implements Summable: correct and total.
func (m *TopKAccuracy) State() []float64 { return []float64{m.correct, m.total} }

// SetState implements Summable.
func (m *TopKAccuracy) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.correct, m.total = s[0], s[1]
	return nil
}

// ConfusionMatrix counts items by true class (row) and predicted class
// (column), as scikit-learn's confusion_matrix. Outputs and targets are as
// for Accuracy; outputs must have NumClasses columns (or be binary scores
// when NumClasses is 2).
type ConfusionMatrix struct {
	NumClasses int
	Threshold  float64
	counts     []int64
}

// NewConfusionMatrix returns a ConfusionMatrix over numClasses (>= 2)
// classes with binary threshold 0.5.
func NewConfusionMatrix(numClasses int) *ConfusionMatrix {
	if numClasses < 2 {
		panic(fmt.Sprintf("metrics.NewConfusionMatrix: numClasses = %d must be at least 2", numClasses))
	}
	return &ConfusionMatrix{NumClasses: numClasses, Threshold: 0.5, counts: make([]int64, numClasses*numClasses)}
}

// Name implements Metric.
func (m *ConfusionMatrix) Name() string { return "confusion_matrix" }

// Update implements Metric.
func (m *ConfusionMatrix) Update(outputs, targets *tensor.Tensor) error {
	pred, truth, classes, err := labels(m.Name(), outputs, targets, m.Threshold)
	if err != nil {
		return err
	}
	if len(m.counts) != m.NumClasses*m.NumClasses {
		m.counts = make([]int64, m.NumClasses*m.NumClasses)
	}
	if classes != m.NumClasses {
		return inputErr(m.Name(), "outputs have %d classes, the matrix %d", classes, m.NumClasses)
	}
	for i := range pred {
		m.counts[truth[i]*int64(m.NumClasses)+pred[i]]++
	}
	return nil
}

// Matrix returns a copy of the counts: Matrix()[true][predicted].
func (m *ConfusionMatrix) Matrix() [][]int64 {
	k := m.NumClasses
	out := make([][]int64, k)
	for i := range out {
		out[i] = make([]int64, k)
		if len(m.counts) == k*k {
			copy(out[i], m.counts[i*k:(i+1)*k])
		}
	}
	return out
}

// Value is the accuracy the matrix implies (trace / total), NaN when empty.
func (m *ConfusionMatrix) Value() float64 {
	var tr, tot float64
	k := m.NumClasses
	for i, c := range m.counts {
		tot += float64(c)
		if i/k == i%k {
			tr += float64(c)
		}
	}
	return nanIfZero(tr, tot)
}

// Values returns "confusion_matrix" (the accuracy) and "cm_<true>_<pred>"
// for each cell.
func (m *ConfusionMatrix) Values() map[string]float64 {
	out := map[string]float64{m.Name(): m.Value()}
	k := m.NumClasses
	for i, c := range m.counts {
		out[fmt.Sprintf("cm_%d_%d", i/k, i%k)] = float64(c)
	}
	return out
}

// Reset implements Metric.
func (m *ConfusionMatrix) Reset() { clear(m.counts) }

// State implements Summable: the NumClasses² counts, row by row as Matrix
// gives them (none for a zero ConfusionMatrix, whose NumClasses is 0).
func (m *ConfusionMatrix) State() []float64 {
	k := max(m.NumClasses, 0)
	s := make([]float64, k*k)
	if len(m.counts) == k*k {
		for i, c := range m.counts {
			s[i] = float64(c)
		}
	}
	return s
}

// SetState implements Summable. The counts must be whole numbers from 0 to
// 2⁵³ (float64 holds every integer up to there, and a sum of exact counts
// stays exact).
func (m *ConfusionMatrix) SetState(s []float64) error {
	k := max(m.NumClasses, 0)
	if err := checkState(m.Name(), s, k*k); err != nil {
		return err
	}
	counts := make([]int64, k*k)
	for i, v := range s {
		if !(v >= 0 && v <= 1<<53) || v != math.Trunc(v) {
			return fmt.Errorf("%w: %s: count %v is not a whole number in [0, 2^53]", ErrState, m.Name(), v)
		}
		counts[i] = int64(v)
	}
	m.counts = counts
	return nil
}

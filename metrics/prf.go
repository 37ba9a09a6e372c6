package metrics

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Task says how classification outputs and targets are read.
type Task int

const (
	// Binary: outputs [N] or [N, 1] scores, positive above the threshold;
	// targets N values in {0, 1}; class 1 is the positive class.
	Binary Task = iota
	// Multiclass: outputs [N, C] class scores (arg max); targets N class
	// indices.
	Multiclass
	// Multilabel: outputs [N, L] scores, each label positive above the
	// threshold; targets [N, L] in {0, 1}.
	Multilabel
)

// Average says how per-class counts combine for Multiclass and Multilabel
// tasks (Binary ignores it).
type Average int

const (
	// Micro pools true/false positives and false negatives over all classes
	// (for single-label multiclass data, micro precision = recall =
	// accuracy).
	Micro Average = iota
	// Macro is the unweighted mean of the per-class scores, over the classes
	// that occur in targets or predictions (Multiclass) or over all L labels
	// (Multilabel), as scikit-learn's average="macro".
	Macro
)

type prfKind int

const (
	kindPrecision prfKind = iota
	kindRecall
	kindFBeta
)

// PRF is precision, recall and F-beta over the items fed, computed from
// accumulated per-class counts as scikit-learn's precision_recall_fscore_support
// (a score whose denominator is zero is 0, scikit-learn's zero_division=0).
// Value is the metric it was made as (NewPrecision, NewRecall, NewFBeta,
// NewF1); Values reports all three.
type PRF struct {
	Task    Task
	Average Average
	// Threshold for Binary and Multilabel scores (0.5 by default; 0 for
	// logits).
	Threshold float64
	// NumClasses is the number of classes (Multiclass) or labels
	// (Multilabel); Binary ignores it. When set, Update rejects outputs
	// with another count; 0, the default, takes the count from the outputs
	// fed. State needs it set for Multiclass and Multilabel tasks, so that
	// processes fed different batches, or none, keep states of one length.
	NumClasses int
	beta       float64
	kind       prfKind
	tp, fp, fn []float64
	items      float64
}

func newPRF(kind prfKind, task Task, avg Average, beta float64) *PRF {
	if beta <= 0 {
		panic(fmt.Sprintf("metrics.NewFBeta: beta = %v must be positive", beta))
	}
	return &PRF{Task: task, Average: avg, Threshold: 0.5, beta: beta, kind: kind}
}

// NewPrecision returns a precision metric: tp / (tp + fp).
func NewPrecision(task Task, avg Average) *PRF { return newPRF(kindPrecision, task, avg, 1) }

// NewRecall returns a recall metric: tp / (tp + fn).
func NewRecall(task Task, avg Average) *PRF { return newPRF(kindRecall, task, avg, 1) }

// NewFBeta returns an F-beta metric: (1+β²)·P·R / (β²·P + R). It panics if
// beta is not positive.
func NewFBeta(task Task, avg Average, beta float64) *PRF {
	return newPRF(kindFBeta, task, avg, beta)
}

// NewF1 returns NewFBeta(task, avg, 1).
func NewF1(task Task, avg Average) *PRF { return newPRF(kindFBeta, task, avg, 1) }

func (m *PRF) suffix() string {
	if m.Task == Binary {
		return ""
	}
	if m.Average == Macro {
		return "_macro"
	}
	return "_micro"
}

func (m *PRF) fname() string {
	if m.beta == 1 {
		return "f1"
	}
	return fmt.Sprintf("f%g", m.beta)
}

// Name is "precision", "recall", "f1" or "f<beta>", with "_micro" or
// "_macro" for multiclass and multilabel tasks.
func (m *PRF) Name() string {
	switch m.kind {
	case kindPrecision:
		return "precision" + m.suffix()
	case kindRecall:
		return "recall" + m.suffix()
	}
	return m.fname() + m.suffix()
}

func (m *PRF) grow(k int) {
	for len(m.tp) < k {
		m.tp, m.fp, m.fn = append(m.tp, 0), append(m.fp, 0), append(m.fn, 0)
	}
}

// Update implements Metric.
func (m *PRF) Update(outputs, targets *tensor.Tensor) error {
	name := m.Name()
	switch m.Task {
	case Binary, Multiclass:
		pred, truth, classes, err := labels(name, outputs, targets, m.Threshold)
		if err != nil {
			return err
		}
		if m.Task == Binary && classes != 2 {
			return inputErr(name, "binary task needs [N] or [N, 1] scores, got %d classes", classes)
		}
		if m.Task == Multiclass && m.NumClasses > 0 && classes != m.NumClasses {
			return inputErr(name, "outputs have %d classes, NumClasses is %d", classes, m.NumClasses)
		}
		m.grow(classes)
		for i := range pred {
			p, t := pred[i], truth[i]
			if p == t {
				m.tp[p]++
			} else {
				m.fp[p]++
				m.fn[t]++
			}
		}
		m.items += float64(len(pred))
	case Multilabel:
		pred, truth, n, l, err := multilabel(name, outputs, targets, m.Threshold)
		if err != nil {
			return err
		}
		if m.NumClasses > 0 && l != m.NumClasses {
			return inputErr(name, "outputs have %d labels, NumClasses is %d", l, m.NumClasses)
		}
		m.grow(l)
		for i := range pred {
			c := i % l
			switch {
			case pred[i] && truth[i]:
				m.tp[c]++
			case pred[i]:
				m.fp[c]++
			case truth[i]:
				m.fn[c]++
			}
		}
		m.items += float64(n)
	default:
		return inputErr(name, "unknown task %d", m.Task)
	}
	return nil
}

// multilabel reads [N, L] scores thresholded and [N, L] {0, 1} targets.
func multilabel(name string, outputs, targets *tensor.Tensor, threshold float64) (pred, truth []bool, n, l int, err error) {
	out, oshape, err := host(name, "outputs", outputs)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	tv, tshape, err := host(name, "targets", targets)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if len(oshape) != 2 || len(tshape) != 2 || oshape[0] != tshape[0] || oshape[1] != tshape[1] {
		return nil, nil, 0, 0, inputErr(name, "multilabel outputs %s and targets %s must both be [N, L]", shapeStr(oshape), shapeStr(tshape))
	}
	pred, truth = make([]bool, len(out)), make([]bool, len(tv))
	for i := range out {
		if tv[i] != 0 && tv[i] != 1 {
			return nil, nil, 0, 0, inputErr(name, "multilabel target %v is not 0 or 1", tv[i])
		}
		pred[i], truth[i] = out[i] > threshold, tv[i] == 1
	}
	return pred, truth, oshape[0], oshape[1], nil
}

// scores returns precision, recall and F-beta from counts.
func (m *PRF) scores(tp, fp, fn float64) (p, r, f float64) {
	b2 := m.beta * m.beta
	return ratio(tp, tp+fp), ratio(tp, tp+fn), ratio((1+b2)*tp, (1+b2)*tp+b2*fn+fp)
}

func (m *PRF) all() (p, r, f float64) {
	if m.items == 0 {
		return nanValue, nanValue, nanValue
	}
	if m.Task == Binary {
		m.grow(2)
		return m.scores(m.tp[1], m.fp[1], m.fn[1])
	}
	if m.Average == Micro {
		var tp, fp, fn float64
		for c := range m.tp {
			tp, fp, fn = tp+m.tp[c], fp+m.fp[c], fn+m.fn[c]
		}
		return m.scores(tp, fp, fn)
	}
	var k float64
	for c := range m.tp {
		if m.Task == Multiclass && m.tp[c]+m.fp[c]+m.fn[c] == 0 {
			continue // absent from targets and predictions
		}
		cp, cr, cf := m.scores(m.tp[c], m.fp[c], m.fn[c])
		p, r, f, k = p+cp, r+cr, f+cf, k+1
	}
	return p / k, r / k, f / k
}

// Value is the metric's headline score, NaN before any item.
func (m *PRF) Value() float64 {
	p, r, f := m.all()
	switch m.kind {
	case kindPrecision:
		return p
	case kindRecall:
		return r
	}
	return f
}

// Values returns precision, recall and F-beta under their names (for
// example "precision_macro", "recall_macro", "f1_macro").
func (m *PRF) Values() map[string]float64 {
	p, r, f := m.all()
	s := m.suffix()
	return map[string]float64{"precision" + s: p, "recall" + s: r, m.fname() + s: f}
}

// Reset implements Metric.
func (m *PRF) Reset() { m.tp, m.fp, m.fn, m.items = nil, nil, nil, 0 }

// stateClasses is the number of classes whose counts State holds: 2 for
// Binary, NumClasses otherwise (0 when unset).
func (m *PRF) stateClasses() int {
	if m.Task == Binary {
		return 2
	}
	return max(m.NumClasses, 0)
}

// State implements Summable: the item count, then the true positives, false
// positives and false negatives of each class (2 classes for Binary,
// NumClasses otherwise), 1 + 3·classes values. It panics for a Multiclass
// or Multilabel task whose NumClasses is not set, or is less than the
// number of classes already fed: the length would then depend on the data,
// and processes that saw different batches could not sum their states.
func (m *PRF) State() []float64 {
	k := m.stateClasses()
	if k == 0 || len(m.tp) > k {
		panic(fmt.Sprintf("metrics.PRF.State: %s: NumClasses is %d with %d classes fed; set it to the class (label) count of the task",
			m.Name(), m.NumClasses, len(m.tp)))
	}
	s := make([]float64, 1+3*k)
	s[0] = m.items
	copy(s[1:], m.tp)
	copy(s[1+k:], m.fp)
	copy(s[1+2*k:], m.fn)
	return s
}

// SetState implements Summable. For a Multiclass or Multilabel task
// NumClasses must be set, as for State.
func (m *PRF) SetState(s []float64) error {
	k := m.stateClasses()
	if k == 0 {
		return fmt.Errorf("%w: %s: NumClasses is not set", ErrState, m.Name())
	}
	if err := checkState(m.Name(), s, 1+3*k); err != nil {
		return err
	}
	m.items = s[0]
	m.tp = append([]float64(nil), s[1:1+k]...)
	m.fp = append([]float64(nil), s[1+k:1+2*k]...)
	m.fn = append([]float64(nil), s[1+2*k:]...)
	return nil
}

// HammingScore is the fraction of label positions predicted correctly
// (1 - Hamming loss) for multilabel data: outputs [N, L] scores, positive
// above Threshold, and targets [N, L] in {0, 1}.
type HammingScore struct {
	Threshold      float64
	correct, total float64
}

// NewHammingScore returns a HammingScore with threshold 0.5.
func NewHammingScore() *HammingScore { return &HammingScore{Threshold: 0.5} }

// Name implements Metric.
func (m *HammingScore) Name() string { return "hamming_score" }

// Update implements Metric.
func (m *HammingScore) Update(outputs, targets *tensor.Tensor) error {
	pred, truth, _, _, err := multilabel(m.Name(), outputs, targets, m.Threshold)
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

// Value is correct positions / all positions, NaN before any item.
func (m *HammingScore) Value() float64 { return nanIfZero(m.correct, m.total) }

// Values returns "hamming_score" and "hamming_loss" (1 - score).
func (m *HammingScore) Values() map[string]float64 {
	v := m.Value()
	return map[string]float64{m.Name(): v, "hamming_loss": 1 - v}
}

// Reset implements Metric.
func (m *HammingScore) Reset() { m.correct, m.total = 0, 0 }

// State implements Summable: correct positions and all positions.
func (m *HammingScore) State() []float64 { return []float64{m.correct, m.total} }

// SetState implements Summable.
func (m *HammingScore) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.correct, m.total = s[0], s[1]
	return nil
}

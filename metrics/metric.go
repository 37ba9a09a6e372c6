package metrics

import (
	"errors"
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Metric is what every metric implements.
//
//   - Name is a stable, lower-case identifier used in logs and charts
//     ("accuracy", "top5_accuracy", "f1_macro").
//   - Update adds one batch: outputs are model outputs (logits, probabilities
//     or predictions), targets are the labels or values. It reads both to the
//     host and returns an error (wrapping ErrInput or the tensor error) when
//     their shapes or dtypes do not fit the metric, leaving the metric
//     unchanged. Metrics fed by other means (Loss, LearningRate, the text
//     metrics) document their own feeding methods and return ErrNotTensor
//     from Update.
//   - Value is the metric over everything fed since the last Reset; it is NaN
//     when nothing was fed or the metric is undefined on the data (for
//     example AUROC with a single class present).
//   - Reset forgets everything fed.
//
// Metrics with more than one natural output (a confusion matrix, precision
// and recall together, BLEU's n-gram precisions) also implement MultiValued;
// their Value is the headline number named by Name.
type Metric interface {
	Name() string
	Update(outputs, targets *tensor.Tensor) error
	Value() float64
	Reset()
}

// MultiValued is implemented by metrics that report several numbers. Values
// returns them by name; the map always contains Name() with Value().
type MultiValued interface {
	Metric
	Values() map[string]float64
}

// Summable is implemented by metrics whose whole accumulated state is a
// vector of float64 sums: the element-wise sum of the states of several
// metrics of one kind and configuration, each fed part of the batches, is
// the state of one such metric fed all of them. Data-parallel training
// all-reduces State with a sum and gives the result to SetState (on rank 0,
// or on every process) to report global values: the ratio of the global
// sums, not a mean of the processes' ratios.
//
// The length of State depends only on the metric's kind and configuration,
// never on the data fed: a fresh or Reset metric returns that many zeros,
// so a process that saw no batch still all-reduces a vector of the right
// length. The configurations that fix it: ConfusionMatrix keeps
// NumClasses² counts; a PRF keeps counts for 2 classes (Binary) or for
// NumClasses classes or labels, which must then be set (its State panics
// otherwise); BLEU keeps its four n-gram orders whatever the sentences; the
// other metrics keep two to four sums. R2 keeps n, Σy, Σy² and SS_res,
// which recover its Welford mean and SS_tot to the precision its State
// documents.
//
// Deliberately not Summable: AUROC and AUCPR keep every score and label
// (gather those across processes instead); LearningRate holds the last
// value set, the same on every process; IterationSpeed's seconds elapse
// concurrently on all processes, so summing them would report items per
// process-second rather than the global throughput (add the processes'
// Values instead); CPUUsage and MemoryUsage sample one machine.
type Summable interface {
	Metric
	// State returns a copy of the accumulated state, of the length the
	// metric's configuration fixes. The layout is the metric's own: sum it
	// only with States of metrics of the same kind and configuration.
	State() []float64
	// SetState replaces the accumulated state by s, a State (or a sum of
	// States) of metrics of the same kind and configuration; the
	// configuration itself (names, thresholds, class counts) is kept. An s
	// of the wrong length, or values the metric cannot hold, give an error
	// wrapping ErrState and leave the metric unchanged.
	SetState(s []float64) error
}

// ErrState is wrapped by the errors SetState returns for a state that does
// not fit the metric.
var ErrState = errors.New("metrics: state does not fit the metric")

// checkState returns an ErrState error unless s holds want values.
func checkState(metric string, s []float64, want int) error {
	if len(s) != want {
		return fmt.Errorf("%w: %s: %d values, want %d", ErrState, metric, len(s), want)
	}
	return nil
}

// ErrInput is wrapped by the errors Update returns for outputs or targets
// whose shape, dtype or values do not fit the metric.
var ErrInput = errors.New("metrics: invalid input")

// ErrNotTensor is returned by Update on metrics that are not fed tensors.
var ErrNotTensor = errors.New("metrics: metric is not fed by Update")

func inputErr(metric, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInput, metric, fmt.Sprintf(format, args...))
}

// host reads t to the host as float64 together with its shape.
func host(metric, what string, t *tensor.Tensor) ([]float64, []int, error) {
	if t == nil {
		return nil, nil, inputErr(metric, "%s is nil", what)
	}
	var v []float64
	var shape []int
	if err := tensor.Try(func() { shape = t.Shape(); v = t.Float64s() }); err != nil {
		return nil, nil, fmt.Errorf("metrics: %s: reading %s: %w", metric, what, err)
	}
	return v, shape, nil
}

// hostInts reads t to the host as int64, requiring an integer or bool dtype,
// or a float dtype holding whole numbers.
func hostInts(metric, what string, t *tensor.Tensor) ([]int64, []int, error) {
	v, shape, err := host(metric, what, t)
	if err != nil {
		return nil, nil, err
	}
	out := make([]int64, len(v))
	for i, x := range v {
		if x != float64(int64(x)) {
			return nil, nil, inputErr(metric, "%s holds %v, not a class index", what, x)
		}
		out[i] = int64(x)
	}
	return out, shape, nil
}

func shapeStr(s []int) string { return fmt.Sprint(s) }

func ratio(num, den float64) float64 {
	if den == 0 {
		return 0
	}
	return num / den
}

func nanIfZero(num, den float64) float64 {
	if den == 0 {
		return nanValue
	}
	return num / den
}

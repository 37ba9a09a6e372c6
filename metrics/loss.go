package metrics

import (
	"fmt"
	"math"
	"time"

	"github.com/kiln-ml/kiln/tensor"
)

var nanValue = math.NaN()

// Loss is the mean of per-batch losses weighted by batch size: feed it with
// UpdateLoss after each batch. Update takes a scalar loss tensor as outputs
// and uses the first dimension of targets as the batch size.
type Loss struct {
	name       string
	sum, count float64
}

// NewLoss returns a Loss metric named "loss".
func NewLoss() *Loss { return &Loss{name: "loss"} }

// NewNamedLoss returns a Loss metric with the given name ("val_loss").
func NewNamedLoss(name string) *Loss { return &Loss{name: name} }

// Name implements Metric.
func (m *Loss) Name() string { return m.name }

// UpdateLoss adds a batch whose mean loss is loss over n items. It returns
// an error for n < 0; n == 0 is ignored.
func (m *Loss) UpdateLoss(loss float64, n int) error {
	if n < 0 {
		return inputErr(m.name, "batch size %d is negative", n)
	}
	m.sum += loss * float64(n)
	m.count += float64(n)
	return nil
}

// Update reads the scalar loss tensor outputs and adds it with the batch
// size targets.Dim(0) (1 when targets is nil or a scalar).
func (m *Loss) Update(outputs, targets *tensor.Tensor) error {
	v, _, err := host(m.name, "outputs", outputs)
	if err != nil {
		return err
	}
	if len(v) != 1 {
		return inputErr(m.name, "outputs must hold one loss value, got %d", len(v))
	}
	n := 1
	if targets != nil {
		if err := tensor.Try(func() {
			if targets.Dims() > 0 {
				n = targets.Dim(0)
			}
		}); err != nil {
			return fmt.Errorf("metrics: %s: %w", m.name, err)
		}
	}
	return m.UpdateLoss(v[0], n)
}

// Value is the size-weighted mean loss, NaN before any batch.
func (m *Loss) Value() float64 { return nanIfZero(m.sum, m.count) }

// Reset implements Metric.
func (m *Loss) Reset() { m.sum, m.count = 0, 0 }

// State implements Summable: the size-weighted loss sum and the item count.
func (m *Loss) State() []float64 { return []float64{m.sum, m.count} }

// SetState implements Summable.
func (m *Loss) SetState(s []float64) error {
	if err := checkState(m.name, s, 2); err != nil {
		return err
	}
	m.sum, m.count = s[0], s[1]
	return nil
}

// LearningRate reports the learning rate last given to Set; the loop feeds
// it from the optimizer or scheduler once per step.
type LearningRate struct {
	lr  float64
	set bool
}

// NewLearningRate returns a LearningRate metric named "lr".
func NewLearningRate() *LearningRate { return &LearningRate{} }

// Name implements Metric.
func (m *LearningRate) Name() string { return "lr" }

// Set records the current learning rate.
func (m *LearningRate) Set(lr float64) { m.lr, m.set = lr, true }

// Update returns ErrNotTensor: use Set.
func (m *LearningRate) Update(outputs, targets *tensor.Tensor) error { return ErrNotTensor }

// Value is the last learning rate set, NaN before any.
func (m *LearningRate) Value() float64 {
	if !m.set {
		return nanValue
	}
	return m.lr
}

// Reset implements Metric.
func (m *LearningRate) Reset() { m.lr, m.set = 0, false }

// IterationSpeed reports throughput in items per second over everything fed
// since Reset: total items divided by total time. The loop feeds it with
// Add(items, elapsed) per step, or with Tick(items), which measures the time
// since the previous Tick (or Reset, or creation).
type IterationSpeed struct {
	items   float64
	seconds float64
	last    time.Time
	now     func() time.Time
}

// NewIterationSpeed returns an IterationSpeed metric named "items_per_sec".
func NewIterationSpeed() *IterationSpeed {
	m := &IterationSpeed{now: time.Now}
	m.last = m.now()
	return m
}

// Name implements Metric.
func (m *IterationSpeed) Name() string { return "items_per_sec" }

// Add records that items were processed in elapsed time. Negative values
// are an error.
func (m *IterationSpeed) Add(items int, elapsed time.Duration) error {
	if items < 0 || elapsed < 0 {
		return inputErr(m.Name(), "items %d and elapsed %v must not be negative", items, elapsed)
	}
	m.items += float64(items)
	m.seconds += elapsed.Seconds()
	return nil
}

// Tick records that items were processed since the previous Tick (or
// Reset, or NewIterationSpeed). On a zero IterationSpeed never reset, the
// first Tick only starts the clock.
func (m *IterationSpeed) Tick(items int) error {
	t := m.clock()
	if m.last.IsZero() {
		m.last = t
		return nil
	}
	err := m.Add(items, t.Sub(m.last))
	m.last = t
	return err
}

func (m *IterationSpeed) clock() time.Time {
	if m.now == nil {
		m.now = time.Now
	}
	return m.now()
}

// Update returns ErrNotTensor: use Add or Tick.
func (m *IterationSpeed) Update(outputs, targets *tensor.Tensor) error { return ErrNotTensor }

// Value is items per second, NaN before any time was recorded.
func (m *IterationSpeed) Value() float64 { return nanIfZero(m.items, m.seconds) }

// Reset forgets the totals and restarts the Tick clock.
func (m *IterationSpeed) Reset() { m.items, m.seconds, m.last = 0, 0, m.clock() }

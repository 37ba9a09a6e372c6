package metrics

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// overlap holds the per-class counts that Dice and IoU share: true
// positives, false positives and false negatives of each class over the
// pixels (or items) fed, those whose target is IgnoreIndex left out.
type overlap struct {
	// NumClasses is the number of classes (at least 2).
	NumClasses int
	// IgnoreIndex is a target value whose pixels are skipped (255 in many
	// segmentation data sets); the default −1 matches no class.
	IgnoreIndex int64
	// Threshold turns binary scores (float outputs shaped like the
	// targets, NumClasses 2) into class 1 where a score is above it: 0.5
	// for probabilities (the default), 0 for logits.
	Threshold float64
	// Average is Macro (the mean of the per-class scores over the classes
	// present in targets or predictions) or Micro (the score of the
	// pooled counts).
	Average    Average
	tp, fp, fn []float64
}

func newOverlap(op string, numClasses int, avg Average) overlap {
	if numClasses < 2 {
		panic(fmt.Sprintf("metrics.%s: numClasses = %d must be at least 2", op, numClasses))
	}
	return overlap{NumClasses: numClasses, IgnoreIndex: -1, Threshold: 0.5, Average: avg}
}

func (o *overlap) ensure() {
	if len(o.tp) != o.NumClasses {
		o.tp = make([]float64, o.NumClasses)
		o.fp = make([]float64, o.NumClasses)
		o.fn = make([]float64, o.NumClasses)
	}
}

// update reads a batch. Outputs are [N, C, d…] class scores (the first
// arg max over dimension 1 is the prediction) with targets [N, d…]; or
// outputs of the targets' shape holding class indices (an integer or
// bool dtype) or binary scores (a float dtype, NumClasses 2, predicted 1
// above Threshold), which may also come as [N, 1, d…].
func (o *overlap) update(name string, outputs, targets *tensor.Tensor) error {
	out, oshape, err := host(name, "outputs", outputs)
	if err != nil {
		return err
	}
	truth, tshape, err := hostInts(name, "targets", targets)
	if err != nil {
		return err
	}
	k := o.NumClasses
	var pred []int64
	if k == 2 && len(oshape) == len(tshape)+1 && len(oshape) >= 2 && oshape[1] == 1 && outputs.DType().IsFloat() &&
		shapeStr(append([]int{oshape[0]}, oshape[2:]...)) == shapeStr(tshape) {
		oshape = tshape // [N, 1, …] binary scores of a one-channel head
	}
	switch {
	case shapeStr(oshape) == shapeStr(tshape):
		pred = make([]int64, len(out))
		if outputs.DType().IsFloat() {
			if k != 2 {
				return inputErr(name, "float outputs %s shaped like the targets are binary scores, but NumClasses is %d "+
					"(give [N, C, …] scores or integer class indices)", shapeStr(oshape), k)
			}
			for i, v := range out {
				if v > o.Threshold {
					pred[i] = 1
				}
			}
			break
		}
		for i, v := range out {
			if v < 0 || v >= float64(k) {
				return inputErr(name, "predicted class %v is outside [0, %d)", v, k)
			}
			pred[i] = int64(v)
		}
	case len(oshape) == len(tshape)+1 && len(oshape) >= 2 && oshape[1] == k &&
		shapeStr(append([]int{oshape[0]}, oshape[2:]...)) == shapeStr(tshape):
		inner := 1
		for _, d := range oshape[2:] {
			inner *= d
		}
		pred = make([]int64, len(truth))
		for b := range oshape[0] {
			for p := range inner {
				best := 0
				base := b * k * inner
				for c := 1; c < k; c++ {
					v, bv := out[base+c*inner+p], out[base+best*inner+p]
					if v > bv || (math.IsNaN(bv) && !math.IsNaN(v)) {
						best = c
					}
				}
				pred[b*inner+p] = int64(best)
			}
		}
	default:
		return inputErr(name, "outputs %s must be [N, %d, …] class scores or class indices shaped like targets %s",
			shapeStr(oshape), k, shapeStr(tshape))
	}
	for _, t := range truth {
		if t != o.IgnoreIndex && (t < 0 || t >= int64(k)) {
			return inputErr(name, "target class %d is outside [0, %d) and is not IgnoreIndex %d", t, k, o.IgnoreIndex)
		}
	}
	o.ensure()
	for i, t := range truth {
		if t == o.IgnoreIndex {
			continue
		}
		p := pred[i]
		if p == t {
			o.tp[t]++
		} else {
			o.fp[p]++
			o.fn[t]++
		}
	}
	return nil
}

// score returns the per-class scores num/den and their average, where
// num = a·tp and den = a·tp + fp + fn; a class whose denominator is 0
// (absent from targets and predictions) scores NaN and is left out of the
// Macro mean.
func (o *overlap) score(a float64) (perClass []float64, avg float64) {
	o.ensure()
	perClass = make([]float64, o.NumClasses)
	var num, den, sum, present float64
	for c := range perClass {
		n, d := a*o.tp[c], a*o.tp[c]+o.fp[c]+o.fn[c]
		num += n
		den += d
		perClass[c] = nanIfZero(n, d)
		if d > 0 {
			sum += perClass[c]
			present++
		}
	}
	if o.Average == Micro {
		return perClass, nanIfZero(num, den)
	}
	return perClass, nanIfZero(sum, present)
}

func (o *overlap) reset() {
	clear(o.tp)
	clear(o.fp)
	clear(o.fn)
}

// state returns tp, fp and fn of every class, in that order.
func (o *overlap) state() []float64 {
	k := max(o.NumClasses, 0)
	s := make([]float64, 0, 3*k)
	if len(o.tp) != k {
		return make([]float64, 3*k)
	}
	return append(append(append(s, o.tp...), o.fp...), o.fn...)
}

func (o *overlap) setState(name string, s []float64) error {
	k := max(o.NumClasses, 0)
	if err := checkState(name, s, 3*k); err != nil {
		return err
	}
	for _, v := range s {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s: count %v is not a non-negative number", ErrState, name, v)
		}
	}
	o.tp = append([]float64(nil), s[:k]...)
	o.fp = append([]float64(nil), s[k:2*k]...)
	o.fn = append([]float64(nil), s[2*k:]...)
	return nil
}

func (o *overlap) suffix() string {
	if o.Average == Micro {
		return "_micro"
	}
	return "_macro"
}

// Dice is the Sørensen–Dice coefficient 2·TP / (2·TP + FP + FN) of each
// class over all pixels fed (segmentation masks, or items of a
// classifier), pixels whose target is IgnoreIndex left out; Value is
// their Macro mean over the classes present or the Micro score of the
// pooled counts. Outputs are [N, C, …] class scores (arg max over
// dimension 1) with targets [N, …] of class indices; or outputs shaped
// like the targets, holding class indices (an integer dtype) or, for two
// classes, binary scores (a float dtype, class 1 above Threshold; [N, 1,
// …] as a one-channel head gives them is taken too).
type Dice struct{ overlap }

// NewDice returns a Dice metric over numClasses classes with the given
// average, no ignored index and threshold 0.5. It panics if numClasses is
// below 2.
func NewDice(numClasses int, avg Average) *Dice {
	return &Dice{newOverlap("NewDice", numClasses, avg)}
}

// Name is "dice_macro" or "dice_micro".
func (m *Dice) Name() string { return "dice" + m.suffix() }

// Update implements Metric; it returns an ErrInput error for shapes that
// do not fit (see Dice) or classes out of range.
func (m *Dice) Update(outputs, targets *tensor.Tensor) error {
	return m.update(m.Name(), outputs, targets)
}

// Value is the averaged Dice coefficient, NaN before any pixel.
func (m *Dice) Value() float64 { _, v := m.score(2); return v }

// PerClass returns each class's Dice coefficient (NaN for a class absent
// from the targets and the predictions).
func (m *Dice) PerClass() []float64 { v, _ := m.score(2); return v }

// Values returns Name() and "dice_<c>" for each class c.
func (m *Dice) Values() map[string]float64 {
	per, v := m.score(2)
	out := map[string]float64{m.Name(): v}
	for c, s := range per {
		out[fmt.Sprintf("dice_%d", c)] = s
	}
	return out
}

// Reset implements Metric.
func (m *Dice) Reset() { m.reset() }

// State implements Summable: the true positives, false positives and
// false negatives of each class (3·NumClasses values).
func (m *Dice) State() []float64 { return m.state() }

// SetState implements Summable; counts must be non-negative and finite.
func (m *Dice) SetState(s []float64) error { return m.setState(m.Name(), s) }

// IoU is the intersection over union (Jaccard index) TP / (TP + FP + FN)
// of each class over all pixels fed, pixels whose target is IgnoreIndex
// left out; with the Macro average, Value is the mean IoU (mIoU) over the
// classes present in targets or predictions, as mmsegmentation reports
// it; with Micro, the IoU of the pooled counts. Inputs are as for Dice.
type IoU struct{ overlap }

// NewIoU returns an IoU metric over numClasses classes with the given
// average (Macro for mIoU), no ignored index and threshold 0.5. It panics
// if numClasses is below 2.
func NewIoU(numClasses int, avg Average) *IoU {
	return &IoU{newOverlap("NewIoU", numClasses, avg)}
}

// Name is "miou" (Macro) or "iou_micro".
func (m *IoU) Name() string {
	if m.Average == Micro {
		return "iou_micro"
	}
	return "miou"
}

// Update implements Metric; it returns an ErrInput error for shapes that
// do not fit (see Dice) or classes out of range.
func (m *IoU) Update(outputs, targets *tensor.Tensor) error {
	return m.update(m.Name(), outputs, targets)
}

// Value is the averaged IoU, NaN before any pixel.
func (m *IoU) Value() float64 { _, v := m.score(1); return v }

// PerClass returns each class's IoU (NaN for a class absent from the
// targets and the predictions).
func (m *IoU) PerClass() []float64 { v, _ := m.score(1); return v }

// Values returns Name() and "iou_<c>" for each class c.
func (m *IoU) Values() map[string]float64 {
	per, v := m.score(1)
	out := map[string]float64{m.Name(): v}
	for c, s := range per {
		out[fmt.Sprintf("iou_%d", c)] = s
	}
	return out
}

// Reset implements Metric.
func (m *IoU) Reset() { m.reset() }

// State implements Summable: the true positives, false positives and
// false negatives of each class (3·NumClasses values).
func (m *IoU) State() []float64 { return m.state() }

// SetState implements Summable; counts must be non-negative and finite.
func (m *IoU) SetState(s []float64) error { return m.setState(m.Name(), s) }

package metrics

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// pairs reads outputs and targets with the same number of elements.
func pairs(name string, outputs, targets *tensor.Tensor) (o, t []float64, err error) {
	o, oshape, err := host(name, "outputs", outputs)
	if err != nil {
		return nil, nil, err
	}
	t, tshape, err := host(name, "targets", targets)
	if err != nil {
		return nil, nil, err
	}
	if len(o) != len(t) {
		return nil, nil, inputErr(name, "outputs %s and targets %s differ in size", shapeStr(oshape), shapeStr(tshape))
	}
	return o, t, nil
}

// MSE is the mean squared error over all elements fed (outputs and targets
// with the same number of elements; every element counts once).
type MSE struct{ sum, n float64 }

// NewMSE returns an MSE metric.
func NewMSE() *MSE { return &MSE{} }

// Name implements Metric.
func (m *MSE) Name() string { return "mse" }

// Update implements Metric.
func (m *MSE) Update(outputs, targets *tensor.Tensor) error {
	o, t, err := pairs(m.Name(), outputs, targets)
	if err != nil {
		return err
	}
	for i := range o {
		d := o[i] - t[i]
		m.sum += d * d
	}
	m.n += float64(len(o))
	return nil
}

// Value implements Metric; NaN before any element.
func (m *MSE) Value() float64 { return nanIfZero(m.sum, m.n) }

// Values returns "mse" and "rmse".
func (m *MSE) Values() map[string]float64 {
	return map[string]float64{"mse": m.Value(), "rmse": math.Sqrt(m.Value())}
}

// Reset implements Metric.
func (m *MSE) Reset() { m.sum, m.n = 0, 0 }

// State implements Summable: the sum of squared errors and the element count.
func (m *MSE) State() []float64 { return []float64{m.sum, m.n} }

// SetState implements Summable.
func (m *MSE) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.sum, m.n = s[0], s[1]
	return nil
}

// MAE is the mean absolute error over all elements fed.
type MAE struct{ sum, n float64 }

// NewMAE returns an MAE metric.
func NewMAE() *MAE { return &MAE{} }

// Name implements Metric.
func (m *MAE) Name() string { return "mae" }

// Update implements Metric.
func (m *MAE) Update(outputs, targets *tensor.Tensor) error {
	o, t, err := pairs(m.Name(), outputs, targets)
	if err != nil {
		return err
	}
	for i := range o {
		m.sum += math.Abs(o[i] - t[i])
	}
	m.n += float64(len(o))
	return nil
}

// Value implements Metric; NaN before any element.
func (m *MAE) Value() float64 { return nanIfZero(m.sum, m.n) }

// Reset implements Metric.
func (m *MAE) Reset() { m.sum, m.n = 0, 0 }

// State implements Summable: the sum of absolute errors and the element count.
func (m *MAE) State() []float64 { return []float64{m.sum, m.n} }

// SetState implements Summable.
func (m *MAE) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.sum, m.n = s[0], s[1]
	return nil
}

// R2 is the coefficient of determination 1 − SS_res / SS_tot over all
// elements fed, pooled as one output (scikit-learn's r2_score on the
// flattened arrays). The target mean and SS_tot are merged across batches
// with Chan's parallel update, so they are exact and stable; summed across
// processes (Summable), they go through plain sums instead, as State says.
// As scikit-learn, a constant target gives 1 when predicted exactly and 0
// otherwise.
type R2 struct{ n, mean, m2, ssres float64 }

// NewR2 returns an R2 metric.
func NewR2() *R2 { return &R2{} }

// Name implements Metric.
func (m *R2) Name() string { return "r2" }

// Update implements Metric.
func (m *R2) Update(outputs, targets *tensor.Tensor) error {
	o, t, err := pairs(m.Name(), outputs, targets)
	if err != nil {
		return err
	}
	if len(t) == 0 {
		return nil
	}
	var mean float64
	for i := range t {
		d := o[i] - t[i]
		m.ssres += d * d
		mean += t[i]
	}
	nb := float64(len(t))
	mean /= nb
	var m2 float64
	for _, y := range t {
		m2 += (y - mean) * (y - mean)
	}
	n := m.n + nb
	delta := mean - m.mean
	m.m2 += m2 + delta*delta*m.n*nb/n
	m.mean += delta * nb / n
	m.n = n
	return nil
}

// Value implements Metric; NaN before any element.
func (m *R2) Value() float64 {
	switch {
	case m.n == 0:
		return nanValue
	case m.m2 == 0 && m.ssres == 0:
		return 1
	case m.m2 == 0:
		return 0
	}
	return 1 - m.ssres/m.m2
}

// Reset implements Metric.
func (m *R2) Reset() { *m = R2{} }

// State implements Summable: the element count n, Σy, Σy² and SS_res,
// plain sums that add across processes (the Welford mean and SS_tot R2
// keeps do not). SetState recovers SS_tot as Σy² − (Σy)²/n, whose relative
// error is about 1e-16·(1 + mean²/variance) of the targets: negligible for
// targets of a spread comparable to their mean, but 1e-4 when the mean is
// 10⁶ standard deviations from 0. There, subtract a constant near the
// mean from outputs and targets before Update; R2 does not change.
func (m *R2) State() []float64 {
	return []float64{m.n, m.n * m.mean, m.m2 + m.n*m.mean*m.mean, m.ssres}
}

// SetState implements Summable. An SS_tot within the rounding noise of the
// sums (under 2⁻⁴⁴ of Σy², a few hundred units in its last place) is taken
// as 0: the targets were constant.
func (m *R2) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 4); err != nil {
		return err
	}
	n, sum, sumSq, ssres := s[0], s[1], s[2], s[3]
	if n == 0 {
		*m = R2{ssres: ssres}
		return nil
	}
	mean := sum / n
	m2 := sumSq - sum*mean
	if m2 <= 0x1p-44*math.Abs(sumSq) {
		m2 = 0
	}
	m.n, m.mean, m.m2, m.ssres = n, mean, m2, ssres
	return nil
}

// Perplexity is exp of the mean negative log-likelihood per token over all
// tokens fed. Update takes logits [..., V] and Int64 targets with the
// leading shape [...] (targets equal to IgnoreIndex, -100 by default, are
// skipped, as in PyTorch's cross-entropy); UpdateNLL takes a summed NLL and
// its token count from a loss already computed.
type Perplexity struct {
	IgnoreIndex int64
	nll, tokens float64
}

// NewPerplexity returns a Perplexity metric ignoring targets of -100.
func NewPerplexity() *Perplexity { return &Perplexity{IgnoreIndex: -100} }

// Name implements Metric.
func (m *Perplexity) Name() string { return "perplexity" }

// UpdateNLL adds tokens tokens whose negative log-likelihoods sum to nll
// (for a mean cross-entropy loss over n tokens: UpdateNLL(loss*n, n)).
func (m *Perplexity) UpdateNLL(nll float64, tokens int) error {
	if tokens < 0 {
		return inputErr(m.Name(), "token count %d is negative", tokens)
	}
	m.nll += nll
	m.tokens += float64(tokens)
	return nil
}

// Update implements Metric.
func (m *Perplexity) Update(outputs, targets *tensor.Tensor) error {
	out, oshape, err := host(m.Name(), "outputs", outputs)
	if err != nil {
		return err
	}
	tgt, tshape, err := hostInts(m.Name(), "targets", targets)
	if err != nil {
		return err
	}
	if len(oshape) < 1 || oshape[len(oshape)-1] < 1 || len(tshape) != len(oshape)-1 {
		return inputErr(m.Name(), "outputs %s must be [..., V] logits for targets %s", shapeStr(oshape), shapeStr(tshape))
	}
	for i := range tshape {
		if tshape[i] != oshape[i] {
			return inputErr(m.Name(), "outputs %s must be [..., V] logits for targets %s", shapeStr(oshape), shapeStr(tshape))
		}
	}
	v := oshape[len(oshape)-1]
	var nll, count float64
	for i, t := range tgt {
		if t == m.IgnoreIndex {
			continue
		}
		if t < 0 || t >= int64(v) {
			return inputErr(m.Name(), "target token %d is outside [0, %d)", t, v)
		}
		row := out[i*v : (i+1)*v]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, x)
		}
		var s float64
		for _, x := range row {
			s += math.Exp(x - mx)
		}
		nll += mx + math.Log(s) - row[t]
		count++
	}
	m.nll += nll
	m.tokens += count
	return nil
}

// Value is exp(total NLL / tokens), NaN before any token.
func (m *Perplexity) Value() float64 { return math.Exp(nanIfZero(m.nll, m.tokens)) }

// Values returns "perplexity" and "nll" (the mean per token).
func (m *Perplexity) Values() map[string]float64 {
	return map[string]float64{"perplexity": m.Value(), "nll": nanIfZero(m.nll, m.tokens)}
}

// Reset implements Metric.
func (m *Perplexity) Reset() { m.nll, m.tokens = 0, 0 }

// State implements Summable: the summed NLL and the token count.
func (m *Perplexity) State() []float64 { return []float64{m.nll, m.tokens} }

// SetState implements Summable.
func (m *Perplexity) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.nll, m.tokens = s[0], s[1]
	return nil
}

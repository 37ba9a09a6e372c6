package metrics

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// MultilabelTopK is precision and recall at k for multilabel outputs:
// the k highest scores of each row are its predicted labels (a lower
// label index ranks first among equal scores, as a stable descending sort
// would), hits are predicted labels whose target is 1, and over all rows
// fed
//
//	precision@k = hits / (rows · min(k, L)),  recall@k = hits / relevant labels,
//
// pooled as torchmetrics' MultilabelPrecision and MultilabelRecall with
// top_k and average="micro". Outputs are [N, L] scores (logits or
// probabilities); targets [N, L] of 0s and 1s. Value is the score it was
// made as (NewPrecisionAtK or NewRecallAtK); Values reports both.
type MultilabelTopK struct {
	K                         int
	recall                    bool
	hits, predicted, relevant float64
}

// NewPrecisionAtK returns a MultilabelTopK metric whose Value is
// precision@k. It panics if k is below 1.
func NewPrecisionAtK(k int) *MultilabelTopK { return newTopK("NewPrecisionAtK", k, false) }

// NewRecallAtK returns a MultilabelTopK metric whose Value is recall@k. It
// panics if k is below 1.
func NewRecallAtK(k int) *MultilabelTopK { return newTopK("NewRecallAtK", k, true) }

func newTopK(op string, k int, recall bool) *MultilabelTopK {
	if k < 1 {
		panic(fmt.Sprintf("metrics.%s: k = %d must be at least 1", op, k))
	}
	return &MultilabelTopK{K: k, recall: recall}
}

// Name is "precision_at_<K>" or "recall_at_<K>".
func (m *MultilabelTopK) Name() string {
	if m.recall {
		return fmt.Sprintf("recall_at_%d", m.K)
	}
	return fmt.Sprintf("precision_at_%d", m.K)
}

// Update implements Metric; it returns an ErrInput error unless outputs
// and targets are both [N, L] with targets in {0, 1}.
func (m *MultilabelTopK) Update(outputs, targets *tensor.Tensor) error {
	out, oshape, err := host(m.Name(), "outputs", outputs)
	if err != nil {
		return err
	}
	tgt, tshape, err := host(m.Name(), "targets", targets)
	if err != nil {
		return err
	}
	if len(oshape) != 2 || shapeStr(oshape) != shapeStr(tshape) {
		return inputErr(m.Name(), "outputs %s and targets %s must both be [N, L]", shapeStr(oshape), shapeStr(tshape))
	}
	for _, v := range tgt {
		if v != 0 && v != 1 {
			return inputErr(m.Name(), "target %v is not 0 or 1", v)
		}
	}
	n, l := oshape[0], oshape[1]
	k := min(m.K, l)
	var hits, relevant float64
	for i := range n {
		row, trow := out[i*l:(i+1)*l], tgt[i*l:(i+1)*l]
		for j, s := range row {
			relevant += trow[j]
			if trow[j] == 0 {
				continue
			}
			// label j is in the top k when fewer than k labels rank above it
			rank := 0
			for q, v := range row {
				if v > s || (v == s && q < j) {
					rank++
				}
			}
			if rank < k {
				hits++
			}
		}
	}
	m.hits += hits
	m.predicted += float64(n * k)
	m.relevant += relevant
	return nil
}

func (m *MultilabelTopK) precision() float64 { return nanIfZero(m.hits, m.predicted) }

// recallValue is NaN before any row and 0 when rows were fed but no
// target was 1.
func (m *MultilabelTopK) recallValue() float64 {
	if m.predicted == 0 {
		return nanValue
	}
	return ratio(m.hits, m.relevant)
}

// Value is precision@K or recall@K, NaN before any row.
func (m *MultilabelTopK) Value() float64 {
	if m.recall {
		return m.recallValue()
	}
	return m.precision()
}

// Values returns "precision_at_<K>" and "recall_at_<K>".
func (m *MultilabelTopK) Values() map[string]float64 {
	return map[string]float64{
		fmt.Sprintf("precision_at_%d", m.K): m.precision(),
		fmt.Sprintf("recall_at_%d", m.K):    m.recallValue(),
	}
}

// Reset implements Metric.
func (m *MultilabelTopK) Reset() { m.hits, m.predicted, m.relevant = 0, 0, 0 }

// State implements Summable: hits, predicted labels and relevant labels.
func (m *MultilabelTopK) State() []float64 { return []float64{m.hits, m.predicted, m.relevant} }

// SetState implements Summable.
func (m *MultilabelTopK) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 3); err != nil {
		return err
	}
	m.hits, m.predicted, m.relevant = s[0], s[1], s[2]
	return nil
}

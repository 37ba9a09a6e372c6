package metrics

import (
	"sort"

	"github.com/kiln-ml/kiln/tensor"
)

// binaryScores keeps every score and label fed, for the ranking metrics.
type binaryScores struct {
	scores []float64
	labels []bool
}

// add reads outputs [N] or [N, 1] scores (or [N, 2], whose column 1 is the
// positive-class score) and targets N values in {0, 1}.
func (b *binaryScores) add(name string, outputs, targets *tensor.Tensor) error {
	out, oshape, err := host(name, "outputs", outputs)
	if err != nil {
		return err
	}
	tv, tshape, err := host(name, "targets", targets)
	if err != nil {
		return err
	}
	var s []float64
	switch {
	case len(oshape) == 1 || (len(oshape) == 2 && oshape[1] == 1):
		s = out
	case len(oshape) == 2 && oshape[1] == 2:
		s = make([]float64, oshape[0])
		for i := range s {
			s[i] = out[2*i+1]
		}
	default:
		return inputErr(name, "outputs %s must be [N], [N, 1] or [N, 2] binary scores", shapeStr(oshape))
	}
	if len(tv) != len(s) || len(tshape) > 2 {
		return inputErr(name, "targets %s must hold one label per score of outputs %s", shapeStr(tshape), shapeStr(oshape))
	}
	l := make([]bool, len(tv))
	for i, v := range tv {
		if v != 0 && v != 1 {
			return inputErr(name, "target %v is not 0 or 1", v)
		}
		l[i] = v == 1
	}
	b.scores = append(b.scores, s...)
	b.labels = append(b.labels, l...)
	return nil
}

// curve returns cumulative true and false positives at each distinct score,
// from the highest score down, as scikit-learn's _binary_clf_curve: tied
// scores form one threshold.
func (b *binaryScores) curve() (tps, fps []float64) {
	idx := make([]int, len(b.scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return b.scores[idx[i]] > b.scores[idx[j]] })
	var tp, fp float64
	for k, i := range idx {
		if b.labels[i] {
			tp++
		} else {
			fp++
		}
		if k == len(idx)-1 || b.scores[idx[k+1]] != b.scores[i] {
			tps, fps = append(tps, tp), append(fps, fp)
		}
	}
	return tps, fps
}

func (b *binaryScores) reset() { b.scores, b.labels = nil, nil }

// AUROC is the area under the ROC curve of binary scores, exact over all
// items fed (it keeps every score: 9 bytes per item), with tied scores
// handled as scikit-learn's roc_auc_score (a tie between a positive and a
// negative counts one half). Outputs are [N] or [N, 1] scores, or [N, 2]
// class scores whose column 1 is used; targets are N labels in {0, 1}.
// Value is NaN unless both classes occur.
type AUROC struct{ b binaryScores }

// NewAUROC returns an AUROC metric.
func NewAUROC() *AUROC { return &AUROC{} }

// Name implements Metric.
func (m *AUROC) Name() string { return "auroc" }

// Update implements Metric.
func (m *AUROC) Update(outputs, targets *tensor.Tensor) error {
	return m.b.add(m.Name(), outputs, targets)
}

// Value implements Metric.
func (m *AUROC) Value() float64 {
	tps, fps := m.b.curve()
	if len(tps) == 0 {
		return nanValue
	}
	p, n := tps[len(tps)-1], fps[len(fps)-1]
	if p == 0 || n == 0 {
		return nanValue
	}
	var area, ptp, pfp float64
	for i := range tps {
		area += (fps[i] - pfp) * (tps[i] + ptp) / 2
		ptp, pfp = tps[i], fps[i]
	}
	return area / (p * n)
}

// Reset implements Metric.
func (m *AUROC) Reset() { m.b.reset() }

// AUCPR is the area under the precision-recall curve of binary scores,
// computed as scikit-learn's average_precision_score: Σ (R_k − R_{k−1}) P_k
// over the distinct score thresholds from the highest down (a step function,
// not the optimistic trapezoid). It keeps every score, reads inputs as AUROC
// does, and is NaN when no positive was fed.
type AUCPR struct{ b binaryScores }

// NewAUCPR returns an AUCPR (average precision) metric.
func NewAUCPR() *AUCPR { return &AUCPR{} }

// Name implements Metric.
func (m *AUCPR) Name() string { return "auc_pr" }

// Update implements Metric.
func (m *AUCPR) Update(outputs, targets *tensor.Tensor) error {
	return m.b.add(m.Name(), outputs, targets)
}

// Value implements Metric.
func (m *AUCPR) Value() float64 {
	tps, fps := m.b.curve()
	if len(tps) == 0 || tps[len(tps)-1] == 0 {
		return nanValue
	}
	p := tps[len(tps)-1]
	var ap, prevR float64
	for i := range tps {
		r := tps[i] / p
		ap += (r - prevR) * tps[i] / (tps[i] + fps[i])
		prevR = r
	}
	return ap
}

// Reset implements Metric.
func (m *AUCPR) Reset() { m.b.reset() }

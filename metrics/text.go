package metrics

import (
	"math"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// TextMetric is implemented by the metrics over decoded text (CER, WER,
// BLEU, ROUGE-L). UpdateText adds a batch of hypotheses and their
// references, paired by index; it returns an error wrapping ErrInput when
// the slices differ in length. Their Update returns ErrNotTensor: decode
// model outputs to strings first. Words are the whitespace-separated fields
// (strings.Fields); no other tokenization or case folding is applied.
type TextMetric interface {
	Metric
	UpdateText(hypotheses, references []string) error
}

func checkPairs(name string, hyps, refs []string) error {
	if len(hyps) != len(refs) {
		return inputErr(name, "%d hypotheses for %d references", len(hyps), len(refs))
	}
	return nil
}

// editDistance is the Levenshtein distance between a and b (unit costs).
func editDistance(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func runes(s string) []string {
	out := make([]string, 0, len(s))
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

// ErrorRate is the character or word error rate: the edit distance
// (substitutions, insertions, deletions) between each hypothesis and its
// reference, summed over the corpus and divided by the total reference
// length, as jiwer computes it. It can exceed 1. Value is NaN while the
// references fed hold no characters (words).
type ErrorRate struct {
	words       bool
	edits, refs float64
}

// NewCER returns a character error rate over Unicode code points.
func NewCER() *ErrorRate { return &ErrorRate{} }

// NewWER returns a word error rate over whitespace-separated words.
func NewWER() *ErrorRate { return &ErrorRate{words: true} }

// Name is "cer" or "wer".
func (m *ErrorRate) Name() string {
	if m.words {
		return "wer"
	}
	return "cer"
}

// UpdateText implements TextMetric.
func (m *ErrorRate) UpdateText(hypotheses, references []string) error {
	if err := checkPairs(m.Name(), hypotheses, references); err != nil {
		return err
	}
	split := runes
	if m.words {
		split = strings.Fields
	}
	for i := range hypotheses {
		h, r := split(hypotheses[i]), split(references[i])
		m.edits += float64(editDistance(h, r))
		m.refs += float64(len(r))
	}
	return nil
}

// Update returns ErrNotTensor: use UpdateText.
func (m *ErrorRate) Update(outputs, targets *tensor.Tensor) error { return ErrNotTensor }

// Value implements Metric.
func (m *ErrorRate) Value() float64 { return nanIfZero(m.edits, m.refs) }

// Reset implements Metric.
func (m *ErrorRate) Reset() { m.edits, m.refs = 0, 0 }

// State implements Summable: the edit count and the reference length.
func (m *ErrorRate) State() []float64 { return []float64{m.edits, m.refs} }

// SetState implements Summable.
func (m *ErrorRate) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 2); err != nil {
		return err
	}
	m.edits, m.refs = s[0], s[1]
	return nil
}

// BLEU is corpus BLEU-4 as NLTK's corpus_bleu and sacrebleu compute it
// without smoothing: clipped n-gram matches and n-gram counts (n = 1..4) are
// summed over the corpus, their ratios combined by a geometric mean with
// equal weights, times the brevity penalty exp(1 − r/c) when the total
// hypothesis length c is below the total reference length r (the closest
// reference length per hypothesis, the shorter on ties). It is 0 when any
// order has no match. The value is in [0, 1] (sacrebleu reports 100×).
// Tokens are whitespace-separated words: tokenize beforehand (sacrebleu's
// 13a tokenizer splits punctuation) for comparable numbers.
type BLEU struct {
	match, total [4]float64
	hypLen       float64
	refLen       float64
}

// NewBLEU returns a corpus BLEU-4 metric.
func NewBLEU() *BLEU { return &BLEU{} }

// Name implements Metric.
func (m *BLEU) Name() string { return "bleu" }

func ngrams(w []string, n int) map[string]int {
	c := map[string]int{}
	for i := 0; i+n <= len(w); i++ {
		c[strings.Join(w[i:i+n], "\x00")]++
	}
	return c
}

// UpdateText adds hypotheses with one reference each.
func (m *BLEU) UpdateText(hypotheses, references []string) error {
	if err := checkPairs(m.Name(), hypotheses, references); err != nil {
		return err
	}
	refs := make([][]string, len(references))
	for i, r := range references {
		refs[i] = []string{r}
	}
	return m.UpdateMulti(hypotheses, refs)
}

// UpdateMulti adds hypotheses with one or more references each; n-gram
// matches are clipped by the largest count in any reference.
func (m *BLEU) UpdateMulti(hypotheses []string, references [][]string) error {
	if len(hypotheses) != len(references) {
		return inputErr(m.Name(), "%d hypotheses for %d reference sets", len(hypotheses), len(references))
	}
	for i := range references {
		if len(references[i]) == 0 {
			return inputErr(m.Name(), "hypothesis %d has no reference", i)
		}
	}
	for i, hs := range hypotheses {
		h := strings.Fields(hs)
		refs := make([][]string, len(references[i]))
		best := -1
		for j, r := range references[i] {
			refs[j] = strings.Fields(r)
			d, bd := abs(len(refs[j])-len(h)), abs(best-len(h))
			if best < 0 || d < bd || (d == bd && len(refs[j]) < best) {
				best = len(refs[j])
			}
		}
		m.hypLen += float64(len(h))
		m.refLen += float64(best)
		for n := 1; n <= 4; n++ {
			maxRef := map[string]int{}
			for _, r := range refs {
				for g, c := range ngrams(r, n) {
					maxRef[g] = max(maxRef[g], c)
				}
			}
			for g, c := range ngrams(h, n) {
				m.match[n-1] += float64(min(c, maxRef[g]))
				m.total[n-1] += float64(c)
			}
		}
	}
	return nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Update returns ErrNotTensor: use UpdateText or UpdateMulti.
func (m *BLEU) Update(outputs, targets *tensor.Tensor) error { return ErrNotTensor }

func (m *BLEU) brevity() float64 {
	if m.hypLen == 0 {
		return 0
	}
	if m.hypLen >= m.refLen {
		return 1
	}
	return math.Exp(1 - m.refLen/m.hypLen)
}

// Value is corpus BLEU-4, NaN before any hypothesis.
func (m *BLEU) Value() float64 {
	if m.hypLen == 0 && m.refLen == 0 {
		return nanValue
	}
	var logp float64
	for n := range 4 {
		if m.match[n] == 0 {
			return 0
		}
		logp += math.Log(m.match[n]/m.total[n]) / 4
	}
	return m.brevity() * math.Exp(logp)
}

// Values returns "bleu", the n-gram precisions "bleu_p1".."bleu_p4", the
// brevity penalty "bleu_bp" and the length ratio "bleu_ratio" (c / r).
func (m *BLEU) Values() map[string]float64 {
	out := map[string]float64{
		"bleu":       m.Value(),
		"bleu_bp":    m.brevity(),
		"bleu_ratio": nanIfZero(m.hypLen, m.refLen),
	}
	for n := range 4 {
		out["bleu_p"+string(rune('1'+n))] = nanIfZero(m.match[n], m.total[n])
	}
	return out
}

// Reset implements Metric.
func (m *BLEU) Reset() { *m = BLEU{} }

// State implements Summable: the clipped matches of orders 1 to 4, the
// n-gram counts of orders 1 to 4, then the hypothesis and reference
// lengths; 10 values whatever the sentences fed.
func (m *BLEU) State() []float64 {
	s := make([]float64, 0, 10)
	s = append(s, m.match[:]...)
	s = append(s, m.total[:]...)
	return append(s, m.hypLen, m.refLen)
}

// SetState implements Summable.
func (m *BLEU) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 10); err != nil {
		return err
	}
	copy(m.match[:], s[0:4])
	copy(m.total[:], s[4:8])
	m.hypLen, m.refLen = s[8], s[9]
	return nil
}

// RougeL is the ROUGE-L F-measure: per hypothesis–reference pair, with L the
// length of their longest common subsequence of words, precision L/|hyp|,
// recall L/|ref| and F = 2PR/(P+R) (0 when L is 0), averaged over the pairs
// fed, as Google's rouge-score reports per pair (without its stemming and
// lower-casing tokenizer).
type RougeL struct {
	p, r, f, n float64
}

// NewRougeL returns a ROUGE-L metric.
func NewRougeL() *RougeL { return &RougeL{} }

// Name implements Metric.
func (m *RougeL) Name() string { return "rouge_l" }

func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1] + 1
			} else {
				cur[j] = max(prev[j], cur[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// UpdateText implements TextMetric.
func (m *RougeL) UpdateText(hypotheses, references []string) error {
	if err := checkPairs(m.Name(), hypotheses, references); err != nil {
		return err
	}
	for i := range hypotheses {
		h, r := strings.Fields(hypotheses[i]), strings.Fields(references[i])
		l := float64(lcs(h, r))
		p, rc := ratio(l, float64(len(h))), ratio(l, float64(len(r)))
		m.p += p
		m.r += rc
		m.f += ratio(2*p*rc, p+rc)
		m.n++
	}
	return nil
}

// Update returns ErrNotTensor: use UpdateText.
func (m *RougeL) Update(outputs, targets *tensor.Tensor) error { return ErrNotTensor }

// Value is the mean F-measure, NaN before any pair.
func (m *RougeL) Value() float64 { return nanIfZero(m.f, m.n) }

// Values returns "rouge_l" (F) and the mean "rouge_l_precision" and
// "rouge_l_recall".
func (m *RougeL) Values() map[string]float64 {
	return map[string]float64{"rouge_l": m.Value(), "rouge_l_precision": nanIfZero(m.p, m.n), "rouge_l_recall": nanIfZero(m.r, m.n)}
}

// Reset implements Metric.
func (m *RougeL) Reset() { *m = RougeL{} }

// State implements Summable: the sums of the pairs' precisions, recalls and
// F-measures, and the pair count.
func (m *RougeL) State() []float64 { return []float64{m.p, m.r, m.f, m.n} }

// SetState implements Summable.
func (m *RougeL) SetState(s []float64) error {
	if err := checkState(m.Name(), s, 4); err != nil {
		return err
	}
	m.p, m.r, m.f, m.n = s[0], s[1], s[2], s[3]
	return nil
}

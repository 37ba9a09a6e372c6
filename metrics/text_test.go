package metrics_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
)

// checkText feeds the pairs to fresh metrics in every batching and checks
// Value and the named Values.
func checkText(t *testing.T, mk func() metrics.TextMetric, hyps, refs []string, want float64, vals map[string]float64) {
	t.Helper()
	for _, sp := range splits(len(hyps)) {
		m := mk()
		lo := 0
		for _, k := range sp {
			if err := m.UpdateText(hyps[lo:lo+k], refs[lo:lo+k]); err != nil {
				t.Fatal(err)
			}
			lo += k
		}
		if got := m.Value(); !close(got, want) {
			t.Errorf("%s batches %v: Value = %v, want %v", m.Name(), sp, got, want)
		}
		if mv, ok := m.(metrics.MultiValued); ok {
			vs := mv.Values()
			for k, w := range vals {
				if !close(vs[k], w) {
					t.Errorf("%s batches %v: %s = %v, want %v", m.Name(), sp, k, vs[k], w)
				}
			}
		}
		m.Reset()
		if !math.IsNaN(m.Value()) {
			t.Errorf("%s: Value after Reset = %v", m.Name(), m.Value())
		}
	}
}

func TestErrorRates(t *testing.T) {
	cer := func() metrics.TextMetric { return metrics.NewCER() }
	wer := func() metrics.TextMetric { return metrics.NewWER() }
	// kitten→sitting is 3 edits over 6 reference runes; "" vs "ab" 2 over 2;
	// "naïve" vs "naive" 1 over 5 (runes, not bytes). (3+2+1)/13.
	checkText(t, cer, []string{"sitting", "", "naïve"}, []string{"kitten", "ab", "naive"}, 6.0/13, nil)
	// One deletion over 4 words, then a substitution and an insertion over 4.
	checkText(t, wer, []string{"the cat sat", "a quick  fox"}, []string{"the cat sat down", "the quick brown fox"}, 3.0/8, nil)
	// Insertions make the rate exceed 1.
	checkText(t, wer, []string{"a b c d"}, []string{"a"}, 3, nil)
	if err := metrics.NewWER().UpdateText([]string{"a"}, nil); !errors.Is(err, metrics.ErrInput) {
		t.Errorf("length mismatch: err = %v", err)
	}
	if err := metrics.NewCER().Update(nil, nil); !errors.Is(err, metrics.ErrNotTensor) {
		t.Errorf("Update: err = %v", err)
	}
}

func TestBLEU(t *testing.T) {
	bleu := func() metrics.TextMetric { return metrics.NewBLEU() }
	// Pair 1 matches every n-gram (4/4, 3/3, 2/2, 1/1); pair 2 "a b a b"
	// against "a b c d" clips to 2/4, 1/3, 0/2, 0/1. Corpus precisions
	// 6/8, 4/6, 2/4, 1/2; c = 8 < r = 9, so BP = exp(1 − 9/8).
	hyps := []string{"a b c d", "a b a b"}
	refs := []string{"a b c d e", "a b c d"}
	want := math.Exp(-0.125) * math.Pow(0.75*(2.0/3)*0.5*0.5, 0.25)
	checkText(t, bleu, hyps, refs, want, map[string]float64{
		"bleu_p1": 0.75, "bleu_p2": 4.0 / 6, "bleu_p3": 0.5, "bleu_p4": 0.5,
		"bleu_bp": math.Exp(-0.125), "bleu_ratio": 8.0 / 9,
	})
	checkText(t, bleu, []string{"the cat sat on the mat"}, []string{"the cat sat on the mat"}, 1, nil)
	// No 4-gram match: 0 without smoothing.
	checkText(t, bleu, []string{"a b c x d e f"}, []string{"a b c y d e f"}, 0, nil)

	// Multiple references: clipping by the best reference, the closest
	// reference length (4, not 7) sets r, and c = 5 > r gives BP = 1.
	m := metrics.NewBLEU()
	if err := m.UpdateMulti([]string{"a b c d e"}, [][]string{{"a b c d", "x a b c d e f"}}); err != nil {
		t.Fatal(err)
	}
	if got := m.Value(); !close(got, 1) {
		t.Errorf("multi-reference BLEU = %v, want 1", got)
	}
	// Equally close references (2 and 4 for 3 words): the shorter counts.
	m.Reset()
	_ = m.UpdateMulti([]string{"p q r"}, [][]string{{"p q r s", "p q"}})
	if got := m.Values()["bleu_ratio"]; !close(got, 1.5) {
		t.Errorf("tie on reference length: ratio = %v, want 1.5", got)
	}
	if err := m.UpdateMulti([]string{"a"}, [][]string{{}}); !errors.Is(err, metrics.ErrInput) {
		t.Errorf("no reference: err = %v", err)
	}
}

func TestRougeL(t *testing.T) {
	// LCS "the cat on the mat" = 5 of 6 and 6: F 5/6; "a b" vs "b a c":
	// LCS 1, P 1/2, R 1/3, F 0.4; no common word: 0.
	hyps := []string{"the cat sat on the mat", "a b", "x"}
	refs := []string{"the cat was on the mat", "b a c", "y"}
	checkText(t, func() metrics.TextMetric { return metrics.NewRougeL() }, hyps, refs, (5.0/6+0.4)/3,
		map[string]float64{"rouge_l_precision": (5.0/6 + 0.5) / 3, "rouge_l_recall": (5.0/6 + 1.0/3) / 3})
}

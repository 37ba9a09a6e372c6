package metrics_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// batch feeds one batch to a metric.
type batch func(t *testing.T, dev tensor.Device, m metrics.Metric)

// tensorBatch feeds the rows r as one batch.
func tensorBatch(r rows) batch {
	return func(t *testing.T, dev tensor.Device, m metrics.Metric) {
		t.Helper()
		r.feed(t, dev, m, 0, r.n())
	}
}

// classBatch is n rows of c integer class scores (with ties) and n class
// indices below c.
func classBatch(rng *rand.Rand, n, c int) batch {
	r := rows{out: make([]float64, n*c), w: c, tgt: make([]float64, n), intTargets: true}
	for i := range r.out {
		r.out[i] = float64(rng.IntN(9)) - 4
	}
	for i := range r.tgt {
		r.tgt[i] = float64(rng.IntN(c))
	}
	return tensorBatch(r)
}

// binaryBatch is n probabilities and n labels in {0, 1}.
func binaryBatch(rng *rand.Rand, n int) batch {
	r := rows{out: make([]float64, n), tgt: make([]float64, n)}
	for i := range r.out {
		r.out[i] = float64(rng.IntN(11)) / 10
		r.tgt[i] = float64(rng.IntN(2))
	}
	return tensorBatch(r)
}

// labelBatch is n rows of l multilabel probabilities and targets.
func labelBatch(rng *rand.Rand, n, l int) batch {
	r := rows{out: make([]float64, n*l), w: l, tgt: make([]float64, n*l), tw: l}
	for i := range r.out {
		r.out[i] = rng.Float64()
		r.tgt[i] = float64(rng.IntN(2))
	}
	return tensorBatch(r)
}

// regressionBatch is n targets around 0.5 and outputs near them.
func regressionBatch(rng *rand.Rand, n int) batch {
	r := rows{out: make([]float64, n), tgt: make([]float64, n)}
	for i := range r.tgt {
		r.tgt[i] = 2*rng.NormFloat64() + 0.5
		r.out[i] = r.tgt[i] + 0.7*rng.NormFloat64()
	}
	return tensorBatch(r)
}

// tokenBatch is n rows of logits over v tokens and n targets, about one in
// five ignored (-100).
func tokenBatch(rng *rand.Rand, n, v int) batch {
	r := rows{out: make([]float64, n*v), w: v, tgt: make([]float64, n), intTargets: true}
	for i := range r.out {
		r.out[i] = 3 * rng.NormFloat64()
	}
	for i := range r.tgt {
		r.tgt[i] = float64(rng.IntN(v))
		if rng.IntN(5) == 0 {
			r.tgt[i] = -100
		}
	}
	return tensorBatch(r)
}

// sentence is up to max words from a small vocabulary, so that n-grams
// repeat and match.
func sentence(rng *rand.Rand, minWords, maxWords int) string {
	vocab := []string{"the", "cat", "sat", "on", "mat", "naïve"}
	w := make([]string, minWords+rng.IntN(maxWords-minWords+1))
	for i := range w {
		w[i] = vocab[rng.IntN(3+rng.IntN(len(vocab)-2))]
	}
	return strings.Join(w, " ")
}

// textBatch is n hypotheses (possibly empty) and their references.
func textBatch(rng *rand.Rand, n int) batch {
	hyps, refs := make([]string, n), make([]string, n)
	for i := range hyps {
		hyps[i], refs[i] = sentence(rng, 0, 7), sentence(rng, 1, 7)
	}
	return func(t *testing.T, _ tensor.Device, m metrics.Metric) {
		t.Helper()
		if err := m.(metrics.TextMetric).UpdateText(hyps, refs); err != nil {
			t.Fatalf("%s.UpdateText: %v", m.Name(), err)
		}
	}
}

// multiReferenceBatch is n hypotheses with one to three references each,
// for BLEU.UpdateMulti.
func multiReferenceBatch(rng *rand.Rand, n int) batch {
	hyps, refs := make([]string, n), make([][]string, n)
	for i := range hyps {
		hyps[i] = sentence(rng, 1, 8)
		for range 1 + rng.IntN(3) {
			refs[i] = append(refs[i], sentence(rng, 1, 8))
		}
	}
	return func(t *testing.T, _ tensor.Device, m metrics.Metric) {
		t.Helper()
		if err := m.(*metrics.BLEU).UpdateMulti(hyps, refs); err != nil {
			t.Fatalf("bleu.UpdateMulti: %v", err)
		}
	}
}

// lossBatch is one batch mean loss over n items.
func lossBatch(rng *rand.Rand, n int) batch {
	loss := rng.ExpFloat64()
	return func(t *testing.T, _ tensor.Device, m metrics.Metric) {
		t.Helper()
		if err := m.(*metrics.Loss).UpdateLoss(loss, n); err != nil {
			t.Fatal(err)
		}
	}
}

// nllBatch is a summed NLL over n tokens, for Perplexity.UpdateNLL.
func nllBatch(rng *rand.Rand, n int) batch {
	nll := float64(n) * 2 * rng.Float64()
	return func(t *testing.T, _ tensor.Device, m metrics.Metric) {
		t.Helper()
		if err := m.(*metrics.Perplexity).UpdateNLL(nll, n); err != nil {
			t.Fatal(err)
		}
	}
}

func withClasses(m *metrics.PRF, k int) *metrics.PRF {
	m.NumClasses = k
	return m
}

// summableCase is a Summable metric and a source of its random batches
// (each of 1 to 6 items).
type summableCase struct {
	name  string
	mk    func() metrics.Summable
	batch func(rng *rand.Rand, n int) batch
}

var summableCases = []summableCase{
	{"accuracy multiclass", func() metrics.Summable { return metrics.NewAccuracy() },
		func(rng *rand.Rand, n int) batch { return classBatch(rng, n, 4) }},
	{"accuracy binary", func() metrics.Summable { return metrics.NewAccuracy() }, binaryBatch},
	{"top-2 accuracy", func() metrics.Summable { return metrics.NewTopKAccuracy(2) },
		func(rng *rand.Rand, n int) batch { return classBatch(rng, n, 5) }},
	{"confusion matrix", func() metrics.Summable { return metrics.NewConfusionMatrix(4) },
		func(rng *rand.Rand, n int) batch { return classBatch(rng, n, 4) }},
	{"confusion matrix binary", func() metrics.Summable { return metrics.NewConfusionMatrix(2) }, binaryBatch},
	{"f1 binary", func() metrics.Summable { return metrics.NewF1(metrics.Binary, metrics.Micro) }, binaryBatch},
	{"f1 multiclass macro", func() metrics.Summable { return withClasses(metrics.NewF1(metrics.Multiclass, metrics.Macro), 5) },
		func(rng *rand.Rand, n int) batch { return classBatch(rng, n, 5) }},
	{"precision multiclass micro", func() metrics.Summable {
		return withClasses(metrics.NewPrecision(metrics.Multiclass, metrics.Micro), 3)
	}, func(rng *rand.Rand, n int) batch { return classBatch(rng, n, 3) }},
	{"recall multilabel macro", func() metrics.Summable {
		return withClasses(metrics.NewRecall(metrics.Multilabel, metrics.Macro), 3)
	}, func(rng *rand.Rand, n int) batch { return labelBatch(rng, n, 3) }},
	{"f2 multilabel micro", func() metrics.Summable {
		return withClasses(metrics.NewFBeta(metrics.Multilabel, metrics.Micro, 2), 4)
	}, func(rng *rand.Rand, n int) batch { return labelBatch(rng, n, 4) }},
	{"hamming score", func() metrics.Summable { return metrics.NewHammingScore() },
		func(rng *rand.Rand, n int) batch { return labelBatch(rng, n, 3) }},
	{"mse", func() metrics.Summable { return metrics.NewMSE() }, regressionBatch},
	{"mae", func() metrics.Summable { return metrics.NewMAE() }, regressionBatch},
	{"r2", func() metrics.Summable { return metrics.NewR2() }, regressionBatch},
	{"perplexity", func() metrics.Summable { return metrics.NewPerplexity() },
		func(rng *rand.Rand, n int) batch { return tokenBatch(rng, n, 6) }},
	{"perplexity from nll", func() metrics.Summable { return metrics.NewPerplexity() }, nllBatch},
	{"cer", func() metrics.Summable { return metrics.NewCER() }, textBatch},
	{"wer", func() metrics.Summable { return metrics.NewWER() }, textBatch},
	{"bleu", func() metrics.Summable { return metrics.NewBLEU() }, textBatch},
	{"bleu multi-reference", func() metrics.Summable { return metrics.NewBLEU() }, multiReferenceBatch},
	{"rouge-l", func() metrics.Summable { return metrics.NewRougeL() }, textBatch},
	{"loss", func() metrics.Summable { return metrics.NewNamedLoss("val_loss") }, lossBatch},
}

// sameValue says whether a and b agree within 1e-12 relative (NaN equals
// NaN).
func sameValue(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// checkSameValues fails unless got and want report the same values under
// the same names.
func checkSameValues(t *testing.T, what string, got, want metrics.Metric) {
	t.Helper()
	g, w := metrics.Snapshot(got), metrics.Snapshot(want)
	if len(g) != len(w) {
		t.Errorf("%s: %d values %v, want %d %v", what, len(g), g, len(w), w)
	}
	for k, wv := range w {
		if gv, ok := g[k]; !ok || !sameValue(gv, wv) {
			t.Errorf("%s: %s = %v, want %v", what, k, gv, wv)
		}
	}
}

func sum(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// Random batches split between two processes' metrics A and B (or all fed
// to B, A seeing none): the sum of their States set into a fresh D reports
// what one metric C fed every batch reports, and D then goes on
// accumulating as C does.
func TestSummableStatesAdd(t *testing.T) {
	for ci, cs := range summableCases {
		t.Run(cs.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				rng := rand.New(rand.NewPCG(7, uint64(ci)))
				batches := make([]batch, 10)
				for i := range batches {
					batches[i] = cs.batch(rng, 1+rng.IntN(6))
				}
				extra := cs.batch(rng, 3)
				c := cs.mk()
				for _, b := range batches {
					b(t, dev, c)
				}
				want := len(cs.mk().State())
				if got := len(c.State()); got != want {
					t.Fatalf("State of a fed metric has %d values, of a fresh one %d", got, want)
				}
				for _, aNone := range []bool{false, true} {
					a, b := cs.mk(), cs.mk()
					for i, bt := range batches {
						// A gets the first batch, B the second, the rest
						// go either way.
						if !aNone && (i == 0 || i > 1 && rng.IntN(2) == 0) {
							bt(t, dev, a)
						} else {
							bt(t, dev, b)
						}
					}
					sa, sb := a.State(), b.State()
					if len(sa) != want || len(sb) != want {
						t.Fatalf("A fed nothing %v: States have %d and %d values, a fresh one %d", aNone, len(sa), len(sb), want)
					}
					d := cs.mk()
					if err := d.SetState(sum(sa, sb)); err != nil {
						t.Fatalf("SetState: %v", err)
					}
					what := "A and B"
					if aNone {
						what = "nothing and B"
					}
					checkSameValues(t, "D summed from "+what, d, c)

					e := cs.mk()
					for _, bt := range batches {
						bt(t, dev, e)
					}
					extra(t, dev, e)
					extra(t, dev, d)
					checkSameValues(t, "D summed from "+what+", then fed one more batch", d, e)
				}
			})
		})
	}
}

// SetState with one value too few or too many fails with ErrState and
// leaves the metric as it was; the State of a fresh metric, and of a fed
// one, set into a fresh metric gives back the same State and values.
func TestSummableSetState(t *testing.T) {
	for ci, cs := range summableCases {
		t.Run(cs.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				rng := rand.New(rand.NewPCG(8, uint64(ci)))
				fresh := cs.mk().State()
				for _, v := range fresh {
					if v != 0 {
						t.Fatalf("State of a fresh metric = %v, want zeros", fresh)
					}
				}
				m := cs.mk()
				if err := m.SetState(fresh); err != nil {
					t.Fatalf("SetState(fresh State): %v", err)
				}
				if got := m.State(); !slices.Equal(got, fresh) {
					t.Errorf("fresh State %v set back gives State %v", fresh, got)
				}
				checkSameValues(t, "fresh State set back", m, cs.mk())

				fed := cs.mk()
				for range 4 {
					cs.batch(rng, 1+rng.IntN(6))(t, dev, fed)
				}
				s := fed.State()
				for _, bad := range [][]float64{s[:len(s)-1], append(slices.Clone(s), 1)} {
					if err := m.SetState(bad); !errors.Is(err, metrics.ErrState) {
						t.Errorf("SetState(%d values, want %d): err = %v, want ErrState", len(bad), len(s), err)
					}
				}
				if got := m.State(); !slices.Equal(got, fresh) {
					t.Errorf("failed SetState changed the State from %v to %v", fresh, got)
				}
				if err := m.SetState(s); err != nil {
					t.Fatalf("SetState(fed State): %v", err)
				}
				checkSameValues(t, "fed State set into a fresh metric", m, fed)
				got := m.State()
				for i := range s {
					if !sameValue(got[i], s[i]) {
						t.Errorf("fed State %v set back gives State %v", s, got)
						break
					}
				}
				m.Reset()
				if got := m.State(); !slices.Equal(got, fresh) {
					t.Errorf("State after Reset = %v, want %v", got, fresh)
				}
			})
		})
	}
}

// A multiclass or multilabel PRF without NumClasses has no fixed state
// length: State panics (on every process alike, fed or not) and SetState
// fails; with NumClasses set, outputs of another class count are rejected.
func TestSummablePRFNeedsNumClasses(t *testing.T) {
	for _, m := range []*metrics.PRF{
		metrics.NewF1(metrics.Multiclass, metrics.Macro),
		metrics.NewPrecision(metrics.Multilabel, metrics.Micro),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s without NumClasses: State did not panic", m.Name())
				}
			}()
			m.State()
		}()
		if err := m.SetState(make([]float64, 7)); !errors.Is(err, metrics.ErrState) {
			t.Errorf("%s without NumClasses: SetState err = %v, want ErrState", m.Name(), err)
		}
	}
	if got := len(metrics.NewRecall(metrics.Binary, metrics.Macro).State()); got != 7 {
		t.Errorf("binary PRF State has %d values, want 1 + 3·2", got)
	}
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := withClasses(metrics.NewF1(metrics.Multiclass, metrics.Macro), 3)
		out := tensor.FromFloat64s(dev, []float64{1, 0, 0, 0, 0, 1, 0, 0}, 2, 4)
		tgt := tensor.FromInt64s(dev, []int64{0, 3}, 2)
		if err := m.Update(out, tgt); !errors.Is(err, metrics.ErrInput) {
			t.Errorf("4 classes fed to NumClasses 3: err = %v, want ErrInput", err)
		}
		l := withClasses(metrics.NewF1(metrics.Multilabel, metrics.Macro), 3)
		if err := l.Update(out, tensor.FromFloat64s(dev, make([]float64, 8), 2, 4)); !errors.Is(err, metrics.ErrInput) {
			t.Errorf("4 labels fed to NumClasses 3: err = %v, want ErrInput", err)
		}
		if got := len(m.State()); got != 1+3*3 {
			t.Errorf("PRF with NumClasses 3: State has %d values, want 10", got)
		}
	})
}

// ConfusionMatrix counts are integers: SetState rejects fractional,
// negative and NaN counts.
func TestSummableConfusionMatrixCounts(t *testing.T) {
	for _, v := range []float64{0.5, -1, math.NaN(), math.Inf(1)} {
		m := metrics.NewConfusionMatrix(2)
		if err := m.SetState([]float64{1, 2, v, 3}); !errors.Is(err, metrics.ErrState) {
			t.Errorf("count %v: err = %v, want ErrState", v, err)
		}
	}
	m := metrics.NewConfusionMatrix(2)
	if err := m.SetState([]float64{3, 1, 2, 4}); err != nil {
		t.Fatal(err)
	}
	if got := m.Matrix(); !slices.Equal(got[0], []int64{3, 1}) || !slices.Equal(got[1], []int64{2, 4}) {
		t.Errorf("Matrix after SetState = %v, want [[3 1] [2 4]]", got)
	}
	if !sameValue(m.Value(), 0.7) {
		t.Errorf("Value after SetState = %v, want 0.7", m.Value())
	}
}

// R2 states summed from processes each fed targets of one constant value
// recover SS_tot = 0 despite the rounding of Σy and Σy², giving
// scikit-learn's 1 for exact predictions and 0 otherwise. (One metric fed
// everything need not: its Welford mean of 0.1s is off by an ulp, so its
// SS_tot is about 1e-33 rather than 0.)
func TestSummableR2ConstantTargets(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, tc := range []struct {
			name  string
			parts [][]float64
			want  float64
		}{
			{"imperfect predictions", [][]float64{{0.1, 0.3, 0.2}, {0.1, 0.1, 0.05, 0.1, 0.7}, {0.1}}, 0},
			{"exact predictions", [][]float64{{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1, 0.1, 0.1}, {0.1}}, 1},
		} {
			total := make([]float64, 4)
			for _, out := range tc.parts {
				tgt := make([]float64, len(out))
				for i := range tgt {
					tgt[i] = 0.1
				}
				m := metrics.NewR2()
				rows{out: out, tgt: tgt}.feed(t, dev, m, 0, len(out))
				total = sum(total, m.State())
			}
			d := metrics.NewR2()
			if err := d.SetState(total); err != nil {
				t.Fatal(err)
			}
			if d.Value() != tc.want {
				t.Errorf("%s: R2 of summed states of constant targets = %v, want %v", tc.name, d.Value(), tc.want)
			}
		}
	})
}

// Every metric type of the package says whether it is Summable, so that a
// new metric has to choose: the table below must list exactly the types
// that implement Metric (found in the package's sources).
func TestSummableCoverage(t *testing.T) {
	cases := map[string]struct {
		m        metrics.Metric
		summable bool // false: why in Summable's doc comment
	}{
		"Accuracy":        {metrics.NewAccuracy(), true},
		"TopKAccuracy":    {metrics.NewTopKAccuracy(3), true},
		"ConfusionMatrix": {metrics.NewConfusionMatrix(3), true},
		"PRF":             {metrics.NewF1(metrics.Binary, metrics.Micro), true},
		"HammingScore":    {metrics.NewHammingScore(), true},
		"PSNR":            {metrics.NewPSNR(1), true},
		"SSIM":            {metrics.NewSSIM(1), true},
		"Dice":            {metrics.NewDice(3, metrics.Macro), true},
		"IoU":             {metrics.NewIoU(3, metrics.Macro), true},
		"MultilabelTopK":  {metrics.NewPrecisionAtK(2), true},
		"MSE":             {metrics.NewMSE(), true},
		"MAE":             {metrics.NewMAE(), true},
		"R2":              {metrics.NewR2(), true},
		"Perplexity":      {metrics.NewPerplexity(), true},
		"ErrorRate":       {metrics.NewCER(), true},
		"BLEU":            {metrics.NewBLEU(), true},
		"RougeL":          {metrics.NewRougeL(), true},
		"Loss":            {metrics.NewLoss(), true},
		"AUROC":           {metrics.NewAUROC(), false},          // keeps every score
		"AUCPR":           {metrics.NewAUCPR(), false},          // keeps every score
		"LearningRate":    {metrics.NewLearningRate(), false},   // the last value set
		"IterationSpeed":  {metrics.NewIterationSpeed(), false}, // seconds run concurrently
		"CPUUsage":        {&metrics.CPUUsage{}, false},         // one machine's sample
		"MemoryUsage":     {&metrics.MemoryUsage{}, false},      // one machine's sample
	}
	for name, cs := range cases {
		if _, ok := cs.m.(metrics.Summable); ok != cs.summable {
			t.Errorf("%s: Summable is %v, the table says %v", name, ok, cs.summable)
		}
	}
	found := metricTypes(t)
	for _, name := range found {
		if _, ok := cases[name]; !ok {
			t.Errorf("metric type %s is not in the table: decide whether it is Summable", name)
		}
	}
	for name := range cases {
		if !slices.Contains(found, name) {
			t.Errorf("table lists %s, which the sources do not declare as a metric", name)
		}
	}
}

// metricTypes returns the exported types of the package's sources that
// have the methods of Metric.
func metricTypes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			typ := fd.Recv.List[0].Type
			if st, ok := typ.(*ast.StarExpr); ok {
				typ = st.X
			}
			id, ok := typ.(*ast.Ident)
			if !ok || !id.IsExported() {
				continue
			}
			if methods[id.Name] == nil {
				methods[id.Name] = map[string]bool{}
			}
			methods[id.Name][fd.Name.Name] = true
		}
	}
	var out []string
	for name, ms := range methods {
		if ms["Name"] && ms["Update"] && ms["Value"] && ms["Reset"] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	if len(out) < 19 {
		t.Fatalf("found only the metric types %v in the sources", out)
	}
	return out
}

package metrics_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// Random binary data with many tied scores: AUROC equals the brute-force
// pair count (ties one half) and AUC-PR the mean over positives of the
// precision at their score, in one batch and in random uneven batches.
func TestRankingBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for trial := range 20 {
			n := 2 + rng.IntN(60)
			s := make([]float64, n)
			y := make([]float64, n)
			for i := range s {
				s[i] = float64(rng.IntN(6)) / 5 // ties
				if rng.Float64() < 0.4 {
					y[i] = 1
				}
			}
			var pairs, wins, pos float64
			var ap float64
			for i := range s {
				if y[i] == 1 {
					pos++
					var tp, all float64
					for j := range s {
						if s[j] >= s[i] {
							all++
							tp += y[j]
						}
					}
					ap += tp / all
				}
				for j := range s {
					if y[i] == 1 && y[j] == 0 {
						pairs++
						switch {
						case s[i] > s[j]:
							wins++
						case s[i] == s[j]:
							wins += 0.5
						}
					}
				}
			}
			if pairs == 0 {
				continue
			}
			r := rows{out: s, tgt: y}
			for _, m := range []metrics.Metric{metrics.NewAUROC(), metrics.NewAUCPR()} {
				for lo := 0; lo < n; {
					hi := min(n, lo+1+rng.IntN(7))
					r.feed(t, dev, m, lo, hi)
					lo = hi
				}
				want := wins / pairs
				if m.Name() == "auc_pr" {
					want = ap / pos
				}
				if got := m.Value(); !close(got, want) {
					t.Errorf("trial %d %s = %v, brute force %v", trial, m.Name(), got, want)
				}
			}
		}
	})
}

// Strided views (a transposed tensor) and float16 outputs read correctly.
func TestViewsAndDTypes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		// multi's scores stored class-major, read through a transpose.
		var cm []float64
		for c := range 3 {
			for i := range 5 {
				cm = append(cm, multi.out[i*3+c])
			}
		}
		out := tensor.FromFloat64s(dev, cm, 3, 5).T()
		tgt := tensor.FromInt64s(dev, []int64{0, 1, 1, 2, 2}, 5)
		m := metrics.NewAccuracy()
		if err := m.Update(out, tgt); err != nil {
			t.Fatal(err)
		}
		if !close(m.Value(), 0.6) {
			t.Errorf("transposed outputs: accuracy %v, want 0.6", m.Value())
		}
		m.Reset()
		if err := m.Update(out.To(tensor.Float16), tgt.To(tensor.Float32)); err != nil {
			t.Fatal(err)
		}
		if !close(m.Value(), 0.6) {
			t.Errorf("float16 outputs: accuracy %v, want 0.6", m.Value())
		}
		b := metrics.NewF1(metrics.Binary, metrics.Micro)
		if err := b.Update(tensor.FromFloat32s(dev, []float32{0.9, 0.1}, 2), tensor.FromBools(dev, []bool{true, false}, 2)); err != nil {
			t.Fatal(err)
		}
		if !close(b.Value(), 1) {
			t.Errorf("bool targets: f1 %v, want 1", b.Value())
		}
	})
}

// Random data fed as one batch and as random uneven batches gives the same
// values for every tensor metric.
func TestRandomBatchInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, c := 37, 4
	scores := make([]float64, n*c)
	for i := range scores {
		scores[i] = float64(rng.IntN(9)) - 4
	}
	cls := make([]float64, n)
	ml := make([]float64, n*c)
	for i := range cls {
		cls[i] = float64(rng.IntN(c))
	}
	for i := range ml {
		ml[i] = float64(rng.IntN(2))
	}
	reg := make([]float64, n)
	for i := range reg {
		reg[i] = rng.NormFloat64()*3 + 100
	}
	cases := []struct {
		mk   func() metrics.Metric
		data rows
	}{
		{func() metrics.Metric { return metrics.NewAccuracy() }, rows{out: scores, w: c, tgt: cls, intTargets: true}},
		{func() metrics.Metric { return metrics.NewTopKAccuracy(2) }, rows{out: scores, w: c, tgt: cls, intTargets: true}},
		{func() metrics.Metric { return metrics.NewF1(metrics.Multiclass, metrics.Macro) }, rows{out: scores, w: c, tgt: cls, intTargets: true}},
		{func() metrics.Metric { return metrics.NewFBeta(metrics.Multilabel, metrics.Micro, 2) }, rows{out: scores, w: c, tgt: ml, tw: c}},
		{func() metrics.Metric { return &metrics.HammingScore{Threshold: 0} }, rows{out: scores, w: c, tgt: ml, tw: c}},
		{func() metrics.Metric { return metrics.NewPerplexity() }, rows{out: scores, w: c, tgt: cls, intTargets: true}},
		{func() metrics.Metric { return metrics.NewR2() }, rows{out: scores[:n], tgt: reg}},
		{func() metrics.Metric { return metrics.NewMSE() }, rows{out: scores[:n], tgt: reg}},
	}
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, cs := range cases {
			whole := cs.mk()
			cs.data.feed(t, dev, whole, 0, n)
			for range 3 {
				m := cs.mk()
				for lo := 0; lo < n; {
					hi := min(n, lo+1+rng.IntN(9))
					cs.data.feed(t, dev, m, lo, hi)
					lo = hi
				}
				if !close(m.Value(), whole.Value()) {
					t.Errorf("%s: batched %v, one batch %v", m.Name(), m.Value(), whole.Value())
				}
			}
		}
	})
}

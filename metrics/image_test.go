package metrics_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// fixtureValue is the single value of a fixture tensor.
func fixtureValue(t *testing.T, c testutil.FixtureCase, name string) float64 {
	t.Helper()
	v := c[name].Float64s()
	if len(v) != 1 {
		t.Fatalf("fixture %s has %d values", name, len(v))
	}
	return v[0]
}

// feedHalves feeds outputs and targets split in two along dimension 0
// (when it has at least two entries) or whole.
func feedHalves(t *testing.T, m metrics.Metric, out, tgt *tensor.Tensor) {
	t.Helper()
	n := out.Shape()[0]
	if n < 2 {
		if err := m.Update(out, tgt); err != nil {
			t.Fatal(err)
		}
		return
	}
	h := n / 2
	for _, r := range [][2]int{{0, h}, {h, n}} {
		if err := m.Update(out.Narrow(0, r[0], r[1]-r[0]), tgt.Narrow(0, r[0], r[1]-r[0])); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImageMetricsFixtures(t *testing.T) {
	fx := testutil.LoadFixtures(t, "metrics2.json")
	for _, tc := range []struct {
		name string
		mk   func() metrics.Metric
	}{
		{"psnr_f32", func() metrics.Metric { return metrics.NewPSNR(1) }},
		{"psnr_f64_range255", func() metrics.Metric { return metrics.NewPSNR(255) }},
		{"ssim_noise", func() metrics.Metric { return metrics.NewSSIM(1) }},
		{"ssim_shift_11x11", func() metrics.Metric { return metrics.NewSSIM(1) }},
		{"ssim_range255", func() metrics.Metric { return metrics.NewSSIM(255) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fx[tc.name]
			want := fixtureValue(t, c, "out")
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				p, g := c["preds"].Tensor(dev), c["target"].Tensor(dev)
				whole, halves := tc.mk(), tc.mk()
				if err := whole.Update(p, g); err != nil {
					t.Fatal(err)
				}
				feedHalves(t, halves, p, g)
				for _, m := range []metrics.Metric{whole, halves} {
					if got := m.Value(); math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
						t.Errorf("%s = %v, want %v", m.Name(), got, want)
					}
				}
			})
		})
	}
}

// A transposed (non-contiguous) view gives the value of its contiguous
// copy; identical images give PSNR +Inf and SSIM 1.
func TestImageMetricsEdgeCases(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := testutil.RandFloat64(dev, 1, 0, 1, 2, 1, 12, 14)
		y := testutil.RandFloat64(dev, 2, 0, 1, 2, 1, 14, 12)
		yt := y.Transpose(2, 3)
		for _, mk := range []func() metrics.Metric{
			func() metrics.Metric { return metrics.NewPSNR(1) },
			func() metrics.Metric { return metrics.NewSSIM(1) },
		} {
			a, b := mk(), mk()
			if err := a.Update(x, yt); err != nil {
				t.Fatal(err)
			}
			if err := b.Update(x, yt.Contiguous()); err != nil {
				t.Fatal(err)
			}
			if a.Value() != b.Value() || math.IsNaN(a.Value()) {
				t.Errorf("%s: view %v, contiguous %v", a.Name(), a.Value(), b.Value())
			}
		}
		p := metrics.NewPSNR(1)
		s := metrics.NewSSIM(1)
		if !math.IsNaN(p.Value()) || !math.IsNaN(s.Value()) {
			t.Errorf("fresh PSNR %v, SSIM %v, want NaN", p.Value(), s.Value())
		}
		_ = p.Update(x, x)
		_ = s.Update(x, x)
		if !math.IsInf(p.Value(), 1) || math.Abs(s.Value()-1) > 1e-12 {
			t.Errorf("identical images: PSNR %v, SSIM %v; want +Inf, 1", p.Value(), s.Value())
		}
		one := testutil.RandFloat64(dev, 3, 0, 1, 3, 11, 11)
		if err := s.Update(one, one); err != nil {
			t.Errorf("one [C, H, W] image: %v", err)
		}
		for _, bad := range []struct {
			name string
			m    metrics.Metric
			o, t *tensor.Tensor
			text string
		}{
			{"psnr sizes", metrics.NewPSNR(1), x, tensor.Zeros(dev, 3), "differ in size"},
			{"ssim small", metrics.NewSSIM(1), tensor.Zeros(dev, 1, 1, 10, 20), tensor.Zeros(dev, 1, 1, 10, 20), "smaller than"},
			{"ssim shapes", metrics.NewSSIM(1), x, y, "one shape"},
			{"ssim rank", metrics.NewSSIM(1), tensor.Zeros(dev, 11, 11), tensor.Zeros(dev, 11, 11), "[N, C, H, W]"},
		} {
			if err := bad.m.Update(bad.o, bad.t); !errors.Is(err, metrics.ErrInput) || !strings.Contains(err.Error(), bad.text) {
				t.Errorf("%s: %v, want ErrInput mentioning %q", bad.name, err, bad.text)
			}
		}
	})
	for _, f := range []func(){func() { metrics.NewPSNR(0) }, func() { metrics.NewSSIM(math.Inf(1)) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad data range did not panic")
				}
			}()
			f()
		}()
	}
}

// BenchmarkSSIM feeds a batch of 16 RGB 64×64 images per Update and
// reports images/s.
func BenchmarkSSIM(b *testing.B) {
	dev := tensor.CPU()
	x := testutil.RandFloat64(dev, 1, 0, 1, 16, 3, 64, 64)
	y := testutil.RandFloat64(dev, 2, 0, 1, 16, 3, 64, 64)
	m := metrics.NewSSIM(1)
	for b.Loop() {
		if err := m.Update(x, y); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(16*float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

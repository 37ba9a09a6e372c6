package tensor

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkLinearActivation times a GPT feed-forward block's first layer,
// LinearActivation(x [2048, 256], weight [1024, 256], bias, "gelu") in
// float32, forward alone and forward and backward, fused and not
// (linearActUnfused) alternately in every iteration, and reports the best
// and the median time of each and the ratio of the medians (unfused ÷
// fused: above 1, fusing gains).
func BenchmarkLinearActivation(b *testing.B) {
	defer linearActUnfused.Store(false)
	for _, backward := range []bool{false, true} {
		b.Run(fmt.Sprintf("backward=%v", backward), func(b *testing.B) {
			dev := CPU().Autodiff()
			x := Randn(dev, 2048, 256)
			w := Randn(dev, 1024, 256).MulScalar(1.0 / 16).RequireGrad()
			bias := Randn(dev, 1024).RequireGrad()
			run := func(fused bool) time.Duration {
				linearActUnfused.Store(!fused)
				start := time.Now()
				Scope(func() {
					y := LinearActivation(x, w, bias, "gelu")
					if backward {
						y.Sum().Backward()
					}
					_ = dev.Sync()
				})
				return time.Since(start)
			}
			run(true)
			run(false)
			var times [2][]time.Duration
			b.ResetTimer()
			for i := range b.N {
				for _, fused := range []bool{i%2 == 0, i%2 != 0} {
					slot := 0
					if !fused {
						slot = 1
					}
					times[slot] = append(times[slot], run(fused))
				}
			}
			b.StopTimer()
			var med [2]float64
			for slot, name := range []string{"fused", "unfused"} {
				slices.Sort(times[slot])
				med[slot] = times[slot][len(times[slot])/2].Seconds() * 1e3
				b.ReportMetric(times[slot][0].Seconds()*1e3, name+"-best-ms")
				b.ReportMetric(med[slot], name+"-median-ms")
			}
			b.ReportMetric(med[1]/med[0], "unfused/fused")
			b.ReportMetric(0, "ns/op")
		})
	}
}

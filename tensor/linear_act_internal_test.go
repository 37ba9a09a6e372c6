package tensor

import (
	"fmt"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/benchpair"
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
			benchpair.Run(b, "fused", "unfused", 1, run)
		})
	}
}

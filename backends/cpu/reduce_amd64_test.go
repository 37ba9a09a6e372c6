//go:build !purego

package cpu

import (
	"fmt"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// TestColumnSumRowsKernel checks that float32 sums over leading dimensions
// give the same bits with accRowsF32F64 (four rows at a time) as with
// accumulateRow row after row, for widths that leave every tail of the
// kernel (16 columns, 8, the Go loop), row counts that leave 0 to 3 rows
// after the blocks of four, padded rows and sums over two leading
// dimensions, on 1 and 2 workers.
func TestColumnSumRowsKernel(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	cases := []struct {
		shape []int
		axes  []int
		pad   int // extra elements at the end of each row (a strided view)
	}{
		{[]int{300, 768}, []int{0}, 0},
		{[]int{129, 45}, []int{0}, 0},
		{[]int{64, 7}, []int{0}, 0},
		{[]int{50, 1000}, []int{0}, 3},
		{[]int{4, 33, 72}, []int{0, 1}, 0},
		{[]int{8, 256, 256}, []int{0}, 0},
		{[]int{7, 264}, []int{0}, 0},
		{[]int{2, 24}, []int{0}, 1},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.shape, c.axes, c.pad), func(t *testing.T) {
			for _, workers := range []int{1, 2} {
				be := New(workers)
				full := append([]int{}, c.shape...)
				full[len(full)-1] += c.pad
				x := randView(be, backends.Float32, 7, full...)
				x.Shape = c.shape
				outShape := append([]int{}, c.shape...)
				for _, a := range c.axes {
					outShape[a] = 1
				}
				want, got := allocView(be, backends.Float32, outShape...), allocView(be, backends.Float32, outShape...)
				reduceRowsAVX2 = false
				be.Reduce(backends.Sum, want, x, c.axes)
				reduceRowsAVX2 = true
				be.Reduce(backends.Sum, got, x, c.axes)
				checkExact(t, "column sum", got, snapshot(want))
			}
		})
	}
}

// BenchmarkColumnSum times the sum over the rows of a float32 matrix (a
// bias gradient: 2048 rows of a GPT's projections) on one worker, with
// the rows kernel and with accumulateRow row after row alternately in
// every iteration (the machine's load then hits both alike), and reports
// the fastest time of each (us-rows, us-row-by-row).
func BenchmarkColumnSum(b *testing.B) {
	be := New(1)
	for _, n := range []int{256, 768, 1024} {
		x := randView(be, backends.Float32, 1, 2048, n)
		out := allocView(be, backends.Float32, 1, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			defer func() { reduceRowsAVX2 = true }()
			best := [2]time.Duration{time.Hour, time.Hour}
			for b.Loop() {
				for i, on := range []bool{false, true} {
					reduceRowsAVX2 = on
					start := time.Now()
					be.Reduce(backends.Sum, out, x, []int{0})
					best[i] = min(best[i], time.Since(start))
				}
			}
			b.ReportMetric(float64(best[0].Microseconds()), "us-row-by-row")
			b.ReportMetric(float64(best[1].Microseconds()), "us-rows")
		})
	}
}

package cpu

import (
	"math"
	"time"

	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// BenchmarkGEMMBF16 sets square bfloat16 products against float32 ones on
// the same backend, sub-benchmarks interleaved (run with -count 3 and take
// the best of each): fp32 is Kiln's float32 GEMM; bf16 the bfloat16 GEMM
// (VDPBF16PS where the CPU has it) from bfloat16 operands into a bfloat16
// output, as an autocast matmul runs; bf16-f32out the same into float32;
// bf16-widen the path bfloat16 products took before the bfloat16 kernels
// (widened to float32 while packing, float32 GEMM, rounded at the end);
// bf16-from-f32 float32 operands rounded to bfloat16 while packing (the
// cast fused into the GEMM) into float32. GFLOP/s counts 2·n³ per product.
func BenchmarkGEMMBF16(b *testing.B) {
	for _, n := range []int{256, 512, 1024} {
		for _, threads := range []int{1, 2} {
			for _, path := range []string{"fp32", "bf16", "bf16-f32out", "bf16-widen", "bf16-from-f32"} {
				b.Run(fmt.Sprintf("n=%d/threads=%d/%s", n, threads, path), func(b *testing.B) {
					be := New(threads)
					in, out := backends.BFloat16, backends.BFloat16
					switch path {
					case "fp32":
						in, out = backends.Float32, backends.Float32
					case "bf16-f32out":
						out = backends.Float32
					case "bf16-from-f32":
						in, out = backends.Float32, backends.Float32
					}
					x := randView(be, in, 1, n, n)
					y := randView(be, in, 2, n, n)
					o := allocView(be, out, n, n)
					run := func() { be.Matmul(o, x, y) }
					if path == "bf16-from-f32" {
						A, _ := bf16Operand(x, 0, n, 1)
						B, _ := bf16Operand(y, 0, n, 1)
						os := buf(o).f32()
						run = func() { gemmBF16(be, kernelBF16, n, n, n, A, B, bf16Dst{c: os, ld: n}, true) }
					}
					if path == "bf16-widen" {
						useBF16GEMM = false
						defer func() { useBF16GEMM = true }()
					}
					run() // warm the packing buffers
					for b.Loop() {
						run()
					}
					flops := 2 * float64(n) * float64(n) * float64(n) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkGEMMBF16Kernels compares the bfloat16 micro-kernels at n=1024
// on one thread.
func BenchmarkGEMMBF16Kernels(b *testing.B) {
	const n = 1024
	old := kernelBF16
	defer func() { kernelBF16 = old }()
	for _, kern := range kernelsBF16[1:] { // the portable kernel takes seconds
		b.Run(kern.name, func(b *testing.B) {
			kernelBF16 = kern
			be := New(1)
			x := randView(be, backends.BFloat16, 1, n, n)
			y := randView(be, backends.BFloat16, 2, n, n)
			o := allocView(be, backends.BFloat16, n, n)
			be.Matmul(o, x, y)
			for b.Loop() {
				be.Matmul(o, x, y)
			}
			b.ReportMetric(2*float64(n)*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGEMMBF16Ratio times Kiln's float32 GEMM and the bfloat16 one
// on square products, interleaved within one benchmark so that both see
// the same machine load: each iteration runs every path once (in turn
// first), and the best time of each over the run is reported (ms), with
// the ratio of the float32 time to each bfloat16 one (x-fp32, above 1:
// bfloat16 faster). Paths: bf16, bfloat16 operands into a bfloat16 output
// (Matmul); from-f32, float32 operands rounded while packing into float32
// (MatmulBF16, as autocast runs). Run with -benchtime 20x or more; on a
// busy machine the best times are the meaningful ones.
func BenchmarkGEMMBF16Ratio(b *testing.B) {
	for _, n := range []int{512, 1024} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("n=%d/threads=%d", n, threads), func(b *testing.B) {
				be := New(threads)
				x32, y32 := randView(be, backends.Float32, 1, n, n), randView(be, backends.Float32, 2, n, n)
				o32 := allocView(be, backends.Float32, n, n)
				x16, y16 := randView(be, backends.BFloat16, 1, n, n), randView(be, backends.BFloat16, 2, n, n)
				o16 := allocView(be, backends.BFloat16, n, n)
				paths := []func(){
					func() { be.Matmul(o32, x32, y32) },
					func() { be.Matmul(o16, x16, y16) },
					func() { be.MatmulBF16(o32, x32, y32) },
				}
				best := make([]time.Duration, len(paths))
				for i := range best {
					paths[i]() // warm the packing buffers
					best[i] = time.Duration(math.MaxInt64)
				}
				it := 0
				for b.Loop() {
					for j := range paths {
						p := (it + j) % len(paths)
						t0 := time.Now()
						paths[p]()
						best[p] = min(best[p], time.Since(t0))
					}
					it++
				}
				ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
				b.ReportMetric(ms(best[0]), "fp32-ms")
				b.ReportMetric(ms(best[1]), "bf16-ms")
				b.ReportMetric(ms(best[2]), "from-f32-ms")
				b.ReportMetric(float64(best[0])/float64(best[1]), "x-fp32-bf16")
				b.ReportMetric(float64(best[0])/float64(best[2]), "x-fp32-from-f32")
			})
		}
	}
}

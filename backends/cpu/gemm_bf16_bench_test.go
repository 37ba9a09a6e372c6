package cpu

import (
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

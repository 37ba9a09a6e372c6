package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// Linear-algebra benchmarks on the CPU device; scripts/linalg_bench.py
// times the same shapes with PyTorch (LAPACK) for comparison.

func benchLinalg(b *testing.B, shape []int, f func(a *tensor.Tensor) *tensor.Tensor) {
	dev := tensor.CPU()
	tensor.Scope(func() {
		n := shape[len(shape)-1]
		eye := tensor.Eye(dev, n, n).MulScalar(float64(n))
		a := tensor.Randn(dev, shape...).Add(eye)
		for b.Loop() {
			out := f(a)
			if err := dev.Sync(); err != nil {
				b.Fatal(err)
			}
			out.Release()
		}
	})
	mats := 1
	for _, d := range shape[:len(shape)-2] {
		mats *= d
	}
	b.ReportMetric(float64(mats)*float64(b.N)/b.Elapsed().Seconds(), "matrices/s")
}

func svdOf(a *tensor.Tensor) *tensor.Tensor {
	u, _, _ := a.SVD(false)
	return u
}

func BenchmarkSVD256(b *testing.B)        { benchLinalg(b, []int{256, 256}, svdOf) }
func BenchmarkSVDBatch64x32(b *testing.B) { benchLinalg(b, []int{64, 32, 32}, svdOf) }
func BenchmarkSvdvals256(b *testing.B) {
	benchLinalg(b, []int{256, 256}, func(a *tensor.Tensor) *tensor.Tensor { return a.Svdvals() })
}
func BenchmarkEigh256(b *testing.B) {
	benchLinalg(b, []int{256, 256}, func(a *tensor.Tensor) *tensor.Tensor { w, _ := a.Eigh("L"); return w })
}
func BenchmarkInverse256(b *testing.B) {
	benchLinalg(b, []int{256, 256}, func(a *tensor.Tensor) *tensor.Tensor { return a.Inv() })
}
func BenchmarkInverseBatch64x32(b *testing.B) {
	benchLinalg(b, []int{64, 32, 32}, func(a *tensor.Tensor) *tensor.Tensor { return a.Inv() })
}
func BenchmarkSolve256(b *testing.B) {
	rhs := tensor.Randn(tensor.CPU(), 256, 16)
	defer rhs.Release()
	benchLinalg(b, []int{256, 256}, func(a *tensor.Tensor) *tensor.Tensor { return a.Solve(rhs) })
}
func BenchmarkSolveBatch64x32(b *testing.B) {
	rhs := tensor.Randn(tensor.CPU(), 64, 32, 4)
	defer rhs.Release()
	benchLinalg(b, []int{64, 32, 32}, func(a *tensor.Tensor) *tensor.Tensor { return a.Solve(rhs) })
}

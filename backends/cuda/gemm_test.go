//go:build !kiln_nocuda

package cuda

import (
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

func view(dt backends.DType, shape, strides []int, off int) backends.View {
	return backends.View{DType: dt, Shape: shape, Strides: strides, Offset: off}
}

func TestPlanGemmMapsRowMajorToCuBLAS(t *testing.T) {
	f := backends.Float32
	// out[2,3,4] = x[2,3,5] · y[2,5,4], all contiguous.
	c, ok := planGemm(view(f, []int{2, 3, 4}, []int{12, 4, 1}, 0),
		view(f, []int{2, 3, 5}, []int{15, 5, 1}, 0), view(f, []int{2, 5, 4}, []int{20, 4, 1}, 0))
	want := gemmCall{dtype: f, m: 4, n: 3, k: 5, lda: 4, ldb: 5, ldc: 4, strideA: 20, strideB: 15, strideC: 12, batch: 2}
	if !ok || c != want {
		t.Fatalf("plan = %+v, %v; want %+v", c, ok, want)
	}
	// y transposed (a weight used as Wᵀ) and broadcast over the batch.
	c, ok = planGemm(view(f, []int{2, 3, 4}, []int{12, 4, 1}, 0),
		view(f, []int{2, 3, 5}, []int{15, 5, 1}, 0), view(f, []int{2, 5, 4}, []int{0, 1, 5}, 7))
	if !ok || c.transA != 1 || c.lda != 5 || c.strideA != 0 || c.offA != 7 {
		t.Fatalf("transposed broadcast plan = %+v, %v", c, ok)
	}
	// Two batch dims collapse when their strides nest.
	c, ok = planGemm(view(f, []int{2, 3, 2, 2}, []int{12, 4, 2, 1}, 0),
		view(f, []int{2, 3, 2, 2}, []int{12, 4, 2, 1}, 0), view(f, []int{2, 3, 2, 2}, []int{12, 4, 2, 1}, 0))
	if !ok || c.batch != 6 || c.strideC != 4 {
		t.Fatalf("nested batch plan = %+v, %v", c, ok)
	}
	// Layouts cuBLAS cannot express fall back to the tiled kernel.
	for name, v := range map[string][3]backends.View{
		"strided columns": {view(f, []int{3, 4}, []int{4, 1}, 0), view(f, []int{3, 5}, []int{10, 2}, 0), view(f, []int{5, 4}, []int{4, 1}, 0)},
		"int64":           {view(backends.Int64, []int{3, 4}, []int{4, 1}, 0), view(backends.Int64, []int{3, 5}, []int{5, 1}, 0), view(backends.Int64, []int{5, 4}, []int{4, 1}, 0)},
		"uneven batch":    {view(f, []int{2, 3, 1, 1}, []int{3, 1, 1, 1}, 0), view(f, []int{2, 3, 1, 1}, []int{7, 1, 1, 1}, 0), view(f, []int{2, 3, 1, 1}, []int{3, 1, 1, 1}, 0)},
	} {
		if _, ok := planGemm(v[0], v[1], v[2]); ok {
			t.Errorf("%s: planned for cuBLAS, want the fallback", name)
		}
	}
}

package cpu

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

type matmulCase struct {
	batchX, batchY, batch []int // batch dims of x, y (size 1 broadcasts) and out
	m, k, n               int
}

var matmulCases = []matmulCase{
	{nil, nil, nil, 1, 1, 1},
	{nil, nil, nil, 7, 17, 65},
	{nil, nil, nil, 63, 65, 129},
	{nil, nil, nil, 65, 1, 7},
	{nil, nil, nil, 17, 300, 33},
	{nil, nil, nil, 129, 7, 63},
	{nil, nil, nil, 1, 130, 17},
	{nil, nil, nil, 0, 5, 3},
	{nil, nil, nil, 4, 0, 3},
	{[]int{3}, []int{1}, []int{3}, 5, 9, 7},
	{[]int{2, 1}, []int{1, 3}, []int{2, 3}, 17, 33, 2},
	{[]int{4}, []int{4}, []int{4}, 65, 40, 66},
	{nil, nil, nil, 33, 70, 1},                   // matrix × vector
	{[]int{3}, []int{3}, []int{3}, 1, 9, 40},     // batched vector × matrix
	{nil, nil, nil, 1, 300, 1100},                // vector × matrix, several blocks
	{[]int{2}, []int{1}, []int{2}, 1100, 301, 1}, // matrix × broadcast vector
}

// matmulView builds a batched matrix operand; batch dims of size 1 that the
// output broadcasts get stride 0.
func matmulView(be *Backend, dt backends.DType, lay layout, seed uint64, batch, outBatch []int, rows, cols int) backends.View {
	shape := append(append([]int(nil), batch...), rows, cols)
	v := makeView(be, dt, lay, seed, false, shape...)
	if len(outBatch) > 0 {
		for d := range batch {
			if batch[d] == 1 && outBatch[d] != 1 {
				v.Shape[d] = outBatch[d]
				v.Strides[d] = 0
			}
		}
	}
	return v
}

// checkMatmul compares out with a float64 triple loop, allowing the
// rounding error of a k-term dot product in the compute type plus the final
// rounding to out's dtype.
func checkMatmul(t *testing.T, what string, c matmulCase, x, y, out backends.View) {
	t.Helper()
	eps := math.Pow(2, -23)
	if out.DType == backends.Float64 {
		eps = math.Pow(2, -52)
	}
	xs, ys, os := snapshot(x), snapshot(y), snapshot(out)
	bad := 0
	for bi := range backends.NumElements(c.batch) {
		xm, ym, om := xs[bi*c.m*c.k:], ys[bi*c.k*c.n:], os[bi*c.m*c.n:]
		for i := range c.m {
			for j := range c.n {
				var want, mag float64
				for p := range c.k {
					a, b := xm[i*c.k+p], ym[p*c.n+j]
					want += a * b
					mag += math.Abs(a * b)
				}
				got := om[i*c.n+j]
				tol := float64(c.k+2)*eps*mag + ulp(out.DType, want)
				if math.Abs(got-want) > tol || math.IsNaN(got) {
					if bad < 5 {
						t.Errorf("%s: out[%d][%d,%d] = %v, want %v (tolerance %g)", what, bi, i, j, got, want, tol)
					}
					bad++
				}
			}
		}
	}
}

func runMatmulCases(t *testing.T, be *Backend, dtypes []backends.DType, tag string) {
	lays := []layout{contiguous, transposed, strided}
	k := 0
	for _, c := range matmulCases {
		for _, dt := range dtypes {
			xl, yl, ol := lays[k%3], lays[(k/3)%3], lays[(k/9)%3]
			k++
			x := matmulView(be, dt, xl, uint64(k), c.batchX, c.batch, c.m, c.k)
			y := matmulView(be, dt, yl, uint64(k+1), c.batchY, c.batch, c.k, c.n)
			out := makeView(be, dt, ol, 3, true, append(append([]int(nil), c.batch...), c.m, c.n)...)
			be.Matmul(out, x, y)
			checkMatmul(t, fmt.Sprintf("%s %s %v×%v (m=%d k=%d n=%d) %s·%s→%s", tag, dt, c.batchX, c.batchY, c.m, c.k, c.n, xl, yl, ol), c, x, y, out)
		}
	}
}

func TestMatmulMatchesReference(t *testing.T) {
	runMatmulCases(t, New(2), []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.BFloat16, backends.Int64}, "default")
}

func TestMatmulEveryKernel(t *testing.T) {
	be := New(2)
	oldF32, oldF64 := kernelF32, kernelF64
	defer func() { kernelF32, kernelF64 = oldF32, oldF64 }()
	// kernels of one kind (portable Go, or assembly with fused
	// multiply-adds) sum in the same order, so each kind gives one set of bits
	product := func(dt backends.DType) []byte {
		x := makeView(be, dt, transposed, 1, false, 37, 300)
		y := makeView(be, dt, contiguous, 2, false, 300, 45)
		out := allocView(be, dt, 37, 45)
		be.Matmul(out, x, y)
		return rawSnapshot(out)
	}
	kind := func(asm bool) string { return map[bool]string{false: "go", true: "asm"}[asm] }
	ref := map[string][]byte{}
	check := func(dt backends.DType, name string, asm bool) {
		runMatmulCases(t, be, []backends.DType{dt}, name)
		got, key := product(dt), dt.String()+kind(asm)
		if want, ok := ref[key]; !ok {
			ref[key] = got
		} else if !bytes.Equal(got, want) {
			t.Errorf("kernel %s: %s bits differ from the other %s kernels", name, dt, kind(asm))
		}
	}
	for _, kern := range kernelsF32 {
		kernelF32 = kern
		check(backends.Float32, kern.name, kern.asm != nil)
	}
	for _, kern := range kernelsF64 {
		kernelF64 = kern
		check(backends.Float64, kern.name, kern.asm != nil)
	}
}

// TestMatmulSmallBlocks shrinks the blocking so that small matrices take
// every path: several kc blocks (sums across blocks), several nc blocks,
// several tiles per task grid and partial tiles everywhere.
func TestMatmulSmallBlocks(t *testing.T) {
	old := [4]int{gemmKC, gemmMC, gemmNB, gemmNC}
	defer func() { gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3] }()
	gemmKC, gemmMC, gemmNB, gemmNC = 16, 12, 8, 24
	runMatmulCases(t, New(2), []backends.DType{backends.Float32, backends.Float64, backends.BFloat16}, "small-blocks")
}

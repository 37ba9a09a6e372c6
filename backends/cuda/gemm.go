//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// gemmCall is one strided-batched GEMM in cuBLAS's column-major terms. A
// row-major out = x·y is computed as outᵀ = yᵀ·xᵀ, so cuBLAS's A is y and
// its B is x.
type gemmCall struct {
	dtype            backends.DType
	transA, transB   int32 // 0 = N, 1 = T
	m, n, k          int32
	lda, ldb, ldc    int32
	strideA, strideB int64 // elements between batch entries
	strideC          int64
	offA, offB, offC int64 // element offsets of the first matrices
	batch            int32
}

// gemmer runs planned GEMMs (cuBLAS).
type gemmer interface {
	gemm(c gemmCall, out, x, y DevicePtr) error
	setTF32(on bool) error
}

// errShape reports an operand the backend was given in the wrong shape.
func errShape(op string, v backends.View) error {
	return fmt.Errorf("cuda: %s: bad operand %s", op, v)
}

// operand works out how cuBLAS reads a rows×cols matrix stored with strides
// (rs, cs): as its transpose (row-major storage, op N) or as itself
// (column-major storage, op T), and with which leading dimension.
func operand(rows, cols, rs, cs int) (trans int32, ld int, ok bool) {
	switch {
	case cs == 1 && (rs >= max(cols, 1) || rows == 1):
		return 0, max(rs, cols, 1), true
	case rs == 1 && (cs >= max(rows, 1) || cols == 1):
		return 1, max(cs, rows, 1), true
	}
	return 0, 0, false
}

// batchStride returns s such that batch entry z of v starts at z·s
// elements, enumerating out's batch shape in row-major order.
func batchStride(v backends.View, batchShape []int) (int64, bool) {
	s, found := int64(0), false
	inner := int64(1)
	for d := len(batchShape) - 1; d >= 0; d-- {
		if batchShape[d] == 1 {
			continue
		}
		st := int64(v.Strides[d])
		if !found {
			if st%inner != 0 {
				return 0, false
			}
			s, found = st/inner, true
		} else if st != s*inner {
			return 0, false
		}
		inner *= int64(batchShape[d])
	}
	return s, true
}

// planGemm maps out = x·y onto one cuBLAS call, or reports that the
// layout does not fit (the tiled kernel then runs instead).
func planGemm(out, x, y backends.View) (gemmCall, bool) {
	switch out.DType {
	case backends.Float32, backends.Float64, backends.Float16, backends.BFloat16:
	default:
		return gemmCall{}, false
	}
	nd := len(out.Shape)
	m, n, k := out.Shape[nd-2], out.Shape[nd-1], x.Shape[nd-1]
	if out.Strides[nd-1] != 1 && n != 1 {
		return gemmCall{}, false
	}
	ldc := max(out.Strides[nd-2], n, 1)
	if m > 1 && out.Strides[nd-2] < n {
		return gemmCall{}, false
	}
	ta, lda, ok1 := operand(k, n, y.Strides[nd-2], y.Strides[nd-1])
	tb, ldb, ok2 := operand(m, k, x.Strides[nd-2], x.Strides[nd-1])
	bs := out.Shape[:nd-2]
	sA, ok3 := batchStride(y, bs)
	sB, ok4 := batchStride(x, bs)
	sC, ok5 := batchStride(out, bs)
	batch := backends.NumElements(bs)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return gemmCall{}, false
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc, batch} {
		if v > math.MaxInt32 {
			return gemmCall{}, false
		}
	}
	return gemmCall{dtype: out.DType, transA: ta, transB: tb, m: int32(n), n: int32(m), k: int32(k),
		lda: int32(lda), ldb: int32(ldb), ldc: int32(ldc), strideA: sA, strideB: sB, strideC: sC,
		offA: int64(y.Offset), offB: int64(x.Offset), offC: int64(out.Offset), batch: int32(batch)}, true
}

// cuBLAS constants.
const (
	cudaR16F          = 2
	cudaR16BF         = 14
	cublasCompute32F  = 68
	cublasGemmDefault = -1
	cublasTF32Math    = 3
	cublasDefaultMath = 0
)

// cublas calls libcublas through purego.
type cublas struct {
	handle uintptr
	tf32   bool

	cublasCreate        func(h *uintptr) int32
	cublasSetStream     func(h, s uintptr) int32
	cublasSetMathMode   func(h uintptr, mode int32) int32
	cublasSgemmStrided  func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a uint64, lda int32, sa int64, b uint64, ldb int32, sb int64, beta *float32, c uint64, ldc int32, sc int64, batch int32) int32
	cublasDgemmStrided  func(h uintptr, ta, tb, m, n, k int32, alpha *float64, a uint64, lda int32, sa int64, b uint64, ldb int32, sb int64, beta *float64, c uint64, ldc int32, sc int64, batch int32) int32
	cublasGemmStridedEx func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uint64, at, lda int32, sa int64, b uint64, bt, ldb int32, sb int64, beta unsafe.Pointer, c uint64, ct, ldc int32, sc int64, batch, compute, algo int32) int32
}

// newCublas binds libcublas and creates a handle on stream s. It must run
// on the device thread.
func newCublas(h uintptr, s Stream) (*cublas, error) {
	c := &cublas{}
	err := bind(h, "libcublas", map[string]any{
		"cublasCreate_v2": &c.cublasCreate, "cublasSetStream_v2": &c.cublasSetStream,
		"cublasSetMathMode": &c.cublasSetMathMode, "cublasSgemmStridedBatched": &c.cublasSgemmStrided,
		"cublasDgemmStridedBatched": &c.cublasDgemmStrided, "cublasGemmStridedBatchedEx": &c.cublasGemmStridedEx,
	})
	if err != nil {
		return nil, err
	}
	if r := c.cublasCreate(&c.handle); r != 0 {
		return nil, fmt.Errorf("cuda: cublasCreate: cuBLAS status %d", r)
	}
	if r := c.cublasSetStream(c.handle, uintptr(s)); r != 0 {
		return nil, fmt.Errorf("cuda: cublasSetStream: cuBLAS status %d", r)
	}
	return c, nil
}

func (c *cublas) setTF32(on bool) error {
	mode := int32(cublasDefaultMath)
	if on {
		mode = cublasTF32Math
	}
	if r := c.cublasSetMathMode(c.handle, mode); r != 0 {
		return fmt.Errorf("cuda: cublasSetMathMode: cuBLAS status %d", r)
	}
	c.tf32 = on
	return nil
}

func (c *cublas) gemm(g gemmCall, out, x, y DevicePtr) error {
	es := int64(g.dtype.Size())
	a, b, cc := uint64(y)+uint64(g.offA*es), uint64(x)+uint64(g.offB*es), uint64(out)+uint64(g.offC*es)
	var r int32
	switch g.dtype {
	case backends.Float32:
		one, zero := float32(1), float32(0)
		r = c.cublasSgemmStrided(c.handle, g.transA, g.transB, g.m, g.n, g.k, &one, a, g.lda, g.strideA,
			b, g.ldb, g.strideB, &zero, cc, g.ldc, g.strideC, g.batch)
	case backends.Float64:
		one, zero := float64(1), float64(0)
		r = c.cublasDgemmStrided(c.handle, g.transA, g.transB, g.m, g.n, g.k, &one, a, g.lda, g.strideA,
			b, g.ldb, g.strideB, &zero, cc, g.ldc, g.strideC, g.batch)
	case backends.Float16, backends.BFloat16:
		t := int32(cudaR16F)
		if g.dtype == backends.BFloat16 {
			t = cudaR16BF
		}
		// Half inputs and outputs, float32 accumulation.
		one, zero := float32(1), float32(0)
		r = c.cublasGemmStridedEx(c.handle, g.transA, g.transB, g.m, g.n, g.k, unsafe.Pointer(&one),
			a, t, g.lda, g.strideA, b, t, g.ldb, g.strideB, unsafe.Pointer(&zero), cc, t, g.ldc, g.strideC,
			g.batch, cublasCompute32F, cublasGemmDefault)
	default:
		return fmt.Errorf("cuda: cuBLAS GEMM does not take %s", g.dtype)
	}
	if r != 0 {
		return fmt.Errorf("cuda: cuBLAS %s GEMM (m=%d n=%d k=%d batch=%d): status %d", g.dtype, g.m, g.n, g.k, g.batch, r)
	}
	return nil
}

// SetTF32 lets float32 GEMMs use TF32 tensor cores (about 10 mantissa bits
// in the products, much faster on Ampere and later). It is off by default;
// without cuBLAS it does nothing.
func (b *Backend) SetTF32(on bool) error {
	if b.blas == nil {
		return nil
	}
	var err error
	b.thread.call(func() { err = b.blas.setTF32(on) })
	return err
}

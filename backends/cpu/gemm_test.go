package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// gemmEdgeSizes are the sizes every dimension is drawn from: 1 to 3, the
// kernels' tile sizes and one either side, odd sizes, and sizes past the
// cache blocks.
var gemmEdgeSizes = []int{1, 2, 3, 5, 6, 7, 8, 13, 14, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 97, 129, 200, 257, 300}

// TestGemmRandomShapes multiplies random shapes from gemmEdgeSizes with
// every micro-kernel this machine runs (the assembly ones included), in
// contiguous, transposed and strided layouts of both operands and of the
// output, and with the cache blocks at their defaults and shrunk, and
// compares each product with a float64 triple loop.
func TestGemmRandomShapes(t *testing.T) {
	be := New(2)
	oldF32, oldF64 := kernelF32, kernelF64
	oldBlocks := [5]int{gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk}
	defer func() {
		kernelF32, kernelF64 = oldF32, oldF64
		gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk = oldBlocks[0], oldBlocks[1], oldBlocks[2], oldBlocks[3], oldBlocks[4]
	}()
	r := rand.New(rand.NewPCG(1, 2))
	pick := func() int { return gemmEdgeSizes[r.IntN(len(gemmEdgeSizes))] }
	lays := []layout{contiguous, transposed, strided}
	// Under the race detector fewer shapes (it is the parallel split that
	// it checks; the plain run covers the shapes).
	shapes := 12
	if raceEnabled {
		shapes = 4
	}
	run := func(dt backends.DType, name string) {
		for i := range shapes {
			c := matmulCase{m: pick(), k: pick(), n: pick()}
			if i == 0 {
				c.m, c.k, c.n = 300, 257, 129 // several blocks everywhere
			}
			xl, yl, ol := lays[r.IntN(3)], lays[r.IntN(3)], lays[r.IntN(3)]
			x := makeView(be, dt, xl, uint64(i), false, c.m, c.k)
			y := makeView(be, dt, yl, uint64(i+100), false, c.k, c.n)
			out := makeView(be, dt, ol, 3, true, c.m, c.n)
			be.Matmul(out, x, y)
			checkMatmul(t, fmt.Sprintf("%s %s m=%d k=%d n=%d %s·%s→%s", name, dt, c.m, c.k, c.n, xl, yl, ol), c, x, y, out)
		}
	}
	for _, blocks := range [][5]int{oldBlocks, {24, 28, 64, 128, 40}} {
		gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk = blocks[0], blocks[1], blocks[2], blocks[3], blocks[4]
		for _, k := range kernelsF32 {
			kernelF32 = k
			run(backends.Float32, fmt.Sprint(k.name, blocks))
		}
		for _, k := range kernelsF64 {
			kernelF64 = k
			run(backends.Float64, fmt.Sprint(k.name, blocks))
		}
	}
}

// TestGemmBatchedSmall covers a batch of small products (run in parallel
// over the batch) with every float32 kernel.
func TestGemmBatchedSmall(t *testing.T) {
	be := New(2)
	old := kernelF32
	defer func() { kernelF32 = old }()
	for _, k := range kernelsF32 {
		kernelF32 = k
		for _, c := range []matmulCase{
			{[]int{64}, []int{64}, []int{64}, 32, 32, 32},
			{[]int{5}, []int{1}, []int{5}, 7, 65, 3},
			{[]int{9}, []int{9}, []int{9}, 16, 8, 33},
		} {
			x := matmulView(be, backends.Float32, transposed, 1, c.batchX, c.batch, c.m, c.k)
			y := matmulView(be, backends.Float32, contiguous, 2, c.batchY, c.batch, c.k, c.n)
			out := allocView(be, backends.Float32, append(append([]int(nil), c.batch...), c.m, c.n)...)
			be.Matmul(out, x, y)
			checkMatmul(t, fmt.Sprintf("%s batch %v m=%d k=%d n=%d", k.name, c.batch, c.m, c.k, c.n), c, x, y, out)
		}
	}
}

// TestGemmNoAllocation checks that a warm GEMM reuses its packing buffers
// and step state: no allocation per call, on one worker and on two. With
// two workers and other load on the machine a warm call can still
// allocate now and then: a buffer the helper returned to its processor's
// private sync.Pool slot is invisible to a caller that moved to another
// processor, and a helper parking in its select may find the runtime's
// waiter cache of its processor empty. So each count of workers has three
// tries of 20 calls, and it is an error only when every try allocates, as
// an allocation in the GEMM's own path does. (With two busy processes
// beside it, one try in 100 to 300 allocated; 600 runs of three tries
// passed.)
func TestGemmNoAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random")
	}
	for _, workers := range []int{1, 2} {
		be := New(workers)
		const m, k, n = 200, 300, 150
		x := randView(be, backends.Float32, 1, m, k)
		y := randView(be, backends.Float32, 2, k, n)
		out := allocView(be, backends.Float32, m, n)
		call := func() {
			gemm(be, kernelF32, m, n, k,
				matSrc[float32]{s: buf(x).f32(), rs: k, cs: 1},
				matSrc[float32]{s: buf(y).f32(), rs: 1, cs: k}, // transposed operand
				matDst[float32]{s: buf(out).f32(), rs: n, cs: 1}, true)
		}
		call()
		least := math.Inf(1)
		for range 3 {
			if least = min(least, testing.AllocsPerRun(20, call)); least == 0 {
				break
			}
		}
		if least > 0 {
			t.Errorf("%d workers: gemm allocates %v times a call (the fewest of three tries)", workers, least)
		}
	}
}

// TestEwKernels checks the vector element-wise kernels against Go's float32
// arithmetic bit for bit, for every op and operand form, on lengths around
// the vector and unrolled widths, at every alignment of the output, with
// plain and non-temporal stores.
func TestEwKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 10)
			if r.IntN(50) == 0 {
				v[i] = float32([]float64{0, math.Inf(1), math.NaN(), math.Copysign(0, -1)}[r.IntN(4)])
			}
		}
		return v
	}
	same := func(a, b float32) bool {
		return a != a && b != b || math.Float32bits(a) == math.Float32bits(b)
	}
	ran := false
	for _, op := range []backends.BinaryOp{backends.Add, backends.Sub, backends.Mul, backends.Div} {
		for _, n := range []int{1, 2, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 1000} {
			for shift := range 9 {
				for _, nt := range []bool{false, true} {
					for form := range 3 {
						a, c := vals(n+8), vals(n+8)
						a, c = a[shift:shift+n], c[8-shift:8-shift+n]
						switch form {
						case 1:
							c = c[:1]
						case 2:
							a = a[:1]
						}
						got, want := make([]float32, n+8)[shift:shift+n], make([]float32, n)
						if !ewF32(op, got, a, c, nt) {
							continue
						}
						ran = true
						binaryFloat(op, want, a, c)
						for i := range want {
							if !same(got[i], want[i]) {
								t.Fatalf("%s form %d n=%d shift=%d nt=%v: element %d = %v, want %v", backends.BinaryOps[op].Name, form, n, shift, nt, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
	if !ran {
		t.Log("no vector element-wise kernels in this build")
	}
}

// TestEwFlatLarge runs the contiguous element-wise path on arrays large
// enough to be split across workers, with offset views and a broadcast
// scalar, against the general driver's result.
func TestEwFlatLarge(t *testing.T) {
	be := New(2)
	const n = 3*ewMinChunk + 17
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		x := makeView(be, dt, contiguous, 1, true, n)
		y := makeView(be, dt, contiguous, 2, true, n+3)
		y.Shape, y.Offset = []int{n}, 3
		s := makeView(be, dt, scalar, 3, false, n)
		xs, ys, ss := snapshot(x), snapshot(y), snapshot(s)
		for _, op := range []backends.BinaryOp{backends.Add, backends.Sub, backends.Mul, backends.Div} {
			f := backends.BinaryOps[op].F
			for _, c := range []struct {
				name string
				a, b backends.View
				av   []float64
				bv   []float64
			}{{"vv", x, y, xs, ys}, {"vs", x, s, xs, ss}, {"sv", s, y, ss, ys}} {
				out := allocView(be, dt, n)
				be.Binary(op, out, c.a, c.b)
				want := make([]float64, n)
				for i := range want {
					want[i] = roundTo(dt, f(c.av[i], c.bv[i]))
				}
				checkExact(t, fmt.Sprintf("%s %s %s", dt, backends.BinaryOps[op].Name, c.name), out, want)
			}
			out := allocView(be, dt, n)
			be.BinaryScalar(op, out, y, 0.5, true)
			want := make([]float64, n)
			for i := range want {
				want[i] = roundTo(dt, f(0.5, ys[i]))
			}
			checkExact(t, fmt.Sprintf("%s %s scalar reversed", dt, backends.BinaryOps[op].Name), out, want)
		}
	}
}

// TestBlockSizes checks the cache blocks derived for a few cache sets and
// micro-panel rows (128 bytes for AVX-512, 64 for AVX2).
func TestBlockSizes(t *testing.T) {
	for _, c := range []struct {
		name           string
		caches         caches
		row            int
		kc, mc, nb, nc int
	}{
		{"zen5 48K/1M/32M", caches{48 << 10, 1 << 20, 32 << 20}, 128, 256, 512, 256, 8192},
		{"zen4 32K/1M/32M", caches{32 << 10, 1 << 20, 32 << 20}, 128, 256, 512, 256, 8192},
		{"unknown", caches{}, 128, 256, 256, 128, 4096},
		{"tiny", caches{4 << 10, 64 << 10, 1 << 20}, 128, 64, 128, 64, 2048},
		{"zen3 avx2 32K/512K/32M", caches{32 << 10, 512 << 10, 32 << 20}, 64, 256, 256, 128, 8192},
		{"unknown avx2", caches{}, 64, 256, 256, 128, 4096},
	} {
		kc, mc, nb, nc := blockSizes(c.caches, c.row)
		if kc != c.kc || mc != c.mc || nb != c.nb || nc != c.nc {
			t.Errorf("%s: blocks %d %d %d %d, want %d %d %d %d", c.name, kc, mc, nb, nc, c.kc, c.mc, c.nb, c.nc)
		}
	}
}

// TestUnaryKernels checks the vector unary kernels against Go's float32
// loops bit for bit, specials included, on lengths around the vector widths.
func TestUnaryKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -1e-40}
	for _, op := range []backends.UnaryOp{backends.Relu, backends.Neg, backends.Abs, backends.Square} {
		for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 70, 1000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64())
				if r.IntN(4) == 0 {
					x[i] = specials[r.IntN(len(specials))]
				}
			}
			got, want := make([]float32, n), make([]float32, n)
			if !vecUnary(op, got, x) {
				continue
			}
			unaryFloat(op, want, x, 0, 0)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%s n=%d: element %d of %v = %v, want %v", backends.UnaryOps[op].Name, n, i, x[i], got[i], want[i])
				}
			}
		}
	}
}

// TestGemmStripsMatchSerial runs GEMMs as strips (the shared operand
// packed once, the strips claimed by whichever worker is free) on 2 and 3
// forced-parallel workers and requires the serial GEMM's bits: tall and
// wide products (row and column strips), transposed operands, a bias and
// accumulation into C, with the cache blocks at their defaults and shrunk
// so that the packed operand holds several K-blocks, column blocks and
// row chunks, and the shared operand packed lazily (small products) and
// before the strips (the last two shapes). On forced-serial workers the
// strips' job runs as one GEMM on the caller (gemmStrips.runAlone), with
// the shared operand as packed before the strips, or unpacked: the same
// bits again.
func TestGemmStripsMatchSerial(t *testing.T) {
	oldF32, oldF64 := kernelF32, kernelF64
	oldBlocks := [5]int{gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk}
	defer func() {
		kernelF32, kernelF64 = oldF32, oldF64
		gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk = oldBlocks[0], oldBlocks[1], oldBlocks[2], oldBlocks[3], oldBlocks[4]
	}()
	shapes := []struct{ m, n, k int }{{300, 97, 257}, {65, 700, 130}, {129, 129, 129}, {1000, 33, 70}, {300, 260, 257}, {700, 300, 230}}
	for _, s := range shapes[len(shapes)-2:] {
		if min(s.m, s.n)*s.k < prepackMinElems {
			t.Fatalf("%v: packed lazily, not before the strips", s)
		}
	}
	for _, blocks := range [][5]int{oldBlocks, {24, 28, 64, 128, 40}} {
		gemmKC, gemmMC, gemmNB, gemmNC, gemmMChunk = blocks[0], blocks[1], blocks[2], blocks[3], blocks[4]
		for _, workers := range []int{2, 3} {
			for _, force := range []int32{forceParallel, forceSerial} {
				be := forcedBackend(workers, force)
				name := fmt.Sprint(blocks, workers, map[int32]string{forceParallel: "parallel", forceSerial: "serial"}[force])
				for _, s := range shapes {
					for _, kern := range kernelsF32 {
						checkStrips(t, be, kern, s.m, s.n, s.k, name)
					}
					for _, kern := range kernelsF64 {
						checkStrips(t, be, kern, s.m, s.n, s.k, name)
					}
				}
			}
		}
	}
}

// checkStrips compares gemmInStrips with the serial gemm for one kernel
// and shape, with A transposed, B contiguous, a bias, and C accumulated.
func checkStrips[T float](t *testing.T, be *Backend, kern kernel[T], m, n, k int, name string) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(m), uint64(n*k)))
	fill := func(n int) []T {
		s := make([]T, n)
		for i := range s {
			s[i] = T(r.NormFloat64())
		}
		return s
	}
	a, bm, bias, c0 := fill(k*m), fill(k*n), fill(n), fill(m*n)
	A := matSrc[T]{s: a, rs: 1, cs: m} // stored transposed
	B := matSrc[T]{s: bm, rs: n, cs: 1}
	want, got := append([]T(nil), c0...), append([]T(nil), c0...)
	gemm(be, kern, m, n, k, A, B, matDst[T]{s: want, rs: n, cs: 1, acc: true, bias: bias}, false)
	gemmInStrips(be, kern, m, n, k, A, B, matDst[T]{s: got, rs: n, cs: 1, acc: true, bias: bias})
	for i := range want {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
			t.Fatalf("%s %s m=%d n=%d k=%d: element %d is %v in strips, %v serially", name, kern.name, m, n, k, i, got[i], want[i])
		}
	}
}

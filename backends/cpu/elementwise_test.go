package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// unaryParams are the parameters each op is tested with.
func unaryParams(op backends.UnaryOp) [][2]float64 {
	switch op {
	case backends.LeakyRelu:
		return [][2]float64{{0.1, 0}}
	case backends.Elu, backends.Celu:
		return [][2]float64{{1.3, 0}}
	case backends.Softplus:
		return [][2]float64{{1, 20}, {2, 1}}
	case backends.Clamp:
		return [][2]float64{{-0.5, 0.7}, {math.NaN(), 1}}
	case backends.PowConst:
		return [][2]float64{{2.5, 0}, {3, 0}, {0, 0}}
	}
	return [][2]float64{{0, 0}}
}

func allUnaryOps() []backends.UnaryOp {
	var ops []backends.UnaryOp
	for op := backends.UnaryOp(0); op.String() != "unary?"; op++ {
		ops = append(ops, op)
	}
	return ops
}

func allBinaryOps() []backends.BinaryOp {
	var ops []backends.BinaryOp
	for op := backends.BinaryOp(0); op.String() != "binary?"; op++ {
		ops = append(ops, op)
	}
	return ops
}

// layoutCases pairs every test shape with every input layout, cycling the
// output layouts, so each kernel sees every layout without a full product.
func layoutCases(fn func(shape []int, in, out layout, seed uint64)) {
	k := 0
	for _, shape := range testShapes {
		for _, in := range inputLayouts {
			fn(shape, in, outputLayouts[k%len(outputLayouts)], uint64(k+1))
			k++
		}
	}
}

// checkUnary compares a unary op's result with its definition's: exactly,
// or within one ulp of the output dtype for the ops whose float32 kernels
// (transcendental.go) compute within 0.5 + 2^-12 ulp of the exact value,
// which is then within one ulp of the definition rounded.
func checkUnary(t *testing.T, op backends.UnaryOp, what string, got backends.View, want []float64) {
	t.Helper()
	if transcendentalF32(op) == nil || !isF32Like(got.DType) {
		checkExact(t, what, got, want)
		return
	}
	checkWithinULP(t, what, got, want)
}

func TestUnaryMatchesDefinition(t *testing.T) {
	be := New(2)
	for _, op := range allUnaryOps() {
		def := backends.UnaryOps[op]
		for _, dt := range allDTypes {
			for _, p := range unaryParams(op) {
				layoutCases(func(shape []int, in, outLay layout, seed uint64) {
					x := makeView(be, dt, in, seed, true, shape...)
					odt := dt
					if def.Predicate {
						odt = backends.Bool
					}
					out := makeView(be, odt, outLay, seed+100, false, shape...)
					var want []float64
					forEachIndex(shape, func(idx []int) {
						v, _ := loadAt(x, idx)
						want = append(want, roundTo(odt, def.F(v, p[0], p[1])))
					})
					be.Unary(op, out, x, p[0], p[1])
					checkUnary(t, op, fmt.Sprintf("%s(%v) %s %v %s→%s", op, p, dt, shape, in, outLay), out, want)
				})
			}
		}
	}
}

func TestUnaryGradMatchesDefinition(t *testing.T) {
	be := New(2)
	for _, op := range allUnaryOps() {
		def := backends.UnaryOps[op]
		if def.DF == nil {
			continue
		}
		for _, dt := range []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.BFloat16} {
			for _, p := range unaryParams(op) {
				k := 0
				layoutCases(func(shape []int, in, outLay layout, seed uint64) {
					x := makeView(be, dt, in, seed, true, shape...)
					g := makeView(be, dt, inputLayouts[k%len(inputLayouts)], seed+50, true, shape...)
					k++
					out := makeView(be, dt, outLay, seed+100, false, shape...)
					var want []float64
					forEachIndex(shape, func(idx []int) {
						xv, _ := loadAt(x, idx)
						gv, _ := loadAt(g, idx)
						want = append(want, roundTo(dt, gv*def.DF(xv, p[0], p[1])))
					})
					be.UnaryGrad(op, out, x, g, p[0], p[1])
					checkUnary(t, op, fmt.Sprintf("%s'(%v) %s %v %s→%s", op, p, dt, shape, in, outLay), out, want)
				})
			}
		}
	}
}

// refIntOp is the integer form of the binary ops that have one: Python's
// remainder and floor division (0 for a zero divisor), and powers by
// repeated multiplication (0 for a negative exponent).
func refIntOp(op backends.BinaryOp, a, b int64) (int64, bool) {
	switch op {
	case backends.Add:
		return a + b, true
	case backends.Sub:
		return a - b, true
	case backends.Mul:
		return a * b, true
	case backends.Maximum:
		return max(a, b), true
	case backends.Minimum:
		return min(a, b), true
	case backends.Rem:
		if b == 0 {
			return 0, true
		}
		r := a - b*refFloorDiv(a, b)
		return r, true
	case backends.FloorDiv:
		if b == 0 {
			return 0, true
		}
		return refFloorDiv(a, b), true
	case backends.Pow:
		if b < 0 {
			return 0, true
		}
		r := int64(1)
		for range b {
			r *= a
		}
		return r, true
	}
	return 0, false
}

func refFloorDiv(a, b int64) int64 {
	q := a / b
	if q*b != a && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// refCompare evaluates a predicate op on exact integers.
func refCompare(op backends.BinaryOp, a, b int64) int64 {
	var r bool
	switch op {
	case backends.Eq:
		r = a == b
	case backends.Ne:
		r = a != b
	case backends.Lt:
		r = a < b
	case backends.Le:
		r = a <= b
	case backends.Gt:
		r = a > b
	case backends.Ge:
		r = a >= b
	case backends.And:
		r = a != 0 && b != 0
	case backends.Or:
		r = a != 0 || b != 0
	case backends.Xor:
		r = (a != 0) != (b != 0)
	}
	if r {
		return 1
	}
	return 0
}

// refBinary is the expected result of op on one pair of elements of dtype
// dt, rounded to the output dtype odt: exact integers where the op has an
// integer form (or is a predicate) and both operands are integers, the
// float64 definition otherwise.
func refBinary(op backends.BinaryOp, dt, odt backends.DType, a, b float64, ai, bi int64) float64 {
	def := backends.BinaryOps[op]
	if isIntLike(dt) {
		if def.Predicate {
			return roundIntTo(odt, refCompare(op, ai, bi))
		}
		if r, ok := refIntOp(op, ai, bi); ok {
			return roundIntTo(odt, r)
		}
	}
	return roundTo(odt, def.F(a, b))
}

func TestBinaryMatchesDefinition(t *testing.T) {
	be := New(2)
	for _, op := range allBinaryOps() {
		def := backends.BinaryOps[op]
		for _, dt := range allDTypes {
			odt := dt
			if def.Predicate {
				odt = backends.Bool
			}
			k := 0
			layoutCases(func(shape []int, in, outLay layout, seed uint64) {
				bLay := inputLayouts[(k+2)%len(inputLayouts)]
				k++
				x := makeView(be, dt, in, seed, true, shape...)
				y := makeView(be, dt, bLay, seed+7, true, shape...)
				out := makeView(be, odt, outLay, seed+100, false, shape...)
				var want []float64
				forEachIndex(shape, func(idx []int) {
					a, ai := loadAt(x, idx)
					b, bi := loadAt(y, idx)
					want = append(want, refBinary(op, dt, odt, a, b, ai, bi))
				})
				be.Binary(op, out, x, y)
				checkExact(t, fmt.Sprintf("%s %s %v %s,%s→%s", op, dt, shape, in, bLay, outLay), out, want)
			})
		}
	}
}

func TestBinaryScalarMatchesDefinition(t *testing.T) {
	be := New(2)
	scalars := []float64{2, -0.5, 0.1, 3, 0, 1e-7, math.NaN()}
	for _, op := range allBinaryOps() {
		def := backends.BinaryOps[op]
		for _, dt := range allDTypes {
			odt := dt
			if def.Predicate {
				odt = backends.Bool
			}
			k := 0
			layoutCases(func(shape []int, in, outLay layout, seed uint64) {
				s := scalars[k%len(scalars)]
				reverse := k%2 == 1
				k++
				x := makeView(be, dt, in, seed, true, shape...)
				out := makeView(be, odt, outLay, seed+100, false, shape...)
				intPath := isIntLike(dt) && !def.Predicate && s == math.Trunc(s)
				var want []float64
				forEachIndex(shape, func(idx []int) {
					v, vi := loadAt(x, idx)
					if intPath {
						a, c := vi, int64(s)
						if reverse {
							a, c = c, a
						}
						if r, ok := refIntOp(op, a, c); ok {
							want = append(want, roundIntTo(odt, r))
							return
						}
					}
					a, c := v, s
					if reverse {
						a, c = c, a
					}
					want = append(want, roundTo(odt, def.F(a, c)))
				})
				be.BinaryScalar(op, out, x, s, reverse)
				checkExact(t, fmt.Sprintf("%s %s %v scalar %v reverse %v %s→%s", op, dt, shape, s, reverse, in, outLay), out, want)
			})
		}
	}
}

func TestCopyConvertsEveryDTypePair(t *testing.T) {
	be := New(2)
	for _, from := range allDTypes {
		for _, to := range allDTypes {
			layoutCases(func(shape []int, in, outLay layout, seed uint64) {
				x := makeView(be, from, in, seed, true, shape...)
				out := makeView(be, to, outLay, seed+100, false, shape...)
				var want []float64
				forEachIndex(shape, func(idx []int) {
					v, vi := loadAt(x, idx)
					if isIntLike(from) && isIntLike(to) {
						want = append(want, roundIntTo(to, vi))
					} else {
						want = append(want, roundTo(to, v))
					}
				})
				be.Copy(out, x)
				checkExact(t, fmt.Sprintf("copy %s→%s %v %s→%s", from, to, shape, in, outLay), out, want)
			})
		}
	}
}

func TestFillEveryDType(t *testing.T) {
	be := New(2)
	for _, dt := range allDTypes {
		for _, v := range []float64{0, 1.5, -2.7, math.NaN(), 300, -1, math.Inf(1)} {
			for i, shape := range testShapes {
				lay := outputLayouts[i%len(outputLayouts)]
				out := makeView(be, dt, lay, uint64(i), false, shape...)
				want := make([]float64, backends.NumElements(shape))
				for j := range want {
					want[j] = roundTo(dt, v)
				}
				be.Fill(out, v)
				checkExact(t, fmt.Sprintf("fill %s %v %v %s", dt, v, shape, lay), out, want)
			}
		}
	}
}

// TestFillLargeRuns checks the contiguous fill (memclr for zero bits,
// doubling copies otherwise) on runs longer than its 4096-element copies
// and than a parallel chunk, on a view that starts inside its buffer,
// leaving the elements around it alone.
func TestFillLargeRuns(t *testing.T) {
	for _, workers := range []int{1, 2} {
		be := New(workers)
		for _, dt := range []backends.DType{backends.Float32, backends.Float64, backends.BFloat16, backends.Int64} {
			for _, v := range []float64{0, math.Copysign(0, -1), 1.5, -3} {
				for _, n := range []int{1, 4095, 4097, 70001, 1 << 20} {
					whole := allocView(be, dt, n+2)
					be.Fill(whole, 7)
					out := whole
					out.Shape, out.Offset = []int{n}, 1
					be.Fill(out, v)
					want := make([]float64, n+2)
					for j := range want {
						want[j] = roundTo(dt, v)
					}
					want[0], want[n+1] = 7, 7
					checkExact(t, fmt.Sprintf("fill %s %v n=%d workers=%d", dt, v, n, workers), whole, want)
				}
			}
		}
	}
}

func TestWhereSelectsEveryDType(t *testing.T) {
	be := New(2)
	for _, dt := range allDTypes {
		k := 0
		layoutCases(func(shape []int, in, outLay layout, seed uint64) {
			cond := makeView(be, backends.Bool, inputLayouts[k%len(inputLayouts)], seed+3, false, shape...)
			x := makeView(be, dt, in, seed, true, shape...)
			y := makeView(be, dt, inputLayouts[(k+1)%len(inputLayouts)], seed+9, true, shape...)
			k++
			out := makeView(be, dt, outLay, seed+100, false, shape...)
			var want []float64
			forEachIndex(shape, func(idx []int) {
				c, _ := loadAt(cond, idx)
				a, _ := loadAt(x, idx)
				b, _ := loadAt(y, idx)
				if c != 0 {
					want = append(want, a)
				} else {
					want = append(want, b)
				}
			})
			be.Where(out, cond, x, y)
			checkExact(t, fmt.Sprintf("where %s %v %s→%s", dt, shape, in, outLay), out, want)
		})
	}
}

func TestWhereMixedDTypes(t *testing.T) {
	be := New(2)
	shape := []int{3, 17}
	for _, c := range []struct{ out, x, y backends.DType }{
		{backends.Float32, backends.Float64, backends.Float16},
		{backends.Int64, backends.Int32, backends.Uint8},
	} {
		cond := makeView(be, backends.Bool, contiguous, 1, false, shape...)
		x := makeView(be, c.x, transposed, 2, false, shape...)
		y := makeView(be, c.y, broadcast, 3, false, shape...)
		out := makeView(be, c.out, strided, 4, false, shape...)
		var want []float64
		forEachIndex(shape, func(idx []int) {
			cv, _ := loadAt(cond, idx)
			a, _ := loadAt(x, idx)
			b, _ := loadAt(y, idx)
			if cv != 0 {
				want = append(want, roundTo(c.out, a))
			} else {
				want = append(want, roundTo(c.out, b))
			}
		})
		be.Where(out, cond, x, y)
		checkExact(t, fmt.Sprintf("where %v", c), out, want)
	}
}

func TestCopyTransposeTiles(t *testing.T) {
	be := New(2)
	for _, dt := range []backends.DType{backends.Uint8, backends.BFloat16, backends.Float32, backends.Float64} {
		for _, shape := range [][]int{{70, 90}, {2, 33, 130}, {16, 16}, {5, 200, 17}} {
			for _, lay := range []layout{transposed, strided} {
				x := makeView(be, dt, lay, 3, true, shape...)
				if lay == strided { // a strided buffer, read with its dims reversed
					r := len(shape)
					rev := make([]int, r)
					for d := range rev {
						rev[d] = shape[r-1-d]
					}
					x = makeView(be, dt, strided, 3, true, rev...)
					x.Shape = append([]int(nil), shape...)
					slices.Reverse(x.Strides)
				}
				out := makeView(be, dt, contiguous, 4, false, shape...)
				want := snapshot(x)
				be.Copy(out, x)
				checkExact(t, fmt.Sprintf("copy %s %v %s", dt, shape, lay), out, want)
			}
		}
	}
}

func TestReluGradF32MatchesDefinition(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, inf, -inf, nan, -nan, 1e-45, -1e-45, 3e38, -3e38, 0.5}
	gs := []float32{2, -3, 0, float32(math.Copysign(0, -1)), inf, nan}
	var allX, allG, allWant []float32
	for _, x := range xs {
		for _, g := range gs {
			var d float32
			if x > 0 {
				d = 1
			}
			want := g * d
			got := []float32{0}
			reluGradF32(got, []float32{x}, []float32{g})
			if math.Float32bits(got[0]) != math.Float32bits(want) && !(want != want && got[0] != got[0]) {
				t.Errorf("relu grad at x=%v, g=%v: %v, want %v", x, g, got[0], want)
			}
			allX, allG, allWant = append(allX, x), append(allG, g), append(allWant, want)
		}
	}
	// all at once: the vector kernel takes the groups of eight (and
	// 32), the loop the rest
	got := make([]float32, len(allX))
	reluGradF32(got, allX, allG)
	for i, want := range allWant {
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(want != want && got[i] != got[i]) {
			t.Errorf("relu grad (element %d of %d) at x=%v, g=%v: %v, want %v", i, len(got), allX[i], allG[i], got[i], want)
		}
	}
}

// BenchmarkFillZeros times zeroing a 6 MiB float32 tensor (a fused
// projection's gradient, 2048×768) on one worker with the contiguous fill
// and with the general driver alternately in every iteration, and reports
// the fastest of each (us-flat, us-driver).
func BenchmarkFillZeros(b *testing.B) {
	be := New(1)
	out := allocView(be, backends.Float32, 2048, 768)
	defer func() { fillFlat = true }()
	best := [2]time.Duration{time.Hour, time.Hour}
	for b.Loop() {
		for i, flat := range []bool{false, true} {
			fillFlat = flat
			start := time.Now()
			be.Fill(out, 0)
			best[i] = min(best[i], time.Since(start))
		}
	}
	b.ReportMetric(float64(best[0].Microseconds()), "us-driver")
	b.ReportMetric(float64(best[1].Microseconds()), "us-flat")
}

// A broadcast scalar copied into a contiguous view (the gradient of a sum)
// is filled by copies of what is filled so far (fill): every element of
// runs around its block size and of a view long enough for several
// parallel chunks holds the value, and nothing outside the run changes.
func TestCopyBroadcastScalarFills(t *testing.T) {
	for _, n := range []int{1, 2, 3, 31, 2047, 2048, 2049, 4096, 5000} {
		d := make([]float32, n+2)
		d[0], d[n+1] = -1, -1
		fill(d[1:n+1], 2.5)
		for i, v := range d {
			want := float32(2.5)
			if i == 0 || i == n+1 {
				want = -1
			}
			if v != want {
				t.Fatalf("fill of %d: d[%d] = %v, want %v", n, i, v, want)
			}
		}
	}
	be := New(2)
	for _, dt := range []backends.DType{backends.Float32, backends.Float64, backends.BFloat16, backends.Int64} {
		n := 3*ewMinChunk + 7
		x := makeView(be, dt, scalar, 3, false, 4, n/4+1)
		out := allocView(be, dt, 4, n/4+1)
		be.Copy(out, x)
		v, _ := loadAt(x, []int{0, 0})
		want := make([]float64, backends.NumElements(out.Shape))
		for i := range want {
			want[i] = v
		}
		checkExact(t, fmt.Sprintf("copy of a broadcast %s scalar", dt), out, want)
	}
}

package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

type reduceCase struct {
	shape []int
	axes  []int
}

// reduceCases covers every axis subset of small shapes plus shapes that take
// the segmented paths (few outputs, more than 32768 elements each).
func reduceCases() []reduceCase {
	var cs []reduceCase
	for _, shape := range [][]int{{5, 7, 9}, {1, 65, 3}, {130}, {2, 3, 4, 5}} {
		r := len(shape)
		for mask := 1; mask < 1<<r; mask++ {
			var axes []int
			for d := range r {
				if mask&(1<<d) != 0 {
					axes = append(axes, d)
				}
			}
			cs = append(cs, reduceCase{shape, axes})
		}
	}
	cs = append(cs,
		reduceCase{[]int{40000}, []int{0}},
		reduceCase{[]int{3, 40000}, []int{1}},
		reduceCase{[]int{40000, 3}, []int{0}},
		reduceCase{[]int{70, 600}, []int{0}},
		reduceCase{[]int{3, 200, 300}, []int{0, 2}},
		reduceCase{[]int{0, 4}, []int{0}},
	)
	return cs
}

// ulp returns the spacing of dtype dt's values near v.
func ulp(dt backends.DType, v float64) float64 {
	switch dt {
	case backends.Float32:
		f := float32(math.Abs(v))
		return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
	case backends.Float16:
		return math.Max(math.Abs(v)*math.Pow(2, -10), 6e-8)
	case backends.BFloat16:
		return math.Max(math.Abs(v)*math.Pow(2, -7), 1e-38)
	}
	return math.Abs(v)*math.Pow(2, -52) + 1e-300
}

func TestReduceMatchesSequentialReference(t *testing.T) {
	be := New(2)
	dtypes := []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.BFloat16,
		backends.Int64, backends.Int32, backends.Uint8, backends.Bool}
	for ci, c := range reduceCases() {
		for _, op := range []backends.ReduceOp{backends.Sum, backends.Prod, backends.Max, backends.Min} {
			for di, dt := range dtypes {
				big := backends.NumElements(c.shape) > 10000
				if big && di%2 == 1 {
					continue // keep the big cases quick
				}
				xLay := inputLayouts[(ci+di)%4]
				x := makeView(be, dt, xLay, uint64(ci*10+di), op != backends.Sum || dt != backends.Float32, c.shape...)
				if op == backends.Prod && !isIntLike(dt) {
					// keep products finite and away from underflow: values near ±1
					fillNearOne(x)
				}
				odt := dt
				if (op == backends.Sum || op == backends.Prod) && isIntLike(dt) {
					odt = backends.Int64
				}
				oshape := append([]int(nil), c.shape...)
				for _, a := range c.axes {
					oshape[a] = 1
				}
				out := makeView(be, odt, outputLayouts[ci%3], 99, false, oshape...)
				be.Reduce(op, out, x, c.axes)
				what := fmt.Sprintf("%s %s %v axes %v %s", op, dt, c.shape, c.axes, xLay)
				checkReduce(t, what, op, x, out, c.axes)
			}
		}
	}
}

// fillNearOne replaces a float view's buffer with values in ±[0.9, 1.1].
func fillNearOne(v backends.View) {
	b := buf(v)
	for i := range b.n {
		x := refLoad(b, i)
		s := 1.0
		if x < 0 {
			s = -1
		}
		refStore(b, i, s*(0.9+math.Mod(math.Abs(x)*0.1, 0.2)))
	}
}

// checkReduce compares out with a sequential float64 (or exact int64)
// reduction of x in row-major order.
func checkReduce(t *testing.T, what string, op backends.ReduceOp, x, out backends.View, axes []int) {
	t.Helper()
	red := make([]bool, len(x.Shape))
	for _, a := range axes {
		red[a] = true
	}
	type acc struct {
		f, abs float64
		i      int64
		n      int
	}
	accs := make([]*acc, backends.NumElements(out.Shape))
	forEachIndex(x.Shape, func(idx []int) {
		o := 0
		for d, i := range idx {
			o *= out.Shape[d]
			if !red[d] {
				o += i
			}
		}
		a := accs[o]
		if a == nil {
			a = &acc{}
			switch op {
			case backends.Prod:
				a.f, a.i = 1, 1
			case backends.Max:
				a.f, a.i = math.Inf(-1), math.MinInt64
			case backends.Min:
				a.f, a.i = math.Inf(1), math.MaxInt64
			}
			accs[o] = a
		}
		v, vi := loadAt(x, idx)
		a.n++
		a.abs += math.Abs(v)
		switch op {
		case backends.Sum:
			a.f += v
			a.i += vi
		case backends.Prod:
			a.f *= v
			a.i *= vi
		case backends.Max:
			a.f = max(a.f, v)
			a.i = max(a.i, vi)
		case backends.Min:
			a.f = min(a.f, v)
			a.i = min(a.i, vi)
		}
	})
	ob := buf(out)
	bad := 0
	k := 0
	forEachIndex(out.Shape, func(idx []int) {
		got := refLoad(ob, offsetOf(out, idx))
		a := accs[k]
		k++
		var want float64
		switch {
		case a == nil: // empty reduction
			want = roundTo(out.DType, map[backends.ReduceOp]float64{backends.Sum: 0, backends.Prod: 1,
				backends.Max: math.Inf(-1), backends.Min: math.Inf(1)}[op])
			if isIntLike(x.DType) {
				want = roundIntTo(out.DType, map[backends.ReduceOp]int64{backends.Sum: 0, backends.Prod: 1,
					backends.Max: math.MinInt64, backends.Min: math.MaxInt64}[op])
			}
		case isIntLike(x.DType):
			want = roundIntTo(out.DType, a.i)
		default:
			want = roundTo(out.DType, a.f)
		}
		ok := sameBits(got, want) || got == want
		if !ok && a != nil && !isIntLike(x.DType) && !math.IsInf(want, 0) && !math.IsNaN(want) {
			// summation order differs from the sequential reference
			tol := ulp(out.DType, want) + 1e-15*float64(a.n)*a.abs
			if op == backends.Prod {
				tol = ulp(out.DType, want) + 1e-15*float64(a.n)*math.Abs(a.f)
			}
			ok = math.Abs(got-want) <= tol && (op == backends.Sum || op == backends.Prod)
		}
		if !ok {
			if bad < 5 {
				t.Errorf("%s: output %v = %v, want %v", what, idx, got, want)
			}
			bad++
		}
	})
}

type lineCase struct {
	shape []int
	axis  int
}

var lineCases = []lineCase{
	{[]int{7}, 0}, {[]int{5, 9}, 0}, {[]int{5, 9}, 1}, {[]int{2, 3, 65}, 1}, {[]int{2, 3, 65}, 2},
	{[]int{1, 1}, 0}, {[]int{129, 4}, 0}, {[]int{3, 40000}, 1}, {[]int{40000}, 0},
}

// tieValues makes float views full of ties and NaNs: values from a small set.
func tieValues(v backends.View, seed uint64) {
	b := buf(v)
	for i := range b.n {
		x := float64((uint64(i)*2654435761 + seed*97) % 7)
		if !isIntLike(v.DType) && (uint64(i)*40503+seed)%1009 == 0 {
			x = math.NaN()
		}
		refStore(b, i, x-3)
	}
}

func TestArgReduceFirstExtremum(t *testing.T) {
	be := New(2)
	for ci, c := range lineCases {
		for di, dt := range []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.Int64, backends.Int32, backends.Uint8} {
			for _, op := range []backends.ReduceOp{backends.ArgMax, backends.ArgMin} {
				lay := inputLayouts[(ci+di)%4]
				x := makeView(be, dt, lay, uint64(ci), false, c.shape...)
				if ci%2 == 0 {
					tieValues(x, uint64(di))
				}
				oshape := slices.Clone(c.shape)
				oshape[c.axis] = 1
				if n := c.shape[c.axis]; n > segment {
					// extremes at a segment's last element and the line's end
					forEachIndex(oshape, func(idx []int) {
						idx = slices.Clone(idx)
						idx[c.axis] = segment - 1
						refStore(buf(x), offsetOf(x, idx), 5)
						idx[c.axis] = n - 1
						refStore(buf(x), offsetOf(x, idx), -5)
					})
				}
				out := makeView(be, backends.Int64, outputLayouts[ci%3], 5, false, oshape...)
				be.ArgReduce(op, out, x, c.axis)
				var want []float64
				forEachIndex(oshape, func(oidx []int) {
					idx := slices.Clone(oidx)
					best, bi := math.NaN(), 0
					for k := range c.shape[c.axis] {
						idx[c.axis] = k
						v, _ := loadAt(x, idx)
						if k == 0 {
							best = v
							continue
						}
						if math.IsNaN(best) {
							break
						}
						if math.IsNaN(v) || op == backends.ArgMax && v > best || op == backends.ArgMin && v < best {
							best, bi = v, k
						}
					}
					want = append(want, float64(bi))
				})
				checkExact(t, fmt.Sprintf("%s %s %v axis %d %s", op, dt, c.shape, c.axis, lay), out, want)
			}
		}
	}
}

func TestScanMatchesSequentialReference(t *testing.T) {
	be := New(2)
	for ci, c := range lineCases {
		for di, dt := range []backends.DType{backends.Float32, backends.Float64, backends.BFloat16, backends.Int64, backends.Int32, backends.Bool} {
			for _, op := range []backends.ReduceOp{backends.Sum, backends.Prod} {
				if backends.NumElements(c.shape) > 10000 && (di%2 == 1 || op == backends.Prod) {
					continue
				}
				lay := inputLayouts[(ci+di)%4]
				x := makeView(be, dt, lay, uint64(ci), false, c.shape...)
				if op == backends.Prod && !isIntLike(dt) {
					fillNearOne(x)
				}
				odt := dt
				if isIntLike(dt) {
					odt = backends.Int64
				}
				out := makeView(be, odt, outputLayouts[(ci+1)%3], 5, false, c.shape...)
				be.Scan(op, out, x, c.axis)
				want := make([]float64, backends.NumElements(c.shape))
				rowMajor := backends.RowMajorStrides(c.shape)
				oshape := slices.Clone(c.shape)
				oshape[c.axis] = 1
				forEachIndex(oshape, func(line []int) {
					line = slices.Clone(line)
					var facc float64
					var iacc int64
					if op == backends.Prod {
						facc, iacc = 1, 1
					}
					for k := range c.shape[c.axis] {
						line[c.axis] = k
						v, vi := loadAt(x, line)
						if op == backends.Prod {
							facc *= v
							iacc *= vi
						} else {
							facc += v
							iacc += vi
						}
						p := 0
						for d, i := range line {
							p += i * rowMajor[d]
						}
						if isIntLike(dt) {
							want[p] = roundIntTo(odt, iacc)
						} else {
							want[p] = roundTo(odt, facc)
						}
					}
				})
				checkExact(t, fmt.Sprintf("scan %s %s %v axis %d %s", op, dt, c.shape, c.axis, lay), out, want)
			}
		}
	}
}

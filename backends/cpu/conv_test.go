package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

var convGeometries = []backends.ConvGeometry{
	{N: 2, C: 3, H: 7, W: 9, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1},
	{N: 1, C: 2, H: 8, W: 11, KH: 2, KW: 3, StrideH: 2, StrideW: 3, PadTop: 0, PadLeft: 2, DilationH: 1, DilationW: 2, PadValue: math.Inf(-1)},
	{N: 3, C: 1, H: 1, W: 17, KH: 1, KW: 5, StrideH: 1, StrideW: 2, PadTop: 0, PadLeft: 3, DilationH: 1, DilationW: 1, PadValue: 0.5},
	{N: 1, C: 4, H: 5, W: 5, KH: 5, KW: 5, StrideH: 1, StrideW: 1, PadTop: 4, PadLeft: 4, DilationH: 1, DilationW: 1},
	{N: 1, C: 1, H: 6, W: 6, KH: 2, KW: 2, StrideH: 3, StrideW: 3, PadTop: 0, PadLeft: 0, DilationH: 2, DilationW: 2},
}

// withOut fills in OutH and OutW for symmetric padding.
func withOut(g backends.ConvGeometry) backends.ConvGeometry {
	g.OutH = (g.H+2*g.PadTop-g.DilationH*(g.KH-1)-1)/g.StrideH + 1
	g.OutW = (g.W+2*g.PadLeft-g.DilationW*(g.KW-1)-1)/g.StrideW + 1
	return g
}

func TestIm2ColMatchesReference(t *testing.T) {
	be := New(2)
	for gi, g := range convGeometries {
		g = withOut(g)
		for di, dt := range []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.Int64, backends.Uint8} {
			lay := inputLayouts[(gi+di)%3]
			x := makeView(be, dt, lay, uint64(gi), false, g.N, g.C, g.H, g.W)
			odt := dt
			if di == 2 {
				odt = backends.Float32 // a converting copy
			}
			out := makeView(be, odt, outputLayouts[(gi+di)%3], 1, false, g.N, g.C*g.KH*g.KW, g.OutH*g.OutW)
			be.Im2Col(out, x, g)
			var want []float64
			forEachIndex(out.Shape, func(idx []int) {
				n, row, col := idx[0], idx[1], idx[2]
				c, ki, kj := row/(g.KH*g.KW), row/g.KW%g.KH, row%g.KW
				oh, ow := col/g.OutW, col%g.OutW
				h := oh*g.StrideH - g.PadTop + ki*g.DilationH
				w := ow*g.StrideW - g.PadLeft + kj*g.DilationW
				v := g.PadValue
				if h >= 0 && h < g.H && w >= 0 && w < g.W {
					v, _ = loadAt(x, []int{n, c, h, w})
				}
				want = append(want, roundTo(odt, v))
			})
			checkExact(t, fmt.Sprintf("im2col %d %s %s", gi, dt, lay), out, want)
		}
	}
}

func TestCol2ImMatchesReference(t *testing.T) {
	be := New(2)
	for gi, g := range convGeometries {
		g = withOut(g)
		for di, dt := range []backends.DType{backends.Float32, backends.Float64, backends.BFloat16} {
			lay := inputLayouts[(gi+di)%3]
			cols := makeView(be, dt, lay, uint64(gi), false, g.N, g.C*g.KH*g.KW, g.OutH*g.OutW)
			out := makeView(be, dt, outputLayouts[(gi+di)%3], 1, true, g.N, g.C, g.H, g.W)
			be.Col2Im(out, cols, g)
			// accumulate in the documented order, rounding to the dtype each step
			acc := make([]float64, g.N*g.C*g.H*g.W)
			for n := range g.N {
				for c := range g.C {
					for ki := range g.KH {
						for kj := range g.KW {
							for oh := range g.OutH {
								for ow := range g.OutW {
									h := oh*g.StrideH - g.PadTop + ki*g.DilationH
									w := ow*g.StrideW - g.PadLeft + kj*g.DilationW
									if h < 0 || h >= g.H || w < 0 || w >= g.W {
										continue
									}
									v, _ := loadAt(cols, []int{n, (c*g.KH+ki)*g.KW + kj, oh*g.OutW + ow})
									p := ((n*g.C+c)*g.H+h)*g.W + w
									acc[p] = roundTo(dt, acc[p]+v)
								}
							}
						}
					}
				}
			}
			checkExact(t, fmt.Sprintf("col2im %d %s %s", gi, dt, lay), out, acc)
		}
	}
}

func TestRandomIsPositional(t *testing.T) {
	be := New(2)
	kinds := []backends.RandomKind{backends.Uniform, backends.Normal, backends.Bernoulli, backends.RandInt}
	for ki, kind := range kinds {
		for di, dt := range []backends.DType{backends.Float32, backends.Float64, backends.BFloat16, backends.Int64, backends.Int32, backends.Bool} {
			shape := []int{3, 700}
			lay := outputLayouts[(ki+di)%3]
			out := makeView(be, dt, lay, 1, false, shape...)
			p0, p1 := -1.0, 3.0
			if kind == backends.Bernoulli {
				p0 = 0.3
			}
			be.Random(out, kind, 42, 1000, p0, p1)
			want := make([]float64, 3*700)
			for i := range want {
				v := backends.RandomValue(kind, 42, 1000+uint64(i), p0, p1)
				if isIntLike(dt) {
					want[i] = roundIntTo(dt, int64(v))
				} else {
					want[i] = roundTo(dt, v)
				}
			}
			checkExact(t, fmt.Sprintf("random %d %s %s", kind, dt, lay), out, want)
		}
	}
}

func TestGatherScatter(t *testing.T) {
	be := New(2)
	for di, dt := range allDTypes {
		for axis := range 2 {
			xs := []int{5, 6}
			is := []int{5, 6}
			is[axis] = 4
			lay := inputLayouts[di%3]
			x := makeView(be, dt, lay, uint64(di), false, xs...)
			idx := makeView(be, backends.Int64, outputLayouts[di%3], 1, false, is...)
			ib := buf(idx)
			forEachIndex(is, func(p []int) {
				o := offsetOf(idx, p)
				ib.i64()[o] = int64((p[0]*7+p[1]*3)%(2*xs[axis])) - int64(xs[axis]) // negative wraps
			})
			out := makeView(be, dt, contiguous, 2, false, is...)
			be.Gather(out, x, idx, axis)
			var want []float64
			forEachIndex(is, func(p []int) {
				q := slices.Clone(p)
				k := int(ib.i64()[offsetOf(idx, p)])
				if k < 0 {
					k += xs[axis]
				}
				q[axis] = k
				v, _ := loadAt(x, q)
				want = append(want, v)
			})
			checkExact(t, fmt.Sprintf("gather %s axis %d", dt, axis), out, want)

			for _, add := range []bool{false, true} {
				dst := makeView(be, dt, strided, 9, false, xs...)
				before := snapshot(dst)
				src := makeView(be, dt, transposed, 4, false, is...)
				be.Scatter(dst, idx, src, axis, add)
				exp := slices.Clone(before)
				rm := backends.RowMajorStrides(xs)
				forEachIndex(is, func(p []int) {
					k := int(ib.i64()[offsetOf(idx, p)])
					if k < 0 {
						k += xs[axis]
					}
					q := slices.Clone(p)
					q[axis] = k
					pos := q[0]*rm[0] + q[1]*rm[1]
					v, vi := loadAt(src, p)
					switch {
					case !add:
						exp[pos] = v
					case isIntLike(dt):
						exp[pos] = roundIntTo(dt, int64(exp[pos])+vi)
					default:
						exp[pos] = roundTo(dt, exp[pos]+v)
					}
				})
				checkExact(t, fmt.Sprintf("scatter add=%v %s axis %d", add, dt, axis), dst, exp)
			}
		}
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestGatherScatterReportBadIndex(t *testing.T) {
	be := New(2)
	x := randView(be, backends.Float32, 1, 4)
	idx := allocView(be, backends.Int64, 2)
	buf(idx).i64()[1] = 9
	out := allocView(be, backends.Float32, 2)
	be.Gather(out, x, idx, 0)
	if err := be.Sync(); err == nil {
		t.Fatal("gather with index 9 of 4: no error")
	}
	be2 := New(1)
	be2.Scatter(x, idx, out, 0, true)
	if err := be2.Sync(); err == nil {
		t.Fatal("scatter with index 9 of 4: no error")
	}
}

func TestSortStable(t *testing.T) {
	be := New(2)
	for di, dt := range []backends.DType{backends.Float32, backends.Float64, backends.Int64, backends.Uint8} {
		for _, desc := range []bool{false, true} {
			shape := []int{3, 33}
			x := makeView(be, dt, inputLayouts[di%3], uint64(di), false, shape...)
			tieValues(x, uint64(di))
			vals := makeView(be, dt, contiguous, 1, false, shape...)
			ids := makeView(be, backends.Int64, strided, 1, false, shape...)
			be.Sort(vals, ids, x, 1, desc)
			var wantV, wantI []float64
			for r := range 3 {
				type kv struct {
					v float64
					i int
				}
				var line []kv
				for k := range 33 {
					v, _ := loadAt(x, []int{r, k})
					line = append(line, kv{v, k})
				}
				less := func(a, b float64) bool { // NaN above every number
					if math.IsNaN(a) {
						return false
					}
					return math.IsNaN(b) || a < b
				}
				slices.SortStableFunc(line, func(a, b kv) int {
					x, y := a.v, b.v
					if desc {
						x, y = y, x
					}
					switch {
					case less(x, y):
						return -1
					case less(y, x):
						return 1
					}
					return 0
				})
				for _, e := range line {
					wantV = append(wantV, e.v)
					wantI = append(wantI, float64(e.i))
				}
			}
			checkExact(t, fmt.Sprintf("sort values %s desc=%v", dt, desc), vals, wantV)
			checkExact(t, fmt.Sprintf("sort indices %s desc=%v", dt, desc), ids, wantI)
		}
	}
}

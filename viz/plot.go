package viz

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// Line returns a line chart of one series per ys over the x values xs (nil
// xs means 0, 1, 2, …). Series are named "y" (one) or "y1", "y2", …;
// rename them with SetNames. Missing values (NaN, ±Inf) leave gaps. It
// panics with a *tensor.Error (ErrShape) when a series' length differs
// from xs's.
func Line(xs []float64, ys ...[]float64) *Chart {
	return xyChart("Line", "line", lineSeries, xs, ys)
}

// Scatter returns a scatter plot of the points (xs[i], ys[i]); it panics
// with a *tensor.Error (ErrShape) when the lengths differ. Add more series
// with AddScatter or AddLine.
func Scatter(xs, ys []float64) *Chart {
	return xyChart("Scatter", "scatter", scatterSeries, xs, [][]float64{ys})
}

func xyChart(op, key string, kind seriesKind, xs []float64, ys [][]float64) *Chart {
	f := figure{kind: figureXY, xLabel: "x", yLabel: "y"}
	for i, y := range ys {
		name := "y"
		if len(ys) > 1 {
			name = "y" + strconv.Itoa(i+1)
		}
		if xs != nil && len(y) != len(xs) {
			panic(vizError(op, tensor.ErrShape, "series %s has %d values, xs has %d", name, len(y), len(xs)))
		}
		f.series = append(f.series, series{name: name, kind: kind, xs: xValues(op, xs, len(y)), ys: clone(y)})
	}
	return newChart(key, f)
}

// Histogram returns a histogram of the values of t (any shape and dtype;
// read to the host, which waits for queued work), with an automatic number
// of bins (the square root of the count of finite values, between 10 and
// 100). It panics with the tensor's own error on a released tensor.
func Histogram(t *tensor.Tensor) *Chart { return HistogramBins(t, 0) }

// HistogramBins is Histogram with bins bins (0 for automatic).
func HistogramBins(t *tensor.Tensor, bins int) *Chart {
	c := HistogramOf(t.Float64s(), bins)
	c.fig.title = fmt.Sprintf("%s %v", t.DType(), t.Shape())
	return c
}

// HistogramOf returns a histogram of values in bins equal bins over their
// finite range (0 bins: automatic, as Histogram). Values that are not
// finite are left out, and the chart says how many. It panics with a
// *tensor.Error (ErrArgument) for a negative bins.
func HistogramOf(values []float64, bins int) *Chart {
	if bins < 0 {
		panic(vizError("HistogramOf", tensor.ErrArgument, "bins = %d must not be negative", bins))
	}
	var vals []float64
	for _, v := range values {
		if finite(v) {
			vals = append(vals, v)
		}
	}
	f := figure{kind: figureBars, title: "histogram", xLabel: "value", yLabel: "count"}
	if left := len(values) - len(vals); left > 0 {
		f.note = fmt.Sprintf("%d values that are not finite left out.", left)
	}
	if len(vals) > 0 {
		if bins == 0 {
			bins = max(10, min(100, int(math.Sqrt(float64(len(vals))))))
		}
		lo, hi := slices.Min(vals), slices.Max(vals)
		if lo == hi {
			lo, hi = lo-0.5, hi+0.5
		}
		width := (hi - lo) / float64(bins)
		f.counts = make([]float64, bins)
		for _, v := range vals {
			f.counts[min(bins-1, int((v-lo)/width))]++
		}
		f.edges = make([]float64, bins+1)
		for i := range f.edges {
			f.edges[i] = lo + float64(i)*width
		}
		f.edges[bins] = hi
		for i := range bins {
			f.categories = append(f.categories, formatNumber(roundTo(f.edges[i], width))+"…"+formatNumber(roundTo(f.edges[i+1], width)))
		}
	}
	return newChart("histogram", f)
}

// roundTo rounds v to about three significant digits of step, so that bin
// labels stay short.
func roundTo(v, step float64) float64 {
	if step <= 0 || !finite(step) {
		return v
	}
	q := math.Pow(10, math.Floor(math.Log10(step))-2)
	return math.Round(v/q) * q
}

// Heatmap returns a heat map of a 2-D tensor (row 0 at the top), with each
// cell's value written on it when there are at most 20×20 cells. It panics
// with a *tensor.Error (ErrShape) when t is not 2-D.
func Heatmap(t *tensor.Tensor) *Chart {
	shape := t.Shape()
	if len(shape) != 2 {
		panic(vizError("Heatmap", tensor.ErrShape, "tensor of shape %v is not 2-D", shape))
	}
	vals := t.Float64s()
	rows := make([][]float64, shape[0])
	for r := range rows {
		rows[r] = vals[r*shape[1] : (r+1)*shape[1]]
	}
	c := HeatmapRows(rows)
	c.fig.title = fmt.Sprintf("%s %v", t.DType(), shape)
	return c
}

// HeatmapRows returns a heat map of rows (rows[r][c], row 0 at the top);
// rows may differ in length (missing cells are blank). Columns and rows are
// labelled with their indices.
func HeatmapRows(rows [][]float64) *Chart {
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	f := figure{kind: figureHeatmap, title: "heat map", xLabel: "column", yLabel: "row",
		xCategories: indexNames(cols), yCategories: indexNames(len(rows)), cellValues: len(rows) <= 20 && cols <= 20}
	for _, r := range rows {
		row := make([]float64, cols)
		copy(row, r)
		for i := len(r); i < cols; i++ {
			row[i] = math.NaN()
		}
		f.cells = append(f.cells, row)
	}
	return newChart("heatmap", f)
}

func indexNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// ConfusionMatrix returns the heat map of a confusion matrix: rows are
// true classes, columns predicted ones, each cell its count. classNames
// label the classes (by index where there are fewer names than classes).
func ConfusionMatrix(m *metrics.ConfusionMatrix, classNames ...string) *Chart {
	counts := m.Matrix()
	rows := make([][]float64, len(counts))
	for i, r := range counts {
		rows[i] = make([]float64, len(r))
		for j, n := range r {
			rows[i][j] = float64(n)
		}
	}
	return Confusion(rows, classNames...)
}

// Confusion returns the heat map of a confusion matrix given as rows
// (rows[true][predicted]); see ConfusionMatrix. It panics with a
// *tensor.Error (ErrShape) when rows is not square.
func Confusion(rows [][]float64, classNames ...string) *Chart {
	k := len(rows)
	for i, r := range rows {
		if len(r) != k {
			panic(vizError("Confusion", tensor.ErrShape, "row %d has %d values for %d classes", i, len(r), k))
		}
	}
	names := indexNames(k)
	copy(names, classNames)
	f := figure{kind: figureHeatmap, title: "confusion matrix", xLabel: "predicted", yLabel: "true",
		xCategories: names, yCategories: names, cellValues: k <= 20, integerCells: true}
	for _, r := range rows {
		f.cells = append(f.cells, clone(r))
	}
	var total, trace float64
	for i, r := range rows {
		for j, v := range r {
			if finite(v) {
				total += v
				if i == j {
					trace += v
				}
			}
		}
	}
	if total > 0 {
		f.title = fmt.Sprintf("confusion matrix (accuracy %.4g)", trace/total)
	}
	return newChart("confusion", f)
}

package viz

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// Thin returns at most maxPoints of the points (xs[i], ys[i]), in order,
// keeping the shape of the curve: the first and last points, and in each of
// (maxPoints-2)/2 buckets of consecutive points the lowest and the highest
// (so spikes and dips survive, as they would not with a stride). Points are
// returned as they are when there are no more than maxPoints, or when
// maxPoints is below 4 (then every point is kept as well; thinning to so
// few would lie). A bucket whose values are all missing (NaN) keeps its
// first point, so that gaps stay gaps. It panics with a *tensor.Error
// (ErrShape) when xs and ys differ in length.
func Thin(xs, ys []float64, maxPoints int) (thinXs, thinYs []float64) {
	if len(xs) != len(ys) {
		panic(vizError("Thin", tensor.ErrShape, "%d x values for %d y values", len(xs), len(ys)))
	}
	n := len(ys)
	if n <= maxPoints || maxPoints < 4 {
		return clone(xs), clone(ys)
	}
	buckets := (maxPoints - 2) / 2
	inner := n - 2
	thinXs = make([]float64, 0, maxPoints)
	thinYs = make([]float64, 0, maxPoints)
	keep := func(i int) { thinXs, thinYs = append(thinXs, xs[i]), append(thinYs, ys[i]) }
	keep(0)
	for b := range buckets {
		lo := 1 + b*inner/buckets
		hi := 1 + (b+1)*inner/buckets
		if lo >= hi {
			continue
		}
		iMin, iMax := -1, -1
		for i := lo; i < hi; i++ {
			if math.IsNaN(ys[i]) {
				continue
			}
			if iMin < 0 || ys[i] < ys[iMin] {
				iMin = i
			}
			if iMax < 0 || ys[i] > ys[iMax] {
				iMax = i
			}
		}
		switch {
		case iMin < 0:
			keep(lo)
		case iMin == iMax:
			keep(iMin)
		case iMin < iMax:
			keep(iMin)
			keep(iMax)
		default:
			keep(iMax)
			keep(iMin)
		}
	}
	keep(n - 1)
	return thinXs, thinYs
}

// Smooth returns the exponential moving average of ys with weight w in
// [0, 1) (TensorBoard's smoothing: 0 is none, 0.6 its default, 0.99 very
// smooth), debiased so that the first values are not pulled towards zero.
// Missing values (NaN, ±Inf) stay missing and do not enter the average.
// A w outside [0, 1) is clamped to it.
func Smooth(ys []float64, w float64) []float64 {
	w = max(0, min(w, 0.999))
	out := make([]float64, len(ys))
	avg, weight := 0.0, 0.0
	for i, y := range ys {
		if !finite(y) {
			out[i] = y
			continue
		}
		avg = avg*w + (1-w)*y
		weight = weight*w + (1 - w)
		out[i] = avg / weight
	}
	return out
}

package dashboard

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// bar draws a progress bar of width cells, filled to fraction f (clamped
// to [0, 1]) with eighth-cell precision.
func bar(f float64, width int) string {
	if width <= 0 {
		return ""
	}
	if math.IsNaN(f) || f < 0 {
		f = 0
	}
	f = min(f, 1)
	eighths := int(math.Round(f * float64(width*8)))
	full, part := eighths/8, eighths%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	if part > 0 {
		b.WriteRune([]rune("▏▎▍▌▋▊▉")[part-1])
		full++
	}
	b.WriteString(strings.Repeat("·", width-full))
	return b.String()
}

// blocks are the eighths of a cell, from empty to full.
var blocks = []rune(" ▁▂▃▄▅▆▇█")

// chart draws ys as a block chart height rows tall and width columns
// wide, bottom row last, scaled between the finite minimum and maximum of
// ys. With more values than columns, each column is the mean of a run of
// consecutive values, so the whole series stays visible; with fewer, the
// chart is left-aligned. Non-finite values leave their column empty. It
// also returns the range drawn.
func chart(ys []float64, width, height int) (rows []string, lo, hi float64) {
	if width <= 0 || height <= 0 {
		return nil, 0, 0
	}
	cols := resample(ys, width)
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, y := range cols {
		if !math.IsNaN(y) && !math.IsInf(y, 0) {
			lo, hi = min(lo, y), max(hi, y)
		}
	}
	grid := make([][]rune, height)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", width))
	}
	if lo > hi { // nothing finite
		for r := range grid {
			rows = append(rows, string(grid[r]))
		}
		return rows, math.NaN(), math.NaN()
	}
	for c, y := range cols {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		// The column's height in eighths of a cell; a flat series sits
		// one eighth high, so it is still visible.
		h := 1
		if hi > lo {
			h = 1 + int(math.Round((y-lo)/(hi-lo)*float64(height*8-1)))
		}
		for r := 0; r < height; r++ {
			level := h - (height-1-r)*8 // eighths in row r (0 is the top)
			grid[r][c] = blocks[max(0, min(8, level))]
		}
	}
	for r := range grid {
		rows = append(rows, string(grid[r]))
	}
	return rows, lo, hi
}

// resample returns ys when it fits in n columns, else n means of
// consecutive runs of ys (ignoring non-finite values; a run with none is
// NaN).
func resample(ys []float64, n int) []float64 {
	if len(ys) <= n {
		return ys
	}
	out := make([]float64, n)
	for c := range out {
		a, b := c*len(ys)/n, (c+1)*len(ys)/n
		sum, k := 0.0, 0
		for _, y := range ys[a:b] {
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				sum += y
				k++
			}
		}
		out[c] = math.NaN()
		if k > 0 {
			out[c] = sum / float64(k)
		}
	}
	return out
}

// duration formats d as m:ss, or h:mm:ss from an hour on; a negative or
// unknown duration (NaN seconds) is "--:--".
func duration(seconds float64) string {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) || seconds < 0 {
		return "--:--"
	}
	d := time.Duration(math.Round(seconds)) * time.Second
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// number formats a metric value in at most about 7 characters.
func number(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.4g", x)
}

// rate formats a throughput: whole numbers from 100 on, else 3 digits.
func rate(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return "-"
	}
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

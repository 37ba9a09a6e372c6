package dashboard

import (
	"math"
	"strconv"
	"strings"
)

// point is a value on the loss chart: x in epochs (1.5 is half way
// through the second epoch), y the loss.
type point struct{ x, y float64 }

// axis is a linear range of values with the step between its ticks.
type axis struct{ lo, hi, step float64 }

// yMargin is the part of the data's span left free above and below it.
const yMargin = 0.05

// yAxis returns the chart's vertical range for data between lo and hi:
// linear, widened by yMargin of the span on each side and then out to
// whole ticks of 1, 2 or 5 times a power of ten, about ticks of them (the
// step that wastes the least room, up to ticks+2). It never goes below
// zero for data that does not (a loss), and it depends on nothing but the
// data's range, so a chart redrawn with more data keeps its kind of scale.
// Without finite data (lo > hi, or NaN) it is 0 to 1.
func yAxis(lo, hi float64, ticks int) axis {
	if !finite(lo) || !finite(hi) || lo > hi {
		return axis{0, 1, 0.5}
	}
	ticks = max(2, ticks)
	span := hi - lo
	if span == 0 { // a flat series: a range of its tenth around it
		span = math.Abs(hi) / 10
		if span == 0 {
			span = 1
		}
	}
	a, b := lo-yMargin*span, hi+yMargin*span
	if lo == hi {
		a, b = lo-span, hi+span
	}
	if lo >= 0 && a < 0 {
		a = 0
	}
	coarse := niceStep((b - a) / float64(ticks-1))
	var best axis
	bestSteps := 0.0
	for _, step := range []float64{coarse, smallerNiceStep(coarse)} {
		ax := axis{math.Floor(a/step) * step, math.Ceil(b/step) * step, step}
		steps := math.Round((ax.hi - ax.lo) / step)
		if !(ax.hi > ax.lo) || steps > float64(ticks+1) {
			continue
		}
		target := float64(ticks - 1)
		if best.step == 0 || ax.hi-ax.lo < (best.hi-best.lo)*(1-1e-9) ||
			ax.hi-ax.lo <= (best.hi-best.lo)*(1+1e-9) && math.Abs(steps-target) < math.Abs(bestSteps-target) {
			best, bestSteps = ax, steps
		}
	}
	if best.step == 0 { // the range is too small for float64 steps
		return axis{a, b, b - a}
	}
	return best
}

// niceStep returns the smallest of 1, 2 or 5 times a power of ten that is
// at least x (> 0).
func niceStep(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= x*(1-1e-9) {
			return f * p
		}
	}
	return 10 * p
}

// smallerNiceStep returns the nice step (see niceStep) below step.
func smallerNiceStep(step float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	switch f := step / p; {
	case f > 4.5:
		return 2 * p
	case f > 1.5:
		return p
	}
	return p / 2
}

// tickLabel formats a tick of an axis whose ticks are step apart: with
// the decimals the step needs, or in exponent form for very small or
// large values.
func tickLabel(v, step float64) string {
	if math.Abs(v) < step/2 {
		v = 0 // not -0 or 1e-17 from summing steps
	}
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if decimals > 4 || math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// xExtent is the epochs the chart's horizontal axis spans in a run of
// epochs epochs now in epoch current: the whole run when it has 8 epochs
// or fewer (the curve fills the chart as the run goes on), else 8, 16,
// 32, … epochs, as many as the run has reached, at most the run's.
func xExtent(epochs, current int) float64 {
	if epochs <= 8 {
		return float64(max(1, epochs))
	}
	x := 8
	for x < current && x < epochs {
		x *= 2
	}
	return float64(min(x, epochs))
}

// plot is the loss chart's content.
type plot struct {
	train []point // drawn as a line
	valid []point // drawn as markers
	y     axis
	xMax  float64 // the right end of the x axis, in epochs (from 0)
}

// Chart glyphs.
const (
	validMarker = '●'
	brailleBase = 0x2800
)

// brailleDots are the bits of the dots of a braille cell, by column and
// row (2 × 4 dots a cell).
var brailleDots = [2][4]rune{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}

// draw renders the plot in w columns: rows lines of plot with the y
// labels at their left, the x axis and its labels, rows+2 lines in all,
// none wider than w. The train line is drawn in braille dots (2 × 4 a
// cell), consecutive points joined; a validation point is a marker, over
// the line where they meet. styleTrain and styleValid colour their runs
// of cells.
func (p plot) draw(w, rows int, styleTrain, styleValid func(string) string) []string {
	if rows < 1 || w < 4 {
		return nil
	}
	// The y labels, by row: the ticks from the top down, each in the row
	// its value falls in, one per row.
	labels := make([]string, rows)
	dotRows := 4 * rows
	yDot := func(y float64) int {
		f := (p.y.hi - y) / (p.y.hi - p.y.lo) * float64(dotRows-1)
		return max(0, min(dotRows-1, int(math.Round(f))))
	}
	labelWidth := 1
	if p.y.step > 0 {
		for i := 0; ; i++ {
			v := p.y.hi - float64(i)*p.y.step
			if v < p.y.lo-p.y.step/2 || i > 1000 {
				break
			}
			if r := yDot(v) / 4; labels[r] == "" {
				labels[r] = tickLabel(v, p.y.step)
				labelWidth = max(labelWidth, len(labels[r]))
			}
		}
	}
	width := w - labelWidth - 1 // cells of plot
	if width < 2 {
		return nil
	}
	dotCols := 2 * width
	xDot := func(x float64) int {
		f := x / p.xMax * float64(dotCols-1)
		return max(0, min(dotCols-1, int(math.Round(f))))
	}

	dots := make([][]rune, rows) // braille bits by cell
	marks := make([][]bool, rows)
	for r := range dots {
		dots[r] = make([]rune, width)
		marks[r] = make([]bool, width)
	}
	set := func(x, y int) { dots[y/4][x/2] |= brailleDots[x%2][y%4] }
	prevX, prevY, have := 0, 0, false
	for _, pt := range p.train {
		if !finite(pt.x) || !finite(pt.y) {
			have = false // a gap
			continue
		}
		x, y := xDot(pt.x), yDot(pt.y)
		if have {
			line(prevX, prevY, x, y, set)
		} else {
			set(x, y)
		}
		prevX, prevY, have = x, y, true
	}
	for _, pt := range p.valid {
		if finite(pt.x) && finite(pt.y) {
			marks[yDot(pt.y)/4][xDot(pt.x)/2] = true
		}
	}

	out := make([]string, 0, rows+2)
	for r := range rows {
		var b strings.Builder
		b.WriteString(strings.Repeat(" ", labelWidth-len(labels[r])) + labels[r])
		if labels[r] != "" {
			b.WriteRune('┤')
		} else {
			b.WriteRune('│')
		}
		// Runs of cells of one kind, so that each run is styled once.
		var run []rune
		kind := 0 // 0 blank, 1 train, 2 valid
		flush := func() {
			switch kind {
			case 1:
				b.WriteString(styleTrain(string(run)))
			case 2:
				b.WriteString(styleValid(string(run)))
			default:
				b.WriteString(string(run))
			}
			run = run[:0]
		}
		for c := range width {
			k, ch := 0, ' '
			switch {
			case marks[r][c]:
				k, ch = 2, validMarker
			case dots[r][c] != 0:
				k, ch = 1, brailleBase+dots[r][c]
			}
			if k != kind {
				flush()
				kind = k
			}
			run = append(run, ch)
		}
		flush()
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return append(out, p.xAxis(labelWidth, width)...)
}

// xAxis is the x axis under a plot of width cells after a label column of
// labelWidth: the axis with a tick at whole multiples of a step of
// epochs, and their labels.
func (p plot) xAxis(labelWidth, width int) []string {
	const spacing = 10 // cells from one tick to the next, at least
	step := niceStep(spacing * p.xMax / float64(width))
	axisLine := []rune(strings.Repeat("─", width))
	labelLine := []rune(strings.Repeat(" ", width))
	cell := func(x float64) int {
		return max(0, min(width-1, int(math.Round(x/p.xMax*float64(2*width-1)))/2))
	}
	free := 0 // the first cell a label may take
	for i := 0; ; i++ {
		x := float64(i) * step
		if x > p.xMax*(1+1e-9) || i > 1000 {
			break
		}
		c := cell(x)
		axisLine[c] = '┬'
		label := []rune(strconv.FormatFloat(roundTo(x, step), 'f', -1, 64))
		start := max(c-(len(label)-1)/2, 0)
		if start+len(label) > width {
			start = width - len(label)
		}
		if start < free || start < 0 {
			continue
		}
		copy(labelLine[start:], label)
		free = start + len(label) + 1
	}
	pad := strings.Repeat(" ", labelWidth)
	return []string{pad + "└" + string(axisLine), strings.TrimRight(pad+" "+string(labelLine), " ")}
}

// roundTo rounds x to the decimals of step (a nice step), so that 7 × 0.2
// is 1.4 and not 1.4000000000000001.
func roundTo(x, step float64) float64 {
	p := math.Pow(10, max(0, -math.Floor(math.Log10(step)+1e-9)))
	return math.Round(x*p) / p
}

// line calls set for the dots of the line from (x0, y0) to (x1, y1)
// (Bresenham's algorithm).
func line(x0, y0, x1, y1 int, set func(x, y int)) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		set(x0, y0)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// halve returns ps with each pair of consecutive points replaced by their
// mean, keeping the history's shape in half the points.
func halve(ps []point) []point {
	out := make([]point, 0, (len(ps)+1)/2)
	for i := 0; i < len(ps); i += 2 {
		if i+1 == len(ps) {
			out = append(out, ps[i])
			break
		}
		a, b := ps[i], ps[i+1]
		switch {
		case !finite(a.y):
			out = append(out, b)
		case !finite(b.y):
			out = append(out, a)
		default:
			out = append(out, point{(a.x + b.x) / 2, (a.y + b.y) / 2})
		}
	}
	return out
}

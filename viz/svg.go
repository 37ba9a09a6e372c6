package viz

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// svgMaxPoints bounds the points per series an SVG draws; svgMaxCells
// the heat map cells it draws as vectors (more are drawn as an image).
const (
	svgMaxPoints = 2000
	svgMaxCells  = 4096
)

// pxToPt converts CSS pixels (96 per inch) to the points (72 per inch)
// gonum's vg works in, so that an SVG of w×h px displays at that size.
func pxToPt(px int) vg.Length { return vg.Length(float64(px) * 0.75) }

// svg draws the figure with gonum.org/v1/plot at width×height pixels.
func (f *figure) svg(width, height int) string {
	p, err := f.plot()
	if err != nil {
		return errorSVG(width, height, err)
	}
	c := vgsvg.New(pxToPt(width), pxToPt(height))
	if err := drawPlot(p, draw.New(c)); err != nil {
		return errorSVG(width, height, err)
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return errorSVG(width, height, err)
	}
	return b.String()
}

// drawPlot draws p, turning a panic inside gonum (a degenerate range) into
// an error.
func drawPlot(p *plot.Plot, dc draw.Canvas) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	p.Draw(dc)
	return nil
}

// errorSVG is the static rendering of a chart that could not be drawn.
func errorSVG(width, height int, err error) string {
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">`+
		`<text x="10" y="20" font-family="sans-serif" font-size="12">viz: cannot draw: %s</text></svg>`,
		width, height, html.EscapeString(err.Error()))
}

func parseColor(hex string) color.Color {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if len(hex) != 7 || err != nil {
		return color.Black
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

func fade(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	// Blend with white instead of using alpha, which not every SVG viewer
	// composites the same way.
	mix := func(v uint32) uint8 { return uint8((float64(v>>8)*0.3 + 255*0.7)) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

// newPlot returns a plot with the figure's title and labels in a sans-serif
// face.
func (f *figure) newPlot() *plot.Plot {
	p := plot.New()
	p.Title.Text = f.title
	p.X.Label.Text = f.xLabel
	p.Y.Label.Text = f.yLabel
	for _, s := range []*draw.TextStyle{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		s.Font.Variant = "Sans"
	}
	p.Title.Padding = vg.Points(6)
	return p
}

func (f *figure) plot() (*plot.Plot, error) {
	switch f.kind {
	case figureBars:
		return f.barPlot()
	case figureHeatmap:
		return f.heatmapPlot()
	}
	return f.xyPlot()
}

func (f *figure) xyPlot() (*plot.Plot, error) {
	p := f.newPlot()
	if f.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	any := false
	for _, s := range f.series {
		col := parseColor(s.color)
		if s.faded {
			col = fade(col)
		}
		xs, ys := s.xs, s.ys
		if len(ys) > svgMaxPoints {
			// A static picture 1,000 pixels wide shows no more; the
			// extremes of each bucket are kept.
			xs, ys = Thin(xs, ys, svgMaxPoints)
		}
		runs := finiteRuns(xs, ys, f.logY)
		if s.kind == scatterSeries {
			var pts plotter.XYs
			for _, r := range runs {
				pts = append(pts, r...)
			}
			if len(pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(2)
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			p.Add(sc)
			if len(f.series) > 1 {
				p.Legend.Add(s.name, sc)
			}
			any = true
			continue
		}
		var first plot.Thumbnailer
		for _, r := range runs {
			var th plot.Thumbnailer
			if len(r) == 1 { // an isolated point draws as a dot
				sc, err := plotter.NewScatter(r)
				if err != nil {
					return nil, err
				}
				sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = col, vg.Points(2), draw.CircleGlyph{}
				p.Add(sc)
				th = sc
			} else {
				l, err := plotter.NewLine(r)
				if err != nil {
					return nil, err
				}
				l.LineStyle.Color = col
				l.LineStyle.Width = vg.Points(1.5)
				if s.faded {
					l.LineStyle.Width = vg.Points(1)
				}
				p.Add(l)
				th = l
			}
			if first == nil {
				first = th
			}
			any = true
		}
		if first != nil && len(f.series) > 1 && !s.faded {
			p.Legend.Add(s.name, first)
		}
	}
	if !any {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		if f.logY {
			p.Y.Min = 0.1
		}
	}
	if any && f.xRange.ok {
		p.X.Min, p.X.Max = f.xRange.min, f.xRange.max
	}
	if any && f.yRange.ok && !f.logY {
		p.Y.Min, p.Y.Max = f.yRange.min, f.yRange.max
	}
	if f.xInt {
		p.X.Tick.Marker = integerTicks{}
	}
	return p, nil
}

// finiteRuns splits a series into runs of consecutive drawable points, so
// that a missing value leaves a gap as it does in the echarts chart.
func finiteRuns(xs, ys []float64, logY bool) []plotter.XYs {
	var runs []plotter.XYs
	var cur plotter.XYs
	for i, y := range ys {
		if !finite(xs[i]) || !finite(y) || (logY && y <= 0) {
			if len(cur) > 0 {
				runs = append(runs, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: xs[i], Y: y})
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// integerTicks are gonum's default ticks without the fractional ones.
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Value == math.Trunc(t.Value) {
			out = append(out, t)
		}
	}
	return out
}

func (f *figure) barPlot() (*plot.Plot, error) {
	p := f.newPlot()
	col := parseColor(palette[0])
	if len(f.counts) == 0 {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		return p, nil
	}
	if len(f.edges) == len(f.counts)+1 {
		h := &plotter.Histogram{FillColor: col, LineStyle: draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}}
		for i, n := range f.counts {
			h.Bins = append(h.Bins, plotter.HistogramBin{Min: f.edges[i], Max: f.edges[i+1], Weight: n})
		}
		h.Width = f.edges[1] - f.edges[0]
		p.Add(h)
		return p, nil
	}
	bars, err := plotter.NewBarChart(plotter.Values(f.counts), vg.Points(max(2, 400/float64(len(f.counts)))))
	if err != nil {
		return nil, err
	}
	bars.Color = col
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(f.categories...)
	return p, nil
}

// grid adapts a figure's cells to plotter.GridXYZ, row 0 at the top.
type grid struct{ f *figure }

func (g grid) Dims() (c, r int) { return len(g.f.xCategories), len(g.f.cells) }
func (g grid) Z(c, r int) float64 {
	row := g.f.cells[len(g.f.cells)-1-r]
	if c >= len(row) {
		return math.NaN()
	}
	return row[c]
}
func (g grid) X(c int) float64 { return float64(c) }
func (g grid) Y(r int) float64 { return float64(r) }

// blues is a sequential palette from near white to dark blue (the echarts
// heat map uses the same three stops).
type blues struct{}

func (blues) Colors() []color.Color {
	stops := []color.RGBA{{0xf7, 0xfb, 0xff, 255}, {0x6b, 0xae, 0xd6, 255}, {0x08, 0x30, 0x6b, 255}}
	const n = 64
	out := make([]color.Color, n)
	for i := range out {
		t := float64(i) / (n - 1) * 2
		k := min(int(t), 1)
		u := t - float64(k)
		a, b := stops[k], stops[k+1]
		mix := func(x, y uint8) uint8 { return uint8(float64(x)*(1-u) + float64(y)*u) }
		out[i] = color.RGBA{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: 255}
	}
	return out
}

func (f *figure) heatmapPlot() (*plot.Plot, error) {
	p := f.newPlot()
	rows, cols := len(f.cells), len(f.xCategories)
	if rows == 0 || cols == 0 {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		return p, nil
	}
	g := grid{f}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range f.cells {
		for _, v := range row {
			if finite(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	if lo == hi {
		hi = lo + 1
	}
	h := plotter.NewHeatMap(g, blues{})
	h.Min, h.Max = lo, hi
	h.Rasterized = rows*cols > svgMaxCells
	h.NaN = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 255}
	p.Add(h)
	if f.cellValues {
		var lab plotter.XYLabels
		for r := range rows {
			for c := range cols {
				z := g.Z(c, r)
				if !finite(z) {
					continue
				}
				lab.XYs = append(lab.XYs, plotter.XY{X: float64(c), Y: float64(r)})
				lab.Labels = append(lab.Labels, formatNumber(z))
			}
		}
		if len(lab.Labels) > 0 {
			l, err := plotter.NewLabels(lab)
			if err != nil {
				return nil, err
			}
			for i := range l.TextStyle {
				l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
				l.TextStyle[i].Font.Variant = "Sans"
				l.TextStyle[i].Font.Size = vg.Points(9)
				// Dark cells get white text.
				if z := g.Z(int(lab.XYs[i].X), int(lab.XYs[i].Y)); (z-lo)/(hi-lo) > 0.6 {
					l.TextStyle[i].Color = color.White
				}
			}
			p.Add(l)
		}
	}
	p.X.Tick.Marker = categoryTicks(f.xCategories, false)
	p.Y.Tick.Marker = categoryTicks(f.yCategories, true)
	p.X.Min, p.X.Max = -0.5, float64(cols)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(rows)-0.5
	return p, nil
}

// categoryTicks labels integer positions with names (reversed for rows,
// which run top to bottom), at most about 20 of them.
func categoryTicks(names []string, reversed bool) plot.ConstantTicks {
	n := len(names)
	every := max(1, (n+19)/20)
	var ticks plot.ConstantTicks
	for i, name := range names {
		label := ""
		if i%every == 0 {
			label = name
		}
		pos := float64(i)
		if reversed {
			pos = float64(n - 1 - i)
		}
		ticks = append(ticks, plot.Tick{Value: pos, Label: label})
	}
	return ticks
}

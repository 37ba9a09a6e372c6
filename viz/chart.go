package viz

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// Default chart size in CSS pixels.
const (
	DefaultWidth  = 720
	DefaultHeight = 360
)

// palette is echarts' default series palette; both renderings use it so
// that a series has the same colour in the chart and in its SVG.
var palette = []string{"#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc"}

type figureKind int

const (
	figureXY      figureKind = iota // lines and scatter plots over two value axes
	figureBars                      // one bar per category (histograms)
	figureHeatmap                   // a matrix of cells
)

type seriesKind int

const (
	lineSeries seriesKind = iota
	scatterSeries
)

// series is one named sequence of points.
type series struct {
	name   string
	kind   seriesKind
	xs, ys []float64
	color  string
	faded  bool // drawn light, under a smoothed copy
}

// figure is what a Chart draws, independent of the renderer: the echarts
// option (option.go) and the SVG (svg.go) are both made from it.
type figure struct {
	kind                  figureKind
	title, xLabel, yLabel string
	logY                  bool
	xInt                  bool      // x values are integers (steps, epochs)
	xRange, yRange        axisRange // fixed axis bounds (fitAxis), where ok

	series []series // figureXY

	categories []string  // figureBars: one per bar
	counts     []float64 // figureBars
	edges      []float64 // figureBars from a histogram: len(counts)+1 bin edges

	cells        [][]float64 // figureHeatmap: cells[row][column]
	xCategories  []string    // figureHeatmap column names
	yCategories  []string    // figureHeatmap row names
	cellValues   bool        // write each cell's value on it
	integerCells bool        // cell values are counts

	note string // shown under the chart (e.g. values left out)
}

// Chart is one chart: it renders as a self-contained HTML fragment (an
// interactive echarts chart, the library embedded in the binary), as SVG
// (a static rendering for places that run no scripts) and as the echarts
// option in JSON. In a notebook, a Chart that is a cell's last expression
// shows itself through MIME.
//
// The Set methods change the chart and return it, for chaining. A Chart
// is not safe for concurrent use.
type Chart struct {
	key           string
	fig           figure
	width, height int
}

func newChart(key string, fig figure) *Chart {
	for i := range fig.series {
		if fig.series[i].color == "" {
			fig.series[i].color = palette[i%len(palette)]
		}
	}
	return &Chart{key: key, fig: fig, width: DefaultWidth, height: DefaultHeight}
}

// Key returns the chart's stable name within a Board or a dashboard: the
// metric it plots ("loss", "accuracy"), "lr", "throughput", "system",
// "confusion", or the kind of plot ("line", "histogram").
func (c *Chart) Key() string { return c.key }

// Title returns the chart's title.
func (c *Chart) Title() string { return c.fig.title }

// SetTitle sets the title shown above the chart.
func (c *Chart) SetTitle(title string) *Chart { c.fig.title = title; return c }

// SetLabels names the x and y axes.
func (c *Chart) SetLabels(x, y string) *Chart { c.fig.xLabel, c.fig.yLabel = x, y; return c }

// SetSize sets the chart's size in CSS pixels; values below 100 are raised to 100.
func (c *Chart) SetSize(width, height int) *Chart {
	c.width, c.height = max(width, 100), max(height, 100)
	return c
}

// Size returns the chart's width and height in CSS pixels.
func (c *Chart) Size() (width, height int) { return c.width, c.height }

// SetLogY makes the y axis logarithmic (for line and scatter charts; the
// static rendering then leaves out values that are not positive).
func (c *Chart) SetLogY(on bool) *Chart { c.fig.logY = on; return c }

// SetNames renames the chart's series in order (extra names are ignored).
func (c *Chart) SetNames(names ...string) *Chart {
	for i := range min(len(names), len(c.fig.series)) {
		c.fig.series[i].name = names[i]
	}
	return c
}

// AddLine adds a line series to a line or scatter chart. It panics with a
// *tensor.Error (ErrShape) when xs and ys differ in length, and
// (ErrArgument) on a histogram or heat map.
func (c *Chart) AddLine(name string, xs, ys []float64) *Chart {
	return c.add("Chart.AddLine", lineSeries, name, xs, ys)
}

// AddScatter adds a scatter series (points, no line) to a line or scatter
// chart; it panics as AddLine does.
func (c *Chart) AddScatter(name string, xs, ys []float64) *Chart {
	return c.add("Chart.AddScatter", scatterSeries, name, xs, ys)
}

func (c *Chart) add(op string, kind seriesKind, name string, xs, ys []float64) *Chart {
	if c.fig.kind != figureXY {
		panic(vizError(op, tensor.ErrArgument, "chart %q is not a line or scatter chart", c.key))
	}
	xs = xValues(op, xs, len(ys))
	c.fig.series = append(c.fig.series, series{name: name, kind: kind, xs: xs, ys: clone(ys),
		color: palette[len(c.fig.series)%len(palette)]})
	return c
}

// SeriesNames returns the names of the chart's series (for a histogram,
// "count"; for a heat map, "cells").
func (c *Chart) SeriesNames() []string {
	switch c.fig.kind {
	case figureBars:
		return []string{"count"}
	case figureHeatmap:
		return []string{"cells"}
	}
	out := make([]string, len(c.fig.series))
	for i, s := range c.fig.series {
		out[i] = s.name
	}
	return out
}

// Points returns the number of data points the chart holds, over all
// series (bars for a histogram, cells for a heat map).
func (c *Chart) Points() int {
	switch c.fig.kind {
	case figureBars:
		return len(c.fig.counts)
	case figureHeatmap:
		n := 0
		for _, r := range c.fig.cells {
			n += len(r)
		}
		return n
	}
	n := 0
	for _, s := range c.fig.series {
		n += len(s.ys)
	}
	return n
}

// String describes the chart in one line (its text/plain rendering).
func (c *Chart) String() string {
	title := c.fig.title
	if title == "" {
		title = c.key
	}
	switch c.fig.kind {
	case figureBars:
		return fmt.Sprintf("chart %q: %d bars", title, len(c.fig.counts))
	case figureHeatmap:
		return fmt.Sprintf("chart %q: %d×%d heat map", title, len(c.fig.yCategories), len(c.fig.xCategories))
	}
	return fmt.Sprintf("chart %q: %d series (%s), %d points", title, len(c.fig.series),
		strings.Join(c.SeriesNames(), ", "), c.Points())
}

// Option returns the chart's echarts option as JSON (built with
// go-echarts): what a page passes to setOption, e.g. to replace a chart's
// data without re-rendering its fragment. Values that are not finite are
// written as null (a gap in the line).
func (c *Chart) Option() ([]byte, error) {
	b, err := json.Marshal(c.fig.option())
	if err != nil {
		return nil, fmt.Errorf("viz: chart %q: %w", c.key, err)
	}
	return b, nil
}

// SVG returns the chart's static rendering, drawn with gonum.org/v1/plot.
// If drawing fails the SVG says why.
func (c *Chart) SVG() string { return c.fig.svg(c.width, c.height) }

// HTML returns the chart as a self-contained HTML fragment: the echarts
// library inline (about 1 MB), the chart, and the static SVG shown until
// the chart draws (and kept where scripts do not run). Use a Session to
// send the library once per page.
func (c *Chart) HTML() string { return NewSession().Fragment(c) }

// MIME returns the chart's display bundle: text/html (HTML), image/svg+xml
// (SVG) and text/plain (String).
func (c *Chart) MIME() map[string]string { return NewSession().Render(c) }

// Bundle implements Visual: the display bundle with the HTML made by s.
func (c *Chart) Bundle(s *Session) map[string]string {
	if s == nil {
		s = NewSession()
	}
	svg := c.SVG()
	return map[string]string{mimeHTML: c.fragment(s, svg), mimeSVG: svg, mimePlain: c.String()}
}

func (c *Chart) fragment(s *Session, svg string) string {
	return s.chartBlock(c.fig.title, c.width, c.height, c.fig.option(), svg, c.fig.note)
}

// clone returns a deep enough copy of c for thinning: series slices are
// shared until replaced.
func (c *Chart) clone() *Chart {
	d := *c
	d.fig.series = append([]series(nil), c.fig.series...)
	return &d
}

// thinned returns a copy of c whose series hold at most maxPoints points
// each (Thin); c itself when none is longer.
func (c *Chart) thinned(maxPoints int) *Chart {
	if maxPoints <= 0 || c.fig.kind != figureXY {
		return c
	}
	var d *Chart
	for i, s := range c.fig.series {
		if len(s.ys) <= maxPoints {
			continue
		}
		if d == nil {
			d = c.clone()
		}
		d.fig.series[i].xs, d.fig.series[i].ys = Thin(s.xs, s.ys, maxPoints)
	}
	if d == nil {
		return c
	}
	return d
}

// vizError returns the panic value of a viz function called with bad
// arguments: a *tensor.Error, so that tensor.Try catches it.
func vizError(op string, kind error, format string, args ...any) *tensor.Error {
	return &tensor.Error{Op: "viz." + op, Msg: fmt.Sprintf(format, args...), Err: kind}
}

// xValues returns xs checked against n values, or 0…n-1 when xs is nil.
func xValues(op string, xs []float64, n int) []float64 {
	if xs == nil {
		xs = make([]float64, n)
		for i := range xs {
			xs[i] = float64(i)
		}
		return xs
	}
	if len(xs) != n {
		panic(vizError(op, tensor.ErrShape, "%d x values for %d y values", len(xs), n))
	}
	return clone(xs)
}

func clone(v []float64) []float64 { return append([]float64(nil), v...) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

const (
	mimeHTML  = "text/html"
	mimeSVG   = "image/svg+xml"
	mimePlain = "text/plain"
)

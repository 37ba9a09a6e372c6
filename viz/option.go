package viz

import (
	"math"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"
)

// assetsHost replaces go-echarts' default asset host (a CDN): viz never
// lets go-echarts write a page or a <script src>, it only asks it for the
// option, but a chart built here must not even hold a URL.
const assetsHost = "kiln-embedded/"

// baseOptions are the global options every chart shares; right is the
// grid's right margin in pixels.
func baseOptions(f *figure, right string) []charts.GlobalOpts {
	return []charts.GlobalOpts{
		charts.WithInitializationOpts(opts.Initialization{AssetsHost: assetsHost}),
		charts.WithAnimation(false), // live updates replace the data several times a second
		charts.WithTitleOpts(opts.Title{Title: f.title, Left: "center"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(f.kind == figureXY && len(f.series) > 1), Top: "25", Type: "scroll"}),
		charts.WithGridOpts(opts.Grid{Left: "60", Right: right, Top: "60", Bottom: "50", ContainLabel: opts.Bool(true)}),
	}
}

// finish strips go-echarts' preset script assets (the CDN URL of
// echarts.min.js) and returns the option object.
func finish(bc *charts.BaseConfiguration, validate func()) map[string]any {
	bc.ClearPresetJSAssets()
	validate()
	bc.ClearPresetJSAssets()
	return bc.JSON()
}

// option returns the figure's echarts option, built with go-echarts.
func (f *figure) option() map[string]any {
	switch f.kind {
	case figureBars:
		return f.barOption()
	case figureHeatmap:
		return f.heatmapOption()
	}
	return f.xyOption()
}

func (f *figure) xyOption() map[string]any {
	c := charts.NewLine()
	yType := "value"
	if f.logY {
		yType = "log"
	}
	x := opts.XAxis{Type: "value", Name: f.xLabel, NameLocation: "middle", NameGap: 28,
		Scale: opts.Bool(true), MinInterval: xMinInterval(f)}
	if f.xRange.ok {
		x.Min, x.Max = f.xRange.min, f.xRange.max
		if s := f.xRange.step; s > 0 {
			x.MinInterval, x.MaxInterval = s, s
			// echarts labels the bounds too: a last step that is not on
			// a tick would crowd the tick before it ("400427").
			if math.Mod(f.xRange.max, s) != 0 {
				x.AxisLabel = &opts.AxisLabel{ShowMaxLabel: opts.Bool(false)}
			}
		}
	}
	y := opts.YAxis{Type: yType, Name: f.yLabel, Scale: opts.Bool(true)}
	if f.yRange.ok && !f.logY {
		// Ticks at the fitted step, from the bound: echarts' own choice
		// may not divide the range (0.51, 0.54, … on [0.5, 0.7]).
		y.Min, y.Max, y.MinInterval, y.MaxInterval = f.yRange.min, f.yRange.max, f.yRange.step, f.yRange.step
	}
	global := append(baseOptions(f, "30"),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithXAxisOpts(x),
		charts.WithYAxisOpts(y),
	)
	c.SetGlobalOptions(global...)
	for _, s := range f.series {
		data := xyData(s.xs, s.ys, f.logY)
		style := opts.LineStyle{Color: s.color, Width: 2}
		if s.faded {
			style.Opacity = opts.Float(0.25)
			style.Width = 1
		}
		so := []charts.SeriesOpts{
			// [[x, y], …] instead of go-echarts' {"value": [x, y]}
			// objects: a third of the size, for the same chart.
			charts.WithSeriesOpts(func(ss *charts.SingleSeries) { ss.Data = data }),
			charts.WithLineStyleOpts(style),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: s.color}),
		}
		if s.kind == scatterSeries {
			so = append(so, charts.WithSeriesOpts(func(ss *charts.SingleSeries) {
				ss.Type = types.ChartScatter
				ss.SymbolSize = 6
			}))
		} else {
			// Symbols only where there are few points (epoch values).
			so = append(so, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(data) <= 60),
				Symbol: "circle", SymbolSize: 5}))
		}
		c.AddSeries(s.name, nil, so...)
	}
	return finish(&c.BaseConfiguration, c.Validate)
}

// xyData returns a series' points as echarts' [x, y] pairs, a missing
// value (or, on a log axis, one that is not positive) as null: a gap.
func xyData(xs, ys []float64, logY bool) [][2]any {
	data := make([][2]any, 0, len(ys))
	for i, y := range ys {
		x := xs[i]
		if !finite(x) {
			continue
		}
		var v any = y
		if !finite(y) || (logY && y <= 0) {
			v = nil
		}
		data = append(data, [2]any{x, v})
	}
	return data
}

// xMinInterval keeps integer axes (steps, epochs) from showing fractions.
func xMinInterval(f *figure) float64 {
	if f.xInt {
		return 1
	}
	return 0
}

func (f *figure) barOption() map[string]any {
	c := charts.NewBar()
	global := append(baseOptions(f, "30"),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: f.xLabel, NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: f.yLabel}),
	)
	c.SetGlobalOptions(global...)
	c.SetXAxis(f.categories)
	data := make([]opts.BarData, len(f.counts))
	for i, n := range f.counts {
		data[i] = opts.BarData{Value: n}
	}
	c.AddSeries("count", data,
		charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]}),
		charts.WithSeriesOpts(func(s *charts.SingleSeries) { s.BarCategoryGap = "2%" }))
	return finish(&c.BaseConfiguration, c.Validate)
}

func (f *figure) heatmapOption() map[string]any {
	c := charts.NewHeatMap()
	lo, hi := math.Inf(1), math.Inf(-1)
	// [column, row, value] triples, not go-echarts' {"value": […]}
	// objects: a third of the size.
	var data [][3]any
	for r, row := range f.cells {
		for col, v := range row {
			var value any = v
			if !finite(v) {
				value = nil
			} else {
				lo, hi = min(lo, v), max(hi, v)
			}
			data = append(data, [3]any{col, r, value})
		}
	}
	if f.integerCells {
		lo = min(lo, 0) // counts: zero is the palette's white
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	global := append(baseOptions(f, "90"),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: f.xLabel, NameLocation: "middle", NameGap: 28,
			Data: f.xCategories, SplitArea: &opts.SplitArea{Show: opts.Bool(true)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Name: f.yLabel, Data: f.yCategories,
			NameLocation: "start", // the top, on an inverted axis
			Inverse:      opts.Bool(true), SplitArea: &opts.SplitArea{Show: opts.Bool(true)}}),
		charts.WithVisualMapOpts(opts.VisualMap{Calculable: opts.Bool(true), Min: float32(lo), Max: float32(hi),
			Orient: "vertical", Right: "0", Top: "center",
			InRange: &opts.VisualMapInRange{Color: []string{"#f7fbff", "#6baed6", "#08306b"}}}),
	)
	c.SetGlobalOptions(global...)
	c.AddSeries("cells", nil, charts.WithLabelOpts(opts.Label{Show: opts.Bool(f.cellValues)}),
		charts.WithSeriesOpts(func(s *charts.SingleSeries) { s.Data = data }))
	return finish(&c.BaseConfiguration, c.Validate)
}

// formatNumber formats a value for a label: integers plainly, others with
// four significant digits.
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

package viz

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

func TestChartOptions(t *testing.T) {
	events := syntheticRun(200, 5, 50)
	cases := []struct {
		name    string
		chart   func() *Chart
		series  []string
		lengths []int
		check   func(t *testing.T, opt map[string]any)
	}{
		{name: "line with default xs", chart: func() *Chart { return Line(nil, []float64{1, 2, 3}, []float64{3, 2, 1}) },
			series: []string{"y1", "y2"}, lengths: []int{3, 3},
			check: func(t *testing.T, opt map[string]any) {
				data := opt["series"].([]any)[1].(map[string]any)["data"].([]any)
				if p := data[2].([]any); p[0] != 2.0 || p[1] != 1.0 {
					t.Errorf("point 2 of y2 = %v, want [2 1]", p)
				}
			}},
		{name: "line renamed", chart: func() *Chart { return Line([]float64{0, 1}, []float64{1, 2}).SetNames("loss") },
			series: []string{"loss"}, lengths: []int{2}},
		{name: "missing values become null", chart: func() *Chart {
			return Line(nil, []float64{1, math.NaN(), math.Inf(1), 4})
		}, series: []string{"y"}, lengths: []int{4},
			check: func(t *testing.T, opt map[string]any) {
				data := opt["series"].([]any)[0].(map[string]any)["data"].([]any)
				if data[1].([]any)[1] != nil || data[2].([]any)[1] != nil {
					t.Errorf("non-finite values not null: %v", data)
				}
			}},
		{name: "scatter with a fitted line", chart: func() *Chart {
			return Scatter([]float64{0, 1, 2}, []float64{0, 1.1, 1.9}).AddLine("fit", []float64{0, 2}, []float64{0, 2})
		}, series: []string{"y", "fit"}, lengths: []int{3, 2},
			check: func(t *testing.T, opt map[string]any) {
				types := []string{}
				for _, s := range opt["series"].([]any) {
					types = append(types, s.(map[string]any)["type"].(string))
				}
				if !slices.Equal(types, []string{"scatter", "line"}) {
					t.Errorf("series types %v", types)
				}
			}},
		{name: "log axis", chart: func() *Chart { return Line(nil, []float64{1, 10, 100}).SetLogY(true) },
			series: []string{"y"}, lengths: []int{3},
			check: func(t *testing.T, opt map[string]any) {
				if ty := opt["yAxis"].([]any)[0].(map[string]any)["type"]; ty != "log" {
					t.Errorf("y axis type %v", ty)
				}
			}},
		{name: "histogram of values", chart: func() *Chart { return HistogramOf([]float64{1, 2, 2, 3, math.NaN()}, 4) },
			series: []string{"count"}, lengths: []int{4},
			check: func(t *testing.T, opt map[string]any) {
				var counts []float64
				for _, d := range opt["series"].([]any)[0].(map[string]any)["data"].([]any) {
					counts = append(counts, d.(map[string]any)["value"].(float64))
				}
				if !slices.Equal(counts, []float64{1, 0, 2, 1}) {
					t.Errorf("counts %v, want [1 0 2 1]", counts)
				}
			}},
		{name: "confusion matrix", chart: func() *Chart { return Confusion([][]float64{{5, 1}, {2, 7}}, "cat", "dog") },
			series: []string{"cells"}, lengths: []int{4},
			check: func(t *testing.T, opt map[string]any) {
				x := opt["xAxis"].([]any)[0].(map[string]any)
				if x["name"] != "predicted" || !slices.Equal(x["data"].([]any), []any{"cat", "dog"}) {
					t.Errorf("x axis %v", x)
				}
				vm := opt["visualMap"].([]any)[0].(map[string]any)
				if vm["max"] != 7.0 || vm["min"] != nil { // min 0 is omitted
					t.Errorf("visual map %v", vm)
				}
				title := opt["title"].(map[string]any)["text"].(string)
				if !strings.Contains(title, "0.8") {
					t.Errorf("title %q lacks the accuracy 12/15", title)
				}
			}},
		{name: "curve per step with epochs", chart: func() *Chart { return Curve(events, "loss", CurveOptions{}) },
			series: []string{"train", "train (epoch)", "valid"}, lengths: []int{40, 4, 4}},
		{name: "curve smoothed", chart: func() *Chart { return Curve(events, "loss", CurveOptions{Smoothing: 0.9}) },
			series: []string{"train (raw)", "train", "train (epoch)", "valid"}, lengths: []int{40, 40, 4, 4}},
		{name: "curve per epoch", chart: func() *Chart { return Curve(events, "accuracy", CurveOptions{X: "epoch"}) },
			series: []string{"train", "valid"}, lengths: []int{4, 4},
			check: func(t *testing.T, opt map[string]any) {
				data := opt["series"].([]any)[1].(map[string]any)["data"].([]any)
				if x := data[3].([]any)[0]; x != 4.0 {
					t.Errorf("last valid x = %v, want epoch 4", x)
				}
			}},
		{name: "curve thinned", chart: func() *Chart { return Curve(events, "loss", CurveOptions{MaxPoints: 10}) },
			series: []string{"train", "train (epoch)", "valid"}, lengths: []int{10, 4, 4}},
		{name: "learning rate", chart: func() *Chart { return LearningRate(events, CurveOptions{}) },
			series: []string{"lr"}, lengths: []int{40}},
		{name: "throughput from items_per_sec", chart: func() *Chart { return Throughput(events, CurveOptions{}) },
			series: []string{"items/s"}, lengths: []int{40}},
		{name: "system usage", chart: func() *Chart { return SystemUsage(events, CurveOptions{}) },
			series: []string{"cpu"}, lengths: []int{40}},
		{name: "confusion from the last valid epoch", chart: func() *Chart { return ConfusionFromEvent(events[len(events)-2]) },
			series: []string{"cells"}, lengths: []int{9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := c.chart()
			opt := optionOf(t, ch)
			names, lengths := seriesLengths(t, opt)
			if !slices.Equal(names, c.series) || !slices.Equal(lengths, c.lengths) {
				t.Fatalf("series %q with %v points, want %q with %v", names, lengths, c.series, c.lengths)
			}
			if !slices.Equal(ch.SeriesNames(), c.series) {
				t.Errorf("SeriesNames() = %q", ch.SeriesNames())
			}
			if c.check != nil {
				c.check(t, opt)
			}
			svg := ch.SVG()
			if !strings.Contains(svg, "<svg") || strings.Contains(svg, "cannot draw") {
				t.Errorf("SVG: %.300s", svg)
			}
		})
	}
}

func TestThroughputFromStepTimes(t *testing.T) {
	var evs []train.Event
	for _, e := range syntheticRun(100, 10, 1000) {
		delete(e.Metrics, "items_per_sec")
		evs = append(evs, e)
	}
	c := Throughput(evs, CurveOptions{})
	names, lengths := seriesLengths(t, optionOf(t, c))
	if !slices.Equal(names, []string{"steps/s"}) || lengths[0] != 9 {
		t.Fatalf("series %v %v, want steps/s with 9 points", names, lengths)
	}
	for _, y := range c.fig.series[0].ys {
		if math.Abs(y-100) > 1e-6 { // 10 steps every 0.1 s
			t.Fatalf("steps/s %v, want 100", c.fig.series[0].ys)
		}
	}
}

func TestChartBadInput(t *testing.T) {
	cases := []struct {
		name string
		call func()
		kind error
		op   string
	}{
		{"line lengths differ", func() { Line([]float64{1, 2}, []float64{1}) }, tensor.ErrShape, "viz.Line"},
		{"scatter lengths differ", func() { Scatter([]float64{1}, []float64{1, 2}) }, tensor.ErrShape, "viz.Scatter"},
		{"add line to a histogram", func() { HistogramOf([]float64{1}, 0).AddLine("x", nil, []float64{1}) }, tensor.ErrArgument, "viz.Chart.AddLine"},
		{"negative bins", func() { HistogramOf([]float64{1}, -1) }, tensor.ErrArgument, "viz.HistogramOf"},
		{"confusion not square", func() { Confusion([][]float64{{1, 2}}) }, tensor.ErrShape, "viz.Confusion"},
		{"thin lengths differ", func() { Thin([]float64{1}, nil, 10) }, tensor.ErrShape, "viz.Thin"},
		{"heatmap of a 1-D tensor", func() { Heatmap(tensor.FromFloat64s(tensor.CPU(), []float64{1, 2}, 2)) }, tensor.ErrShape, "viz.Heatmap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Try(c.call)
			var te *tensor.Error
			if !errors.As(err, &te) || !errors.Is(err, c.kind) || te.Op != c.op {
				t.Fatalf("got %v, want a %v error from %s", err, c.kind, c.op)
			}
		})
	}
}

func TestTensorCharts(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromFloat64s(dev, []float64{0, 1, 2, 3, 4, 5}, 2, 3)
		h := Heatmap(x.Transpose(0, 1)) // a strided view
		if h.Points() != 6 || len(h.fig.cells) != 3 || h.fig.cells[2][1] != 5 {
			t.Fatalf("heat map of the transpose: %v", h.fig.cells)
		}
		hist := HistogramBins(x, 3)
		if !slices.Equal(hist.fig.counts, []float64{2, 2, 2}) || !strings.Contains(hist.Title(), "[2 3]") {
			t.Fatalf("histogram %v titled %q", hist.fig.counts, hist.Title())
		}
		if auto := Histogram(tensor.Randn(dev, 1000)); len(auto.fig.counts) != 31 { // ⌊√1000⌋
			t.Fatalf("automatic bins: %d", len(auto.fig.counts))
		}
		tab := TensorTable(x)
		if rows := tab.Rows(); len(rows) != 2 || rows[1][3] != "5" {
			t.Fatalf("tensor table rows %v", rows)
		}
	})
}

func TestConfusionMatrixMetric(t *testing.T) {
	dev := tensor.CPU()
	m := metrics.NewConfusionMatrix(3)
	out := tensor.FromFloat64s(dev, []float64{1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1}, 4, 3)
	tgt := tensor.FromInt64s(dev, []int64{0, 1, 2, 2}, 4)
	if err := m.Update(out, tgt); err != nil {
		t.Fatal(err)
	}
	c := ConfusionMatrix(m, "a", "b", "c")
	want := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 1, 1}}
	for i := range want {
		if !slices.Equal(c.fig.cells[i], want[i]) {
			t.Fatalf("cells %v, want %v", c.fig.cells, want)
		}
	}
	if !slices.Equal(c.fig.yCategories, []string{"a", "b", "c"}) {
		t.Fatalf("classes %v", c.fig.yCategories)
	}
}

func TestThin(t *testing.T) {
	n := 10000
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range n {
		xs[i], ys[i] = float64(i), math.Sin(float64(i)/100)
	}
	ys[4321] = 50  // a spike
	ys[7000] = -50 // a dip
	ys[9000] = math.NaN()
	for _, max := range []int{4, 5, 100, 500, 501} {
		tx, ty := Thin(xs, ys, max)
		if len(tx) > max || len(tx) != len(ty) {
			t.Fatalf("max %d: %d points", max, len(tx))
		}
		if tx[0] != 0 || tx[len(tx)-1] != float64(n-1) {
			t.Errorf("max %d: first/last x %v %v", max, tx[0], tx[len(tx)-1])
		}
		if !slices.IsSorted(tx) {
			t.Errorf("max %d: x out of order", max)
		}
		if !slices.Contains(ty, 50) || !slices.Contains(ty, -50) {
			t.Errorf("max %d: lost the spike or the dip", max)
		}
	}
	if tx, _ := Thin(xs[:10], ys[:10], 500); len(tx) != 10 {
		t.Errorf("short series changed: %d points", len(tx))
	}
	if tx, _ := Thin(xs, ys, 3); len(tx) != n {
		t.Errorf("max below 4 must keep every point, kept %d", len(tx))
	}
}

func TestSmooth(t *testing.T) {
	got := Smooth([]float64{1, 1, math.NaN(), 1, 3}, 0.5)
	// Debiased: a constant stays constant; NaN passes through unaveraged.
	if got[0] != 1 || got[1] != 1 || !math.IsNaN(got[2]) || got[3] != 1 {
		t.Fatalf("Smooth = %v", got)
	}
	// avg = 0.5·(0.5·(0.5·0.5+0.5)+0.5)+0.5·3 = 1.9375 over weight 0.9375.
	if want := 1.9375 / 0.9375; math.Abs(got[4]-want) > 1e-12 {
		t.Fatalf("Smooth last = %v, want %v", got[4], want)
	}
	if s := Smooth([]float64{1, 2}, 0); !slices.Equal(s, []float64{1, 2}) {
		t.Fatalf("weight 0 changed values: %v", s)
	}
}

var scriptSrc = regexp.MustCompile(`(?i)<script[^>]*\bsrc\s*=`)

func TestFragments(t *testing.T) {
	if !HasLibrary() {
		t.Skip("viz/assets/echarts.min.js is missing: run make assets")
	}
	c := Line(nil, []float64{1, 2, 3})
	s := NewSession()
	first, second := s.Fragment(c), s.Fragment(c)
	if !strings.Contains(first, "echarts") || len(first) < 500_000 {
		t.Fatalf("first fragment of a session does not carry the library (%d bytes)", len(first))
	}
	if len(second) > 100_000 {
		t.Fatalf("second fragment of a session carries the library again (%d bytes)", len(second))
	}
	if !s.Sent() {
		t.Fatal("Sent() false after a render")
	}
	ids := regexp.MustCompile(`id="(kiln-viz-[0-9a-f]+)"`)
	if a, b := ids.FindStringSubmatch(first), ids.FindStringSubmatch(second); a == nil || b == nil || a[1] == b[1] {
		t.Fatalf("chart ids not unique: %v %v", a, b)
	}
	if !strings.Contains(second, "(function(){") || strings.Contains(second, "let ") {
		t.Fatalf("script not wrapped in a function, or declares globals: %s", second)
	}
	// Standalone HTML always carries the library; a board carries it once.
	b := TrainingCurves(syntheticRun(100, 10, 50), CurveOptions{})
	for name, html := range map[string]string{"chart HTML": c.HTML(), "chart MIME": c.MIME()["text/html"],
		"board HTML": b.HTML()} {
		if n := strings.Count(html, "window.echarts){(function(define,exports,module,require)"); n != 1 {
			t.Errorf("%s: library inline %d times, want 1", name, n)
		}
	}
	// The display that carried the library keeps it in its updates.
	s2 := NewSession()
	up1 := s2.RenderDisplay(b, "d1")["text/html"]
	other := s2.Render(c)["text/html"]
	up2 := s2.RenderDisplay(b, "d1")["text/html"]
	if len(up1) < 500_000 || len(up2) < 500_000 || len(other) > 100_000 {
		t.Fatalf("RenderDisplay: carrier %d then %d bytes, other %d", len(up1), len(up2), len(other))
	}
	s2.Reset()
	if again := s2.Fragment(c); len(again) < 500_000 {
		t.Fatal("Reset did not make the next chart carry the library")
	}
	// No fragment loads anything: no <script src>, no go-echarts CDN.
	for name, html := range map[string]string{"first": first, "second": second, "board": b.HTML(),
		"table": Devices().HTML()} {
		if scriptSrc.MatchString(html) || strings.Contains(html, "go-echarts.github.io") ||
			strings.Contains(html, "cdn") {
			t.Errorf("%s fragment references a script URL", name)
		}
	}
	// The MIME bundle has every format.
	m := c.MIME()
	for _, k := range []string{"text/html", "image/svg+xml", "text/plain"} {
		if m[k] == "" {
			t.Errorf("MIME lacks %s", k)
		}
	}
}

func TestFragmentWithoutLibrary(t *testing.T) {
	withoutLibrary(func() {
		if HasLibrary() {
			t.Fatal("HasLibrary true without the library")
		}
		s := NewSession()
		html := s.Fragment(Line(nil, []float64{1, 2}))
		if !strings.Contains(html, "built without the chart library (run make)") {
			t.Fatalf("no note saying the library is missing: %.500s", html)
		}
		if !strings.Contains(html, `class="kiln-viz-static"`) || !strings.Contains(html, "data:image/svg+xml;base64,") {
			t.Fatal("no static rendering")
		}
		if s.Sent() {
			t.Fatal("a session without the library claims to have sent it")
		}
	})
}

func TestGoEchartsHoldsNoURL(t *testing.T) {
	// The chart go-echarts builds must not even hold its CDN host: viz
	// clears the preset assets.
	for _, c := range []*Chart{Line(nil, []float64{1}), HistogramOf([]float64{1}, 2), Confusion([][]float64{{1}})} {
		b, _ := json.Marshal(c.fig.option())
		if strings.Contains(string(b), "http") {
			t.Errorf("%s: option holds a URL: %s", c.key, b)
		}
	}
}

func TestRunChartsAndCompare(t *testing.T) {
	dir := t.TempDir()
	a := writeRun(t, filepath.Join(dir, "lr-0.1"), syntheticRun(200, 5, 50))
	b := writeRun(t, filepath.Join(dir, "lr-0.01"), syntheticRun(100, 5, 50))
	board, err := RunCharts(a, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range board.Charts() {
		keys = append(keys, c.Key())
	}
	if want := []string{"loss", "accuracy", "lr", "throughput", "system", "confusion"}; !slices.Equal(keys, want) {
		t.Fatalf("run charts %v, want %v", keys, want)
	}
	if board.Title() != "lr-0.1" || board.Chart("lr") == nil || board.Chart("nope") != nil {
		t.Fatalf("board title %q", board.Title())
	}
	if svg := board.SVG(); !strings.Contains(svg, "<svg") || strings.Contains(svg, "cannot draw") {
		t.Fatalf("board SVG: %.300s", svg)
	}
	var arr []map[string]any
	if j, err := board.Option(); err != nil || json.Unmarshal(j, &arr) != nil || len(arr) != 6 || arr[0]["key"] != "loss" {
		t.Fatalf("board option: %v %v", err, arr)
	}

	cmp, err := Compare([]string{a, b}, "loss", CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names, lengths := seriesLengths(t, optionOf(t, cmp))
	if !slices.Equal(names, []string{"lr-0.1", "lr-0.01"}) || !slices.Equal(lengths, []int{4, 2}) {
		t.Fatalf("compare valid: %v %v", names, lengths)
	}
	cmp, err = Compare([]string{a, b}, "loss", CurveOptions{Split: "train"})
	if err != nil {
		t.Fatal(err)
	}
	if _, lengths = seriesLengths(t, optionOf(t, cmp)); !slices.Equal(lengths, []int{40, 20}) {
		t.Fatalf("compare train: %v", lengths)
	}
	if _, err := Compare([]string{a}, "bleu", CurveOptions{}); !errors.Is(err, ErrNoValues) {
		t.Fatalf("compare of an unlogged metric: %v", err)
	}
	if _, err := Compare([]string{filepath.Join(dir, "absent")}, "loss", CurveOptions{}); err == nil {
		t.Fatal("compare of a missing run: no error")
	}
	if _, err := RunCharts(filepath.Join(dir, "absent"), CurveOptions{}); err == nil {
		t.Fatal("RunCharts of a missing run: no error")
	}
}

func TestFor(t *testing.T) {
	dev := tensor.CPU()
	res := train.Result{Reason: train.StopCompleted, Epochs: 2, Steps: 10,
		Train: []train.Values{{"loss": 1}, {"loss": 0.5}}, Valid: []train.Values{{"loss": 1.1}, {"loss": 0.7}}}
	cases := []struct {
		name string
		v    any
		want string // a substring of text/plain
	}{
		{"devices", tensor.Devices(), "cpu"},
		{"tensor", tensor.Ones(dev, 2, 2), "Tensor float32 [2 2]"},
		{"result", res, `chart "loss": 2 series (train, valid), 4 points`},
		{"result pointer", &res, "2 epochs, 10 steps"},
		{"confusion metric", metrics.NewConfusionMatrix(2), "2×2 heat map"},
		{"events", syntheticRun(20, 5, 10), `chart "loss"`},
		{"a chart is itself", Line(nil, []float64{1}), `chart "line"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := For(c.v)
			if v == nil {
				t.Fatal("For returned nil")
			}
			if got := NewSession().Render(v)["text/plain"]; !strings.Contains(got, c.want) {
				t.Fatalf("text %q lacks %q", got, c.want)
			}
		})
	}
	if For(42) != nil || For(nil) != nil || For((*tensor.Tensor)(nil)) != nil {
		t.Fatal("For of a value viz does not draw is not nil")
	}
}

func TestDeviceTable(t *testing.T) {
	lvp := backends.DeviceInfo{Kind: "vulkan", Name: "llvmpipe", Vendor: "Mesa (software)", Software: true, Cores: 2}
	devs := tensor.DeviceList{
		{DeviceInfo: cpuInfo(), Default: true},
		{DeviceInfo: gpuInfo()},
		{DeviceInfo: lvp, NotDefault: "software device"},
	}
	tab := DeviceTable(devs)
	rows := tab.Rows()
	if len(rows) != 3 || rows[0][5] != "8 cores" || rows[1][5] != "132 SMs" || rows[1][4] != "80.0 GiB" ||
		rows[2][3] != "Mesa (software)" || rows[2][5] != "2 cores" || rows[0][3] != "-" {
		t.Fatalf("rows %q", rows)
	}
	if !strings.HasPrefix(rows[0][7], "yes: ") || rows[1][7] != "" || rows[2][7] != "no: software device" {
		t.Fatalf("default column %q %q %q", rows[0][7], rows[1][7], rows[2][7])
	}
	html := tab.HTML()
	for _, want := range []string{"<table", "cores / SMs", "H100 &amp; co", `<tr style="font-weight:bold">`} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if txt := tab.String(); !strings.Contains(txt, "cuda:0") || !regexp.MustCompile(`device +kind +name +vendor`).MatchString(txt) {
		t.Errorf("text table:\n%s", txt)
	}
	if empty := DeviceTable(nil); !strings.Contains(empty.String(), "No device") {
		t.Errorf("empty table: %q", empty.String())
	}
}

func TestLargeChartsStayBounded(t *testing.T) {
	n := 100_000
	ys := make([]float64, n)
	for i := range ys {
		ys[i] = math.Sin(float64(i) / 1000)
	}
	line := Line(nil, ys)
	if svg := line.SVG(); len(svg) > 400_000 {
		t.Errorf("SVG of a %d-point line: %d bytes", n, len(svg))
	}
	if _, lengths := seriesLengths(t, optionOf(t, line)); lengths[0] != n {
		t.Errorf("the option must keep every point: %d", lengths[0])
	}
	rows := make([][]float64, 200)
	for i := range rows {
		rows[i] = make([]float64, 200)
		for j := range rows[i] {
			rows[i][j] = float64(i * j)
		}
	}
	heat := HeatmapRows(rows)
	if svg := heat.SVG(); len(svg) > 1_000_000 || !strings.Contains(svg, "<image") {
		t.Errorf("SVG of a 200×200 heat map: %d bytes, rasterized %v", len(svg), strings.Contains(svg, "<image"))
	}
	data := optionOf(t, heat)["series"].([]any)[0].(map[string]any)["data"].([]any)
	if len(data) != 40_000 || fmt.Sprint(data[201]) != "[1 1 1]" {
		t.Errorf("heat map data: %d cells, cell 201 = %v", len(data), data[201])
	}
}

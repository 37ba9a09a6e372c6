package viz

// Headless-browser tests: every kind of fragment, in a page opened from
// file:// with the network emulated offline, must give an echarts instance
// with the expected series and points; the same inside a page that inserts
// outputs the way JupyterLab does (innerHTML, then scripts re-created) and
// the way classic Notebook does (RequireJS's define present, jQuery-style
// insertion), and in nbconvert's HTML export. Each page is screenshotted
// into $KILN_TEST_OUT/viz, or viz/testdata/out (gitignored).
//
// The browser is Debian's chromium (KILN_CHROMIUM overrides the path),
// shared by the subtests; the tests skip when it is missing or when the
// binary was built without the chart library (run make assets).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/chromium"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/tensor"
)

// screenshotDir returns the folder the browser tests keep screenshots in.
func screenshotDir(t *testing.T) string {
	dir := filepath.Join("testdata", "out")
	if d := os.Getenv("KILN_TEST_OUT"); d != "" {
		dir = filepath.Join(d, "viz")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// newBrowser starts one headless chromium for the test and its subtests,
// with a fresh profile, and returns a tab whose network is offline.
func newBrowser(t *testing.T) context.Context {
	if _, ok := chromium.Path(); ok && !HasLibrary() {
		t.Skip("viz/assets/echarts.min.js is missing (run make assets): browser tests skipped")
	}
	ctx := chromium.New(t, 1520, 900)
	if err := chromium.Offline(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// chartState is what the page reports for one .kiln-viz container.
type chartState struct {
	ID     string `json:"id"`
	Drawn  bool   `json:"drawn"`
	Series []int  `json:"series"` // data points per series of the echarts instance
	Static string `json:"static"` // the static image's CSS display
	Note   string `json:"note"`
}

const stateJS = `JSON.stringify(Array.prototype.map.call(document.querySelectorAll(".kiln-viz"), function(r){
var box=r.querySelector(".kiln-viz-chart"), inst=(window.echarts&&box)?window.echarts.getInstanceByDom(box):null;
var o=inst?inst.getOption():null, img=r.querySelector(".kiln-viz-static"), n=r.querySelector(".kiln-viz-note");
return {id:r.id, drawn:!!inst, series:o?o.series.map(function(s){return (s.data||[]).length;}):[],
static:img?getComputedStyle(img).display:"none", note:n?n.textContent:""};}))`

// Loads that are not the page's own: anything but file:, data: and blob:.
const foreignLoadsJS = `JSON.stringify(performance.getEntriesByType("resource").map(function(e){return e.name;})
.filter(function(n){return !/^(file|data|blob):/.test(n);}))`

// expectation lists the series lengths of each chart a page must show, in
// document order.
type expectation [][]int

func expect(t *testing.T, charts ...*Chart) expectation {
	var e expectation
	for _, c := range charts {
		_, lengths := seriesLengths(t, optionOf(t, c))
		e = append(e, lengths)
	}
	return e
}

// page is one browser check.
type page struct {
	name  string
	html  string      // the page
	want  expectation // charts that must draw
	check func(t *testing.T, ctx context.Context, states []chartState)
	// undrawn pages: the charts must stay undrawn, with their static
	// image shown and a note containing this.
	undrawnNote string
	// foreign allows loads from outside the page (nbconvert's template).
	foreign bool
}

func standalone(title, body string) string {
	return "<!doctype html><html><head><meta charset=\"utf-8\"><title>" + title + "</title></head><body>\n" +
		body + "\n</body></html>\n"
}

// labPage inserts outputs the way JupyterLab's HTML renderer does: the
// host's innerHTML is set, then every script element is replaced by a
// fresh one (which the browser runs). The last output goes into a host
// that is attached to the document only later.
func labPage(outputs ...string) string {
	j, _ := json.Marshal(outputs)
	return standalone("JupyterLab-style outputs", `<div id="outputs"></div>
<script>
function renderHTML(host, source) {
  host.innerHTML = source;
  Array.prototype.slice.call(host.getElementsByTagName("script")).forEach(function(old) {
    var s = document.createElement("script");
    for (var i = 0; i < old.attributes.length; i++) s.setAttribute(old.attributes[i].name, old.attributes[i].value);
    s.textContent = old.textContent;
    old.parentNode.replaceChild(s, old);
  });
}
(function() {
  var outputs = `+string(j)+`, area = document.getElementById("outputs");
  outputs.forEach(function(src, i) {
    var host = document.createElement("div");
    host.className = "jp-OutputArea-output";
    if (i === outputs.length - 1) {
      renderHTML(host, src); // rendered detached, attached later
      setTimeout(function() { area.appendChild(host); }, 150);
    } else {
      area.appendChild(host);
      renderHTML(host, src);
    }
  });
})();
</script>`)
}

// classicPage loads a RequireJS-like AMD loader (define.amd set), then
// appends outputs the way classic Notebook's jQuery does: the nodes are
// inserted, then each script's text runs in a script element added to the
// head and removed.
func classicPage(outputs ...string) string {
	j, _ := json.Marshal(outputs)
	return standalone("classic Notebook-style outputs", `<script>
window.amdDefines = 0;
window.define = function() { window.amdDefines++; };
window.define.amd = { jQuery: true };
window.requirejs = window.require = function(deps, callback) {};
window.requirejs.config = function() {};
</script>
<div id="outputs"></div>
<script>
function append(host, source) {
  var tmp = document.createElement("div");
  tmp.innerHTML = source;
  var scripts = Array.prototype.slice.call(tmp.getElementsByTagName("script"));
  scripts.forEach(function(s) { s.parentNode.removeChild(s); });
  while (tmp.firstChild) host.appendChild(tmp.firstChild);
  scripts.forEach(function(s) {
    var g = document.createElement("script");
    g.text = s.textContent;
    document.head.appendChild(g).parentNode.removeChild(g);
  });
}
(function() {
  var outputs = `+string(j)+`, area = document.getElementById("outputs");
  outputs.forEach(function(src) {
    var cell = document.createElement("div");
    cell.className = "output_subarea output_html rendered_html";
    area.appendChild(cell);
    append(cell, src);
  });
})();
</script>`)
}

// nbconvertPage exports a notebook whose outputs are the bundles, with
// jupyter nbconvert, into dir, and returns the HTML; require.js comes from
// a local AMD stub instead of nbconvert's CDN default. It returns "" when
// nbconvert is not installed.
func nbconvertPage(dir string, bundles ...map[string]string) (string, error) {
	nbconvert, err := exec.LookPath("jupyter-nbconvert")
	if err != nil {
		return "", nil
	}
	stub := filepath.Join(dir, "require-stub.js")
	err = os.WriteFile(stub, []byte("window.amdDefines=0;window.define=function(){window.amdDefines++;};define.amd={};"+
		"window.requirejs=window.require=function(){};requirejs.config=function(){};\n"), 0o644)
	if err != nil {
		return "", err
	}
	var outputs []map[string]any
	for _, b := range bundles {
		outputs = append(outputs, map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": b})
	}
	nb := map[string]any{"nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{},
		"cells": []any{map[string]any{"cell_type": "code", "id": "c1", "execution_count": 1, "metadata": map[string]any{},
			"source": "viz.Line(xs, ys)", "outputs": outputs}}}
	j, _ := json.Marshal(nb)
	in := filepath.Join(dir, "charts.ipynb")
	if err := os.WriteFile(in, j, 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command(nbconvert, "--to", "html", "--HTMLExporter.require_js_url=file://"+stub, in)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("nbconvert: %v\n%s", err, out)
	}
	html, err := os.ReadFile(filepath.Join(dir, "charts.html"))
	return string(html), err
}

func TestBrowser(t *testing.T) {
	line := Line(nil, []float64{3, 1, 4, 1, 5, 9, 2, 6}, []float64{2, 7, 1, 8, 2, 8, 1, 8}).SetTitle("two lines")
	confusion := Confusion([][]float64{{50, 2, 1}, {3, 45, 4}, {0, 5, 40}}, "cat", "dog", "bird")
	// nbconvert (Python) starts slowly: export while the browser works.
	type export struct {
		html string
		err  error
	}
	nbDone := make(chan export, 1)
	nbDir := t.TempDir()
	go func() {
		html, err := nbconvertPage(nbDir, session2Bundles(line, confusion)...)
		nbDone <- export{html, err}
	}()
	ctx := newBrowser(t)
	shots := screenshotDir(t)
	t.Logf("screenshots in %s", shots)
	dev := tensor.CPU()
	dev.Seed(7)

	scatter := Scatter([]float64{0, 1, 2, 3, 4}, []float64{0.1, 0.9, 2.2, 2.8, 4.1}).
		AddLine("fit", []float64{0, 4}, []float64{0, 4}).SetTitle("scatter and fit")
	hist := Histogram(tensor.Randn(dev, 2000))
	heat := Heatmap(tensor.Rand(dev, 6, 8))
	runs := t.TempDir()
	runA := writeRun(t, filepath.Join(runs, "run-a"), syntheticRun(400, 5, 100))
	runB := writeRun(t, filepath.Join(runs, "run-b"), syntheticRun(300, 5, 100))
	curves, err := RunCharts(runA, CurveOptions{Smoothing: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	compare, err := Compare([]string{runA, runB}, "loss", CurveOptions{Split: "train", Smoothing: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	dash := NewLiveDashboard(nil, DashboardConfig{MaxPoints: 100, Title: "live"})
	for _, e := range syntheticRun(1000, 1, 250)[:700] {
		dash.OnEvent(e)
	}
	running := dash.Board() // thinned, as a notebook update
	final := dash.Final()   // every point
	// The live dashboard itself mid-run (header, values, slider, charts),
	// as a notebook output.
	live := NewLiveDashboard(nil, DashboardConfig{MaxPoints: 100, Title: "live"})
	for _, e := range progressRun(5, 100)[:260] {
		live.OnEvent(e)
	}
	liveHTML, liveCharts := live.HTML(), live.Board().Charts()

	// One session: the first output carries the library, later ones
	// only the loader.
	session := NewSession()
	s1, s2, s3 := session.Fragment(line), session.Fragment(hist), session.Fragment(line)
	if len(s2) > 100_000 || len(s3) > 100_000 {
		t.Fatal("later session fragments carry the library")
	}

	var missing string
	withoutLibrary(func() { missing = Line(nil, []float64{1, 2, 3}).HTML() })
	saved := waitTicks
	waitTicks = 4
	orphan := NewSession()
	orphan.Fragment(line) // the carrier, never shown
	never := orphan.Fragment(scatter)
	waitTicks = saved

	pages := []page{
		{name: "line", html: standalone("line", line.HTML()), want: expect(t, line)},
		{name: "scatter", html: standalone("scatter", scatter.HTML()), want: expect(t, scatter)},
		{name: "histogram", html: standalone("histogram", hist.HTML()), want: expect(t, hist)},
		{name: "heatmap", html: standalone("heatmap", heat.HTML()), want: expect(t, heat)},
		{name: "confusion", html: standalone("confusion", confusion.HTML()), want: expect(t, confusion)},
		{name: "training-curves", html: standalone("training curves", curves.HTML()), want: expect(t, curves.Charts()...)},
		{name: "compare", html: standalone("compare", compare.HTML()), want: expect(t, compare)},
		{name: "dashboard-update", html: standalone("dashboard", running.HTML()), want: expect(t, running.Charts()...),
			check: func(t *testing.T, _ context.Context, states []chartState) {
				for _, s := range states {
					for _, n := range s.Series {
						if n > 100 {
							t.Errorf("a dashboard update series holds %d points", n)
						}
					}
				}
			}},
		{name: "dashboard-final", html: standalone("dashboard", final.HTML()), want: expect(t, final.Charts()...),
			check: func(t *testing.T, _ context.Context, states []chartState) {
				if states[0].Series[0] != 695 { // loss, train: every step logged (695 in the first 700 events)
					t.Errorf("final loss series holds %d points, want 695", states[0].Series[0])
				}
			}},
		{name: "live-dashboard-lab", html: labPage(liveHTML), want: expect(t, liveCharts...), check: checkLiveDashboard},
		{name: "live-dashboard-classic", html: classicPage(liveHTML), want: expect(t, liveCharts...), check: checkLiveDashboard},
		{name: "session", html: standalone("session", s1+s2+s3), want: expect(t, line, hist, line)},
		{name: "jupyterlab", html: labPage(s1, s2, s3), want: expect(t, line, hist, line)},
		{name: "classic-notebook", html: classicPage(s1, s2, s3), want: expect(t, line, hist, line),
			check: func(t *testing.T, ctx context.Context, _ []chartState) {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.amdDefines`))
				if err != nil || n != 0 {
					t.Errorf("echarts registered itself with the AMD loader (%d define calls, %v)", n, err)
				}
			}},
		{name: "static-svg", html: standalone("static renderings", svgImages(curves.SVG(), confusion.SVG(), hist.SVG(),
			heat.SVG(), scatter.SVG())),
			check: func(t *testing.T, ctx context.Context, _ []chartState) {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Array.prototype.filter.call(document.images,
					function(i){ return i.complete && i.naturalWidth > 0; }).length`))
				if err != nil || n != 5 {
					t.Errorf("%d of 5 SVG renderings decoded (%v)", n, err)
				}
			}},
		{name: "without-library", html: standalone("no library", missing), undrawnNote: "built without the chart library (run make)"},
		{name: "library-never-arrives", html: standalone("orphan", never), undrawnNote: "did not load in this page"},
		{name: "devices", html: standalone("devices", DeviceTable(tensor.DeviceList{{DeviceInfo: cpuInfo(), Default: true},
			{DeviceInfo: gpuInfo()}}).HTML()+Devices().HTML()),
			check: func(t *testing.T, ctx context.Context, _ []chartState) {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.kiln-viz-table tbody tr").length`))
				if err != nil || n < 3 {
					t.Errorf("device tables show %d rows (%v)", n, err)
				}
			}},
	}
	// The nbconvert page comes last, when its export is done.
	pages = append(pages, page{name: "nbconvert", want: expect(t, line, confusion), foreign: true})

	for _, p := range pages {
		if p.name == "nbconvert" {
			nb := <-nbDone
			if nb.err != nil {
				t.Errorf("nbconvert: %v", nb.err)
				continue
			}
			if nb.html == "" {
				t.Log("jupyter-nbconvert not installed: nbconvert export not checked")
				continue
			}
			p.html = nb.html
		}
		t.Run(p.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), p.name+".html")
			if err := os.WriteFile(file, []byte(p.html), 0o644); err != nil {
				t.Fatal(err)
			}
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := chromedp.Do(tctx, chromedp.Navigate("file://"+file)); err != nil {
				t.Fatal(err)
			}
			ready := fmt.Sprintf(`document.querySelectorAll(".kiln-viz").length === %d && Array.prototype.every.call(
				document.querySelectorAll(".kiln-viz .kiln-viz-chart"), function(b){ return window.echarts && echarts.getInstanceByDom(b); })`,
				len(p.want))
			if p.undrawnNote != "" {
				ready = fmt.Sprintf(`Array.prototype.some.call(document.querySelectorAll(".kiln-viz-note"),
					function(n){ return n.textContent.indexOf(%q) >= 0; })`, p.undrawnNote)
			}
			if len(p.want) == 0 && p.undrawnNote == "" {
				ready = "document.readyState === 'complete'"
			}
			_, pollErr := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](ready,
				chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
			stateJSON, err := chromedp.Run(tctx, chromedp.Evaluate[string](stateJS))
			if err != nil {
				t.Fatal(err)
			}
			var states []chartState
			if err := json.Unmarshal([]byte(stateJSON), &states); err != nil {
				t.Fatal(err)
			}
			if img, err := chromedp.Run(tctx, chromedp.FullScreenshot(85)); err == nil {
				os.WriteFile(filepath.Join(shots, p.name+".jpg"), img, 0o644)
			} else {
				t.Errorf("screenshot: %v", err)
			}
			if pollErr != nil {
				t.Fatalf("page never got ready (%v); charts: %+v", pollErr, states)
			}
			if p.undrawnNote != "" {
				for _, s := range states {
					if s.Drawn || s.Static == "none" || !strings.Contains(s.Note, p.undrawnNote) {
						t.Errorf("chart %s: drawn %v, static image %q, note %q", s.ID, s.Drawn, s.Static, s.Note)
					}
				}
			} else {
				var got expectation
				ids := map[string]bool{}
				for _, s := range states {
					if !s.Drawn || s.Static != "none" || s.Note != "" {
						t.Errorf("chart %s: drawn %v, static image %q, note %q", s.ID, s.Drawn, s.Static, s.Note)
					}
					if ids[s.ID] {
						t.Errorf("chart id %s used twice", s.ID)
					}
					ids[s.ID] = true
					got = append(got, s.Series)
				}
				if fmt.Sprint(got) != fmt.Sprint(p.want) {
					t.Errorf("series lengths per chart %v, want %v", got, p.want)
				}
			}
			if !p.foreign {
				loads, err := chromedp.Run(tctx, chromedp.Evaluate[string](foreignLoadsJS))
				if err != nil || loads != "[]" {
					t.Errorf("the page loaded from outside: %s %v", loads, err)
				}
			}
			if p.check != nil {
				p.check(t, tctx, states)
			}
		})
	}
}

// svgImages shows SVG documents as images.
func svgImages(svgs ...string) string {
	var b strings.Builder
	for _, s := range svgs {
		b.WriteString(`<img style="margin:4px;border:1px solid #eee" src="data:image/svg+xml;base64,` +
			base64.StdEncoding.EncodeToString([]byte(s)) + `">`)
	}
	return b.String()
}

// session2Bundles renders charts with one fresh session, as a kernel would
// for successive outputs.
func session2Bundles(charts ...*Chart) []map[string]string {
	s := NewSession()
	var out []map[string]string
	for _, c := range charts {
		out = append(out, s.Render(c))
	}
	return out
}

// checkLiveDashboard checks a live dashboard's page: the header shows
// progress, ETA and throughput, the accuracy axis stays within [0, 1], and
// the smoothing slider re-smooths the loss (to the raw values at 0).
func checkLiveDashboard(t *testing.T, ctx context.Context, _ []chartState) {
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){
var q=function(s){var e=document.querySelector(s);return e?e.textContent:"";};
var box=function(k){return document.querySelector('[data-kiln-key="'+k+'"] .kiln-viz-chart');};
var acc=echarts.getInstanceByDom(box("accuracy")), y=acc.getModel().getComponent("yAxis",0).axis.scale.getExtent();
var i=document.querySelector(".kiln-dash-smoothing input"); i.value="0"; i.dispatchEvent(new Event("input"));
var o=echarts.getInstanceByDom(box("step_loss")).getOption(), raw, sm;
o.series.forEach(function(s){if(s.name==="raw")raw=s.data;if(s.name==="smoothed")sm=s.data;});
return [q(".kiln-dash-percent"),q(".kiln-dash-epoch"),q(".kiln-dash-eta"),q(".kiln-dash-rate"),
 String(y[0]>=0&&y[1]<=1), String(JSON.stringify(raw)===JSON.stringify(sm))].join("|");})()`))
	if err != nil {
		t.Fatal(err)
	}
	// 256 of 500 batches in 5.12 s and 0.6 s of validation: 51%, 5.72 ×
	// 0.488 / 0.512 s to go; 32 samples per 20 ms.
	if want := "51%|epoch 3/5|ETA 5s|1600 samples/s|true|true"; got != want {
		t.Errorf("the live dashboard shows %q, want %q", got, want)
	}
}

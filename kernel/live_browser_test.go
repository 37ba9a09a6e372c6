package kernel_test

// The live dashboard as a notebook shows it: a cell trains in a real
// kernel session, and its outputs (the chart library's preload, the
// dashboard's display_data, then its update_display_data messages) are
// played into headless Chromium the way JupyterLab renders them (innerHTML,
// then the scripts re-created; an update replaces the output that has its
// display_id). The page must show the run's progress, ETA and throughput
// while it runs, keep the accuracy axis within [0, 1] (read from the
// echarts instance), keep the smoothing chosen with the slider across
// updates, and say that the run completed at the end. Screenshots go to
// $KILN_TEST_OUT/kernel, or testoutput/kernel at the repository's root
// (ignored by git).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/internal/chromium"
	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/viz"
)

// slowAccuracyCell trains a 4→3 classifier for 5 epochs of 120 batches,
// each step slowed by 3 ms so that the dashboard updates several times
// while it runs, with training and validation accuracy.
func slowAccuracyCell(dir string) string {
	return fmt.Sprintf(`
import "github.com/kiln-ml/kiln/metrics"

type slowStep struct{ M *nn.Linear }

func (s *slowStep) TrainStep(x, y *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	time.Sleep(3 * time.Millisecond)
	out := s.M.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

rng := rand.New(rand.NewSource(1))
blobs := func(n int) []data.Item {
	items := make([]data.Item, 0, n)
	for i := 0; i < n; i++ {
		c := i %% 3
		x := make([]float32, 4)
		for j := range x {
			x[j] = float32(rng.NormFloat64())*1.5 + float32(c)
		}
		items = append(items, data.Item{X: x, Label: int64(c)})
	}
	return items
}
trainLoader, _ := data.NewLoader(data.NewInMemory(blobs(480)), data.LoaderConfig{BatchSize: 4, Device: tensor.CPU()})
validLoader, _ := data.NewLoader(data.NewInMemory(blobs(60)), data.LoaderConfig{BatchSize: 20, Device: tensor.CPU()})
model := nn.NewLinear(tensor.CPU().Autodiff(), 4, 3)
l := &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.05})}
l.Stepper = &slowStep{M: model}
sup := &train.Supervised{Config: train.Config{Epochs: 5, LogEvery: 1, RunDir: %q}, Train: trainLoader, Valid: validLoader}
sup.Metrics = append(sup.Metrics, metrics.NewAccuracy())
sup.ValidMetrics = append(sup.ValidMetrics, metrics.NewAccuracy())
res, err := sup.Fit(ctx, l)
if err != nil {
	panic(err)
}
fmt.Println("steps", res.Steps, res.Reason)
`, dir)
}

// notebookPage is a page that renders outputs as JupyterLab does: render
// shows a display_data (under its display_id, if any), update replaces the
// output with that display_id.
const notebookPage = `<!doctype html><html><head><meta charset="utf-8"><title>notebook</title></head>
<body style="margin:8px;width:1000px"><div id="outputs"></div>
<script>
var hosts = {};
function renderHTML(host, source) {
  host.innerHTML = source;
  Array.prototype.slice.call(host.getElementsByTagName("script")).forEach(function(old) {
    var s = document.createElement("script");
    for (var i = 0; i < old.attributes.length; i++) s.setAttribute(old.attributes[i].name, old.attributes[i].value);
    s.textContent = old.textContent;
    old.parentNode.replaceChild(s, old);
  });
}
function show(source, id) {
  var host = document.createElement("div");
  host.className = "jp-OutputArea-output";
  document.getElementById("outputs").appendChild(host);
  if (id) hosts[id] = host;
  renderHTML(host, source);
}
function update(source, id) { renderHTML(hosts[id], source); }
</script></body></html>`

// dashboardView is what the page shows of the dashboard.
type dashboardView struct {
	State    string  `json:"state"`
	Epoch    string  `json:"epoch"`
	Fraction float64 `json:"fraction"`
	ETA      string  `json:"eta"`
	Elapsed  string  `json:"elapsed"`
	Rate     string  `json:"rate"`
	Charts   int     `json:"charts"` // drawn echarts instances
	// The accuracy chart's y axis: the option's bounds and the extent
	// echarts drew.
	AccMin    *float64    `json:"accMin"`
	AccMax    *float64    `json:"accMax"`
	AccExtent []float64   `json:"accExtent"`
	Smoothing string      `json:"smoothing"`
	Smoothed  [][]float64 `json:"smoothed"` // the loss chart's smoothed series
	Raw       [][]float64 `json:"raw"`
}

const viewJS = `(function(){
var q=function(s){var e=document.querySelector(s);return e?e.textContent:"";};
var inst=function(key){var b=document.querySelector('[data-kiln-key="'+key+'"] .kiln-viz-chart');return (b&&window.echarts)?echarts.getInstanceByDom(b):null;};
var bar=document.querySelector(".kiln-dash-bar");
var v={state:q(".kiln-dash-state"),epoch:q(".kiln-dash-epoch"),fraction:bar?parseFloat(bar.getAttribute("data-fraction")):-1,
eta:q(".kiln-dash-eta"),elapsed:q(".kiln-dash-elapsed"),rate:q(".kiln-dash-rate"),
charts:Array.prototype.filter.call(document.querySelectorAll(".kiln-dash .kiln-viz-chart"),function(b){return window.echarts&&echarts.getInstanceByDom(b);}).length,
smoothing:q(".kiln-dash-smoothing-value")};
var acc=inst("accuracy");
if(acc){var y=acc.getOption().yAxis[0];v.accMin=y.min;v.accMax=y.max;
v.accExtent=acc.getModel().getComponent("yAxis",0).axis.scale.getExtent();}
var loss=inst("step_loss");
if(loss){loss.getOption().series.forEach(function(s){if(s.name==="smoothed")v.smoothed=s.data;if(s.name==="raw")v.raw=s.data;});}
return JSON.stringify(v);})()`

func TestLiveDashboardInBrowser(t *testing.T) {
	ctx := chromium.New(t, 1024, 1300)
	if !viz.HasLibrary() {
		t.Skip("viz/assets/echarts.min.js is missing (run make assets)")
	}
	if err := chromium.Offline(ctx); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, kernel.Options{})
	dir := filepath.Join(t.TempDir(), "run")
	rec := &recorder{}
	if _, err := s.Execute(context.Background(), slowAccuracyCell(dir), rec); err != nil {
		t.Fatal(describe(err))
	}
	if stdout, _ := rec.out(); !regexp.MustCompile(`steps 600 completed`).MatchString(stdout) {
		t.Fatalf("the cell printed %q", stdout)
	}
	msgs := dashboardMessages(t, rec)
	// A mid-run update that has two epochs of accuracy (a chart, not a
	// value), before the run's last epoch.
	mid := -1
	for i, m := range msgs {
		md, _ := m.Data.Metadata["kiln_dashboard"].(map[string]any)
		if final, _ := md["final"].(bool); final {
			if i != len(msgs)-1 {
				t.Fatalf("update %d of %d is final", i+1, len(msgs))
			}
			continue
		}
		if step, _ := md["step"].(int); step > 2*120 && step < 4*120 {
			mid = i
		}
	}
	if mid < 0 {
		t.Fatalf("no update between steps 240 and 480 among %d", len(msgs))
	}
	if md, _ := msgs[len(msgs)-1].Data.Metadata["kiln_dashboard"].(map[string]any); md["final"] != true {
		t.Fatalf("the last dashboard message is not final: %v", md)
	}

	shots := filepath.Join("..", "testoutput", "kernel")
	if d := os.Getenv("KILN_TEST_OUT"); d != "" {
		shots = filepath.Join(d, "kernel")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "notebook.html")
	if err := os.WriteFile(page, []byte(notebookPage), 0o644); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	htmlOf := func(m display.Message) string {
		h, _ := m.Data.Data[display.MIMETypeHTML].(string)
		return h
	}
	play := func(fn string, m display.Message, id string) {
		t.Helper()
		src, _ := json.Marshal(htmlOf(m))
		ids, _ := json.Marshal(id)
		if _, err := chromedp.Run(tctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("%s(%s,%s)", fn, src, ids))); err != nil {
			t.Fatal(err)
		}
	}
	// The outputs in order: the library's preload, then the dashboard's
	// first display and the mid-run update.
	rec.mu.Lock()
	for _, m := range rec.messages {
		if m.DisplayID() == "" {
			play("show", m, "")
		}
	}
	rec.mu.Unlock()
	id := msgs[0].DisplayID()
	play("show", msgs[0], id)
	play("update", msgs[mid], id)
	view := func(wantCharts int) dashboardView {
		t.Helper()
		ready := fmt.Sprintf(`Array.prototype.filter.call(document.querySelectorAll(".kiln-dash .kiln-viz-chart"),
			function(b){return window.echarts&&echarts.getInstanceByDom(b);}).length >= %d`, wantCharts)
		_, pollErr := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](ready,
			chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
		j, err := chromedp.Run(tctx, chromedp.Evaluate[string](viewJS))
		if err != nil {
			t.Fatal(err)
		}
		var v dashboardView
		if err := json.Unmarshal([]byte(j), &v); err != nil {
			t.Fatalf("%v: %s", err, j)
		}
		if pollErr != nil {
			t.Fatalf("the dashboard's charts did not draw: %v; the page shows %+v", pollErr, v)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		img, err := chromedp.Run(tctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkAccuracyAxis := func(v dashboardView) {
		t.Helper()
		if v.AccMin == nil || v.AccMax == nil || len(v.AccExtent) != 2 {
			t.Fatalf("no accuracy chart (or no axis bounds) in the page: %+v", v)
		}
		lo, hi := v.AccExtent[0], v.AccExtent[1]
		if *v.AccMin < 0 || *v.AccMax > 1 || lo < 0 || hi > 1 || !(lo < hi) {
			t.Errorf("accuracy axis: option [%v, %v], drawn [%v, %v]: want within [0, 1]", *v.AccMin, *v.AccMax, lo, hi)
		}
	}

	// Mid-run: the charts (loss per step, loss per epoch, accuracy per
	// epoch, throughput) draw, the header says where the run is.
	v := view(3)
	shot("dashboard-mid-run.jpg")
	t.Logf("mid-run (update %d of %d): %s, %s, %.0f%%, %s, %s, %s, %d charts, accuracy axis [%v, %v]", mid+1, len(msgs),
		v.State, v.Epoch, 100*v.Fraction, v.Elapsed, v.ETA, v.Rate, v.Charts, *v.AccMin, *v.AccMax)
	if v.State != "training" && v.State != "validating" {
		t.Errorf("state %q mid-run", v.State)
	}
	if !regexp.MustCompile(`^epoch [345]/5$`).MatchString(v.Epoch) {
		t.Errorf("epoch %q mid-run, want epoch 3, 4 or 5 of 5", v.Epoch)
	}
	if !(v.Fraction > 0.4 && v.Fraction < 1) {
		t.Errorf("progress bar at %v mid-run", v.Fraction)
	}
	duration := `(\d+s|\d+m\d\ds|\d+h\d\dm)`
	if !regexp.MustCompile(`^ETA ` + duration + `$`).MatchString(v.ETA) {
		t.Errorf("ETA %q", v.ETA)
	}
	if !regexp.MustCompile(`^elapsed ` + duration + `$`).MatchString(v.Elapsed) {
		t.Errorf("elapsed %q", v.Elapsed)
	}
	if m := regexp.MustCompile(`^([\d.]+)(k?) samples/s$`).FindStringSubmatch(v.Rate); m == nil {
		t.Errorf("throughput %q", v.Rate)
	}
	checkAccuracyAxis(v)

	// The slider re-smooths the loss in the page, and the weight chosen
	// survives the display's updates.
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[chromedp.Void](`(function(){
		var i=document.querySelector(".kiln-dash-smoothing input"); i.value="0.9";
		i.dispatchEvent(new Event("input"));})()`)); err != nil {
		t.Fatal(err)
	}
	v = view(3)
	checkSmoothed(t, v, 0.9)

	// The final update: completed, every step, accuracy still in [0, 1].
	play("update", msgs[len(msgs)-1], id)
	time.Sleep(200 * time.Millisecond) // the old output's charts are gone; wait for the new ones
	v = view(3)
	shot("dashboard-final.jpg")
	t.Logf("final: %s, %s, %.0f%%, %s, %s, %d charts, accuracy axis [%v, %v]", v.State, v.Epoch, 100*v.Fraction,
		v.Elapsed, v.Rate, v.Charts, *v.AccMin, *v.AccMax)
	if v.State != "completed" || v.Epoch != "epoch 5/5" || v.Fraction != 1 || v.ETA != "" {
		t.Errorf("final header: %+v", v)
	}
	if len(v.Raw) != 600 {
		t.Errorf("the final loss chart holds %d steps, want 600", len(v.Raw))
	}
	checkAccuracyAxis(v)
	if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](
		`document.querySelector(".kiln-dash-smoothing-value").textContent === "0.90"`,
		chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Errorf("the smoothing chosen did not survive the update: %q", v.Smoothing)
	}
	v = view(3)
	checkSmoothed(t, v, 0.9)
	loads, err := chromedp.Run(tctx, chromedp.Evaluate[string](`JSON.stringify(performance.getEntriesByType("resource").map(function(e){return e.name;}).filter(function(n){return !/^(file|data|blob):/.test(n);}))`))
	if err != nil || loads != "[]" {
		t.Errorf("the page loaded from outside: %s %v", loads, err)
	}
}

// checkSmoothed checks the page's smoothed loss against the exponential
// moving average of its raw values with weight w, computed here.
func checkSmoothed(t *testing.T, v dashboardView, w float64) {
	t.Helper()
	if len(v.Raw) == 0 || len(v.Smoothed) != len(v.Raw) {
		t.Fatalf("loss chart: %d raw, %d smoothed points", len(v.Raw), len(v.Smoothed))
	}
	avg, weight := 0.0, 0.0
	for i, p := range v.Raw {
		avg = avg*w + (1-w)*p[1]
		weight = weight*w + (1 - w)
		if got, want := v.Smoothed[i][1], avg/weight; math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			t.Fatalf("smoothed point %d: %v, want %v (weight %v)", i, got, want, w)
		}
	}
}

//go:build unix

package workbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/frontend"
	"github.com/kiln-ml/kiln/internal/chromium"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/workbench"
)

// noisyLoss is the per-step loss of the run writeNoisyRun logs: a
// falling line with a saw-tooth on it, which smoothing flattens.
func noisyLoss(step int) float64 { return 2 - float64(step)/100 + 0.5*float64(step%2*2-1) }

// writeNoisyRun writes a finished run of 2 epochs of 40 steps to dir:
// the noisy loss and a constant learning rate of 0.001 per step, and a
// validation loss per epoch.
func writeNoisyRun(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Minute)
	at := func(i int) string { return t0.Add(time.Duration(i) * 100 * time.Millisecond).Format(time.RFC3339Nano) }
	var b strings.Builder
	rec := func(v map[string]any) {
		j, _ := json.Marshal(v)
		b.Write(j)
		b.WriteByte('\n')
	}
	rec(map[string]any{"kind": "start", "time": at(0), "config": map[string]any{"epochs": 2}, "batches": 40})
	for step := 1; step <= 80; step++ {
		epoch := (step-1)/40 + 1
		rec(map[string]any{"kind": "step", "time": at(step), "epoch": epoch, "step": step, "batch": (step-1)%40 + 1, "batches": 40,
			"metrics": map[string]any{"loss": noisyLoss(step)}, "lr": 0.001})
		if step%40 == 0 {
			rec(map[string]any{"kind": "epoch", "time": at(step), "epoch": epoch, "step": step, "split": "valid", "metrics": map[string]any{"loss": 1.5 - 0.1*float64(epoch)}})
		}
	}
	rec(map[string]any{"kind": "end", "time": at(81), "epoch": 2, "step": 80, "reason": "completed"})
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ema is the smoothing the run view must draw (viz.Smooth).
func ema(ys []float64, w float64) []float64 {
	out := make([]float64, len(ys))
	avg, weight := 0.0, 0.0
	for i, y := range ys {
		avg = avg*w + (1-w)*y
		weight = weight*w + (1 - w)
		out[i] = avg / weight
	}
	return out
}

// TestRunViewSmoothsConstantsAndDownloads drives the built UI against the
// engine in headless Chromium: the smoothing slider changes the plotted
// per-step loss (checked against the debiased moving average), a constant
// learning rate shows as a value card instead of a chart, and a run's
// checkpoints download in every format, each file loading with the
// library that reads it; a run without a graph says what ONNX needs.
func TestRunViewSmoothsConstantsAndDownloads(t *testing.T) {
	if !frontend.Built() {
		t.Skip("the workbench UI is not built (run make assets): browser test skipped")
	}
	srv, _ := newFakeServer(t, workbench.Config{Assets: frontend.Assets()})
	root := call(t, srv, "server.info", nil).(map[string]any)["root"].(string)
	noisy := filepath.Join(root, "runs", "noisy")
	writeNoisyRun(t, noisy)
	ck, bare, m := exportFixture(t, root)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	ctx := chromium.New(t, 1400, 1000)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	downloads := t.TempDir()
	allow := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, allow); err != nil {
		t.Fatal(err)
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string]("String("+js+")", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	wait := func(what, js string) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if v, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+js+")")); err == nil && v {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("waiting for %s: %s", what, js)
			}
		}
	}
	wait("the page", `document.body.dataset.ready === "true"`)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	eval(`(async () => { localStorage.removeItem("kiln.smoothing"); workbench.show("runs"); await workbench.runs.refresh(); await workbench.runs.show([` + q(noisy) + `]); return 1 })()`)
	wait("the loss chart", `document.querySelector('.run-chart[data-metric="loss"]')`)

	// The constant learning rate is a value card, not a chart.
	if got := eval(`document.querySelector('.run-value[data-metric="learning rate"]')?.textContent`); got != "lr 0.001(constant)" {
		t.Errorf("learning rate card %q, want lr 0.001 (constant)", got)
	}
	if got := eval(`document.querySelectorAll('.run-chart[data-metric="learning rate"]').length`); got != "0" {
		t.Errorf("%s learning rate charts, want none", got)
	}

	// The plotted per-step loss is the moving average of the slider's weight.
	var raw []float64
	for step := 1; step <= 80; step++ {
		raw = append(raw, noisyLoss(step))
	}
	plotted := func() (smoothed, faint []float64) {
		t.Helper()
		js := `JSON.stringify((() => { const o = echarts.getInstanceByDom(document.querySelector('.run-chart[data-metric="loss"]')).getOption();
			const pick = id => (o.series.find(s => s && s.id === id) || {data: []}).data.map(p => p[1]);
			return [pick(` + q(noisy+"\x00train") + `), pick(` + q(noisy+"\x00train\x00raw") + `)] })())`
		var got [2][]float64
		if err := json.Unmarshal([]byte(eval(js)), &got); err != nil {
			t.Fatal(err)
		}
		return got[0], got[1]
	}
	close := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-9 {
				return false
			}
		}
		return true
	}
	for _, w := range []float64{0.6, 0.9, 0} {
		if w != 0.6 { // 0.6 is where the slider starts
			eval(fmt.Sprintf(`(s => (s.value = "%g", s.dispatchEvent(new Event("input")), 1))(document.getElementById("run-smoothing"))`, w))
		}
		smoothed, faint := plotted()
		want, wantFaint := ema(raw, w), raw
		if w == 0 {
			wantFaint = nil
		}
		if !close(smoothed, want) {
			t.Errorf("smoothing %g: plotted %v, want %v", w, smoothed, want)
		}
		if !close(faint, wantFaint) {
			t.Errorf("smoothing %g: faint raw series %v, want %v", w, faint, wantFaint)
		}
		if got := eval(`document.getElementById("run-smoothing-value").textContent`); got != fmt.Sprintf("%.2f", w) {
			t.Errorf("smoothing shown as %s, want %.2f", got, w)
		}
	}
	shoot(t, ctx, "runs-smoothing", `(s => (s.value = "0.6", s.dispatchEvent(new Event("input")), 1))(document.getElementById("run-smoothing"))`)
	// The validation loss, one value per epoch, is not smoothed.
	if got := eval(`echarts.getInstanceByDom(document.querySelector('.run-chart[data-metric="loss"]')).getOption().series.find(s => s && s.name === "valid").data.length`); got != "2" {
		t.Errorf("validation loss has %s points, want 2", got)
	}

	// Checkpoints download in every format from the run view.
	eval(`workbench.runs.show([` + q(filepath.Dir(filepath.Dir(ck))) + `]).then(() => 1)`)
	wait("the run's checkpoints", `document.querySelector('#run-checkpoints .run-ckpt .ckpt-download')`)
	for _, c := range []struct {
		choice, file string
		load         func(path string) error
	}{
		{"safetensors", "withgraph-epoch-0001.safetensors", func(path string) error {
			sf, err := store.OpenSafetensors(path)
			if err != nil {
				return err
			}
			defer sf.Close()
			sameState(t, m, func(n string) (*tensor.Tensor, error) { return sf.Tensor(n, tensor.CPU()) }, 0)
			return nil
		}},
		{"gguf:f16", "withgraph-epoch-0001.gguf", func(path string) error {
			g, err := store.OpenGGUF(path)
			if err != nil {
				return err
			}
			sameState(t, m, func(n string) (*tensor.Tensor, error) { return g.Tensor(n, tensor.CPU()) }, 1e-2)
			return nil
		}},
		{"onnx", "withgraph-epoch-0001.onnx", func(path string) error {
			got, err := onnx.Load(path, tensor.CPU())
			if err != nil {
				return err
			}
			defer nn.Release(got)
			sd := nn.StateDict(got)
			sameState(t, m, func(n string) (*tensor.Tensor, error) { return sd[n], nil }, 0)
			return nil
		}},
	} {
		eval(`(r => (r.querySelector(".ckpt-format").value = ` + q(c.choice) + `, r.querySelector(".ckpt-download").click(), 1))(document.querySelector("#run-checkpoints .run-ckpt"))`)
		wait(c.choice+" to download", `document.querySelector("#run-checkpoints .ckpt-export-note").dataset.state === "done"`)
		path := filepath.Join(downloads, c.file)
		var err error
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if _, err = os.Stat(path); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: no downloaded file %s: %v", c.choice, c.file, err)
		}
		if err := c.load(path); err != nil {
			t.Errorf("%s: the downloaded file does not load: %v", c.choice, err)
		}
		if got := eval(`document.querySelector("#run-checkpoints .ckpt-export-note").textContent`); !strings.Contains(got, c.file) {
			t.Errorf("%s: the note says %q", c.choice, got)
		}
		os.Remove(path)
	}

	// A run without a graph: ONNX is disabled, and the view says what to do.
	eval(`workbench.runs.show([` + q(filepath.Dir(filepath.Dir(bare))) + `]).then(() => 1)`)
	wait("the bare run's checkpoints", `document.querySelector('#run-checkpoints .run-ckpt')?.dataset.path === `+q(bare))
	if got := eval(`document.querySelector('#run-checkpoints option[value="onnx"]').disabled`); got != "true" {
		t.Error("ONNX is offered for a run without a graph")
	}
	if got := eval(`document.querySelector('#run-checkpoints .ckpt-graph-hint')?.textContent`); !strings.Contains(got, "no model graph recorded") || !strings.Contains(got, "onnx.Export(") {
		t.Errorf("graph hint %q", got)
	}
	shoot(t, ctx, "runs-checkpoints-export", "1")
}

// shoot runs js, then writes a screenshot of the page as NAME.jpg into
// $KILN_SCREENSHOTS when it is set.
func shoot(t *testing.T, ctx context.Context, name, js string) {
	t.Helper()
	dir := os.Getenv("KILN_SCREENSHOTS")
	if dir == "" {
		return
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](js)); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	time.Sleep(300 * time.Millisecond) // a redraw
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
	if err == nil && os.MkdirAll(dir, 0o755) == nil {
		err = os.WriteFile(filepath.Join(dir, name+".jpg"), shot, 0o644)
	}
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

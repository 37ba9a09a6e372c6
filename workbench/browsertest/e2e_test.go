//go:build unix

package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/frontend"
	"github.com/kiln-ml/kiln/internal/chromium"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// repoRoot is the module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// workbench is a running `kiln workbench --browser`.
type workbench struct {
	url, base string // the printed URL (with the token) and its origin
	root      string // the temporary root with notebooks/ and runs/
	runs      string
	registry  string // the run registry the workbench and its kernels use (KILN_RUN_REGISTRY)
	log       *testutil.Buffer
}

// startWorkbench builds kiln, prepares a root and starts the server.
func startWorkbench(t *testing.T) *workbench {
	repo := repoRoot(t)
	tmp := t.TempDir()
	kiln := filepath.Join(tmp, "kiln")
	build := exec.Command("go", "build", "-o", kiln, "./cmd/kiln")
	build.Dir = repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kiln: %v\n%s", err, out)
	}
	w := &workbench{root: filepath.Join(tmp, "root"), registry: filepath.Join(tmp, "registry"), log: &testutil.Buffer{}}
	w.runs = filepath.Join(w.root, "runs")
	nbDir := filepath.Join(w.root, "notebooks")
	for _, d := range []string{nbDir, w.runs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(repo, "notebooks", "*.ipynb"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(nbDir, filepath.Base(f)), string(b))
	}
	writeFile(t, filepath.Join(nbDir, "corrupt.ipynb"), `{"cells": [ {"cell_type": "code", "source": `)
	writeFile(t, filepath.Join(nbDir, "scratch.ipynb"), `{"cells": [], "metadata": {"kernelspec": {"name": "kiln", "display_name": "Kiln (Go)", "language": "go"}}, "nbformat": 4, "nbformat_minor": 5}`)

	addr := freeAddr(t)
	cmd := exec.Command(kiln, "workbench", "--browser", "--addr", addr, "--root", w.root, "--runs", w.runs)
	cmd.Dir = w.root
	// The runs its kernels train register here, never in the user's registry.
	cmd.Env = append(os.Environ(), "KILN_RUN_REGISTRY="+w.registry)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its kernels go with it
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kiln workbench: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("kiln workbench output:\n%s", w.log.String())
		}
	})
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_\-]+`)
	found := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer io.Copy(w.log, pr) // a line too long for the scanner: keep draining
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(w.log, line)
			if m := urlRE.FindString(line); m != "" && !sent {
				found <- m
				sent = true
			}
		}
	}()
	select {
	case w.url = <-found:
	case <-done:
		<-scanned
		if strings.Contains(w.log.String(), `unknown command "workbench"`) {
			t.Skip("this kiln has no workbench command (the engine, package workbench, is not merged): end-to-end test skipped")
		}
		t.Fatalf("kiln workbench exited before printing its URL:\n%s", w.log.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("kiln workbench printed no URL in 90 s:\n%s", w.log.String())
	}
	w.base = w.url[:strings.Index(w.url, "/?")]
	return w
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newTab starts headless chromium with a fresh profile.
func newTab(t *testing.T) context.Context {
	return chromium.New(t, 1500, 1000)
}

// page drives the workbench UI in one tab.
type page struct {
	t    *testing.T
	ctx  context.Context
	shot string // screenshot folder
}

// eval runs a JavaScript expression and decodes its value into T.
func eval[T any](p *page, js string, opts ...chromedp.EvaluateOption) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		p.screenshot("failed")
		p.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// wait polls a JavaScript expression until it is true.
func (p *page) wait(what, js string, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool]("!!("+js+")"))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			p.screenshot("timeout")
			p.t.Fatalf("waiting %v for %s (%s): err %v; page errors: %s", timeout, what, js, err, eval[string](p, errorsJS))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// errorsJS collects what the page shows as errors, for failure messages.
const errorsJS = `Array.from(document.querySelectorAll(".error-box:not([hidden]), #restart-notice:not([hidden])")).map(e => e.id + ": " + e.textContent).join(" | ")`

func (p *page) screenshot(name string) {
	// Scrolled through first: editors measure their lines once seen.
	chromedp.Run(p.ctx, chromedp.Evaluate[bool](scrollThroughJS, chromedp.EvalAwaitPromise))
	b, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(80))
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(p.shot, "workbench-"+name+".jpg")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// scrollThroughJS scrolls the page from top to bottom and back, a screen at
// a time, and resolves to true.
const scrollThroughJS = `(async () => { const h = document.documentElement.scrollHeight;
for (let y = 0; y < h; y += innerHeight / 2) { scrollTo(0, y); await new Promise(r => requestAnimationFrame(() => setTimeout(r, 20))); }
scrollTo(0, 0); await new Promise(r => setTimeout(r, 50)); return true; })()`

// cellState is a cell as the page shows it.
type cellState struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	State  string `json:"state"`
	Source string `json:"source"`
	Text   string `json:"text"` // the outputs' text
	Errors int    `json:"errors"`
}

const cellsJS = `JSON.stringify(workbench.notebook.cells.map(c => ({id: c.id, type: c.type, state: c.root.dataset.state,
source: c.source, text: c.root.querySelector(".cell-outputs").innerText,
errors: c.root.querySelectorAll(".output-error").length})))`

func (p *page) cells() []cellState {
	var cs []cellState
	if err := json.Unmarshal([]byte(eval[string](p, cellsJS)), &cs); err != nil {
		p.t.Fatal(err)
	}
	return cs
}

// run adds a code cell to the open notebook, runs it and returns it when done.
func (p *page) run(code string, timeout time.Duration) cellState {
	p.t.Helper()
	id := eval[string](p, `workbench.notebook.addCell("code", undefined, `+js(code)+`).id`)
	sel := `document.querySelector('[data-cell-id=` + js(id) + `]')`
	eval[bool](p, sel+`.querySelector(".cell-run").click(), true`)
	p.wait("cell "+id+" to finish", sel+`.dataset.state === "ok" || `+sel+`.dataset.state === "error"`, timeout)
	for _, c := range p.cells() {
		if c.ID == id {
			return c
		}
	}
	p.t.Fatalf("cell %s vanished", id)
	return cellState{}
}

func (p *page) tab(name string) {
	eval[bool](p, `document.querySelector('.tab[data-tab=`+js(name)+`]').click(), true`)
}

func TestBrowserEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test builds kiln and runs notebooks")
	}
	if !frontend.Built() {
		t.Skip("the workbench UI is not built (frontend/web/app missing: run make assets): end-to-end test skipped")
	}
	ctx := newTab(t)
	shots := screenshotDir(t)
	start := time.Now()
	w := startWorkbench(t)
	t.Logf("workbench up in %v at %s", time.Since(start).Round(time.Millisecond), w.base)
	p := &page{t: t, ctx: ctx, shot: shots}
	step := func(name string) func() {
		t0 := time.Now()
		return func() { t.Logf("%-28s %v", name, time.Since(t0).Round(time.Millisecond)) }
	}

	// Without the token everything is refused.
	for _, r := range []struct{ method, path string }{{"GET", "/"}, {"POST", "/api/call/server.info"}, {"GET", "/ws"}} {
		req, _ := http.NewRequest(r.method, w.base+r.path, strings.NewReader("{}"))
		if r.path == "/ws" {
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s without the token: HTTP %d, want 403", r.method, r.path, res.StatusCode)
		}
	}

	done := step("page ready")
	if _, err := chromedp.Run(ctx, chromedp.Navigate(w.url)); err != nil {
		t.Fatal(err)
	}
	p.wait("the page to start", `document.body.dataset.ready === "true"`, 60*time.Second)
	p.wait("an idle kernel", `document.querySelector("#kernel-status").dataset.status === "idle"`, 120*time.Second)
	done()

	// Run all of notebooks/01-tensors.ipynb.
	done = step("01-tensors run all")
	p.tab("notebook") // the page opens on the file browser
	eval[bool](p, `(s => (s.value = "notebooks/01-tensors.ipynb", document.querySelector("#nb-open").click(), true))(document.querySelector("#nb-select"))`)
	p.wait("the notebook's cells", `document.querySelector("#cells").dataset.path === "notebooks/01-tensors.ipynb" && workbench.notebook.cells.length > 10`, 30*time.Second)
	before := p.cells()
	eval[bool](p, `document.querySelector("#nb-run-all").click(), true`)
	p.wait("Run all to finish", `document.querySelector("#cells").dataset.runAll === "done"`, 10*time.Minute)
	done()
	after := p.cells()
	if len(after) != len(before) {
		t.Errorf("the notebook had %d cells, %d after Run all", len(before), len(after))
	}
	code, withOutput, failed := 0, 0, []cellState{}
	for _, c := range after {
		if c.Type != "code" || strings.TrimSpace(c.Source) == "" {
			continue
		}
		code++
		if strings.TrimSpace(c.Text) != "" {
			withOutput++
		}
		if c.State != "ok" {
			failed = append(failed, c)
		}
	}
	t.Logf("01-tensors: %d code cells, %d with output, %d failed", code, withOutput, len(failed))
	// Every code cell of the notebook prints or shows something; a cell's
	// old outputs are cleared when it runs, so these are the new ones.
	if withOutput < code-1 {
		t.Errorf("only %d of %d code cells show output", withOutput, code)
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Text, "panic") || failed[0].Errors != 1 {
		t.Errorf("want exactly the one deliberately panicking cell to fail with its panic shown, got %+v", failed)
	}
	p.screenshot("01-tensors")

	// A corrupt notebook shows an error; the open one stays.
	eval[bool](p, `(s => (s.value = "notebooks/corrupt.ipynb", document.querySelector("#nb-open").click(), true))(document.querySelector("#nb-select"))`)
	p.wait("the corrupt notebook's error", `!document.querySelector("#nb-error").hidden && document.querySelector("#nb-error").textContent.includes("corrupt.ipynb")`, 30*time.Second)
	if n := len(p.cells()); n != len(before) {
		t.Errorf("after failing to open a corrupt notebook %d cells are shown, want the %d of the open one", n, len(before))
	}
	p.screenshot("corrupt-notebook")

	// A scratch notebook for the rest.
	eval[bool](p, `(s => (s.value = "notebooks/scratch.ipynb", document.querySelector("#nb-open").click(), true))(document.querySelector("#nb-select"))`)
	p.wait("the scratch notebook", `document.querySelector("#cells").dataset.path === "notebooks/scratch.ipynb" && document.querySelector("#nb-error").hidden`, 30*time.Second)

	// Choosing the strict device puts the next cell's tensors on it.
	done = step("strict device")
	p.tab("devices")
	p.wait("the devices", `document.querySelector('.device-row[data-device^="strict"]')`, 30*time.Second)
	eval[bool](p, `document.querySelector('.device-row[data-device^="strict"] .device-use').click(), true`)
	p.wait("strict to be the default", `document.querySelector('.device-row[data-device^="strict"]').dataset.default === "true"`, 30*time.Second)
	p.screenshot("devices")
	p.tab("notebook")
	c := p.run(deviceCell, 60*time.Second)
	if c.State != "ok" || !strings.Contains(c.Text, "device: strict") {
		t.Errorf("after choosing strict the cell's tensor is not on it: state %s, output %q", c.State, c.Text)
	}
	deviceOut := c
	p.tab("devices")
	p.wait("the cpu device", `document.querySelector('.device-row[data-device^="cpu"]')`, 30*time.Second)
	eval[bool](p, `document.querySelector('.device-row[data-device^="cpu"] .device-use').click(), true`)
	p.wait("cpu to be the default again", `document.querySelector('.device-row[data-device^="cpu"]').dataset.default === "true"`, 30*time.Second)
	p.tab("notebook")
	done()

	// A chart output: its script runs and echarts draws it.
	done = step("chart output")
	c = p.run(chartCell, 60*time.Second)
	if c.State != "ok" {
		t.Errorf("the chart cell failed: %s", c.Text)
	}
	p.wait("the chart drawn by echarts", `(() => { const b = document.querySelector('[data-cell-id=`+js(c.ID)+`] .kiln-viz .kiln-viz-chart');
return b && window.echarts && window.echarts.getInstanceByDom(b) && getComputedStyle(b).display !== "none"; })()`, 30*time.Second)
	done()

	// A model: its tree and graph.
	done = step("model views")
	c = p.run(modelCell, 60*time.Second)
	if c.State != "ok" {
		t.Fatalf("the model cell failed: %s", c.Text)
	}
	p.tab("variables")
	p.wait("net in the variables", `document.querySelector('.var-row[data-name="net"]')`, 30*time.Second)
	p.screenshot("variables")
	p.tab("model")
	p.wait("net offered as a module", `document.querySelector('#model-name option[value="net"]')`, 30*time.Second)
	eval[bool](p, `document.querySelector("#model-name").value = "net", document.querySelector("#model-show").click(), true`)
	p.wait("the model graph and tree", `document.querySelector("#model-graph svg") && document.querySelector("#model-tree").textContent.includes("Linear")`, 60*time.Second)
	p.screenshot("model")
	p.tab("notebook")
	done()

	// A short MNIST run from a cell: the chart gains points while it runs; Stop cancels it.
	done = step("MNIST run and stop")
	runDir := filepath.Join(w.runs, "mnist-e2e")
	mnist := mnistCell(runDir)
	id := eval[string](p, `workbench.notebook.addCell("code", undefined, `+js(mnist)+`).id`)
	cellSel := `document.querySelector('[data-cell-id=` + js(id) + `]')`
	eval[bool](p, cellSel+`.querySelector(".cell-run").click(), true`)
	p.tab("runs")
	rowSel := `Array.from(document.querySelectorAll(".run-row")).find(r => r.dataset.dir.endsWith("mnist-e2e"))`
	p.wait("the run in the list", rowSel+` || (workbench.runs.refresh(), false)`, 120*time.Second)
	eval[bool](p, rowSel+`.querySelector(".run-open").click(), true`)
	points := `(() => { const c = document.querySelector('.run-chart[data-metric="loss"]'); return c ? +c.dataset.points : 0; })()`
	p.wait("loss points", points+` > 0`, 120*time.Second)
	var seen []int
	for len(seen) < 3 {
		n := eval[int](p, points)
		if len(seen) == 0 || n > seen[len(seen)-1] {
			seen = append(seen, n)
		}
		if st := eval[string](p, cellSel+`.dataset.state`); st != "running" {
			t.Fatalf("the training cell stopped (%s) before the chart grew: points %v: %s", st, seen, eval[string](p, cellSel+`.innerText`))
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("loss chart points while running: %v", seen)
	p.screenshot("run-live")
	eval[bool](p, `document.querySelector('.run-progress .run-stop').click(), true`)
	p.wait("the run to end cancelled", `document.querySelector('.run-progress[data-status="cancelled"]')`, 120*time.Second)
	p.wait("the training cell to finish", cellSel+`.dataset.state !== "running"`, 120*time.Second)
	if out := eval[string](p, cellSel+`.innerText`); !strings.Contains(out, "run ended: cancelled") {
		t.Errorf("the training cell says %q, want it to end cancelled", out)
	}
	p.screenshot("run-stopped")
	done()

	// Export a checkpoint and load it with store.
	done = step("checkpoint export")
	out := filepath.Join(t.TempDir(), "exported.safetensors")
	p.tab("checkpoints")
	p.wait("the run among the checkpoints' runs", `Array.from(document.querySelectorAll("#ckpt-run option")).some(o => o.value.endsWith("mnist-e2e")) || (workbench.checkpoints.refresh(), false)`, 30*time.Second)
	eval[bool](p, `workbench.checkpoints.select(Array.from(document.querySelectorAll("#ckpt-run option")).find(o => o.value.endsWith("mnist-e2e")).value).then(() => true)`, chromedp.EvalAwaitPromise)
	p.wait("the run's checkpoints", `document.querySelector('.ckpt-row[data-damaged="false"]')`, 30*time.Second)
	eval[bool](p, `document.querySelector("#ckpt-out").value = `+js(out)+`, document.querySelector('.ckpt-row[data-damaged="false"] .ckpt-export').click(), true`)
	p.wait("the export", `document.querySelector("#ckpt-result").dataset.state === "done"`, 60*time.Second)
	p.screenshot("checkpoints")
	ad := tensor.CPU().Autodiff()
	model := nn.NewSequential(nn.NewLinear(ad, 784, 32), nn.ReLU{}, nn.NewLinear(ad, 32, 10))
	if err := store.LoadModel(model, out); err != nil {
		t.Errorf("the exported checkpoint does not load: %v", err)
	}
	done()

	// A run directory with a damaged checkpoint: the error shows, the app goes on.
	done = step("damaged checkpoint")
	damaged := filepath.Join(w.runs, "damaged-e2e")
	copyDir(t, runDir, damaged)
	models, _ := filepath.Glob(filepath.Join(damaged, "checkpoints", "*", "model.safetensors"))
	if len(models) == 0 {
		t.Fatalf("no checkpoint in %s to damage", damaged)
	}
	for _, m := range models {
		writeFile(t, m, "not a safetensors file")
	}
	p.wait("the damaged run", `Array.from(document.querySelectorAll("#ckpt-run option")).some(o => o.value.endsWith("damaged-e2e")) || (workbench.checkpoints.refresh(), false)`, 30*time.Second)
	eval[bool](p, `workbench.checkpoints.select(Array.from(document.querySelectorAll("#ckpt-run option")).find(o => o.value.endsWith("damaged-e2e")).value).then(() => true)`, chromedp.EvalAwaitPromise)
	p.wait("the damaged checkpoint's error", `document.querySelector('.ckpt-row[data-damaged="true"] .ckpt-error') && document.querySelector('.ckpt-row[data-damaged="true"] .ckpt-error').textContent.length > 0`, 30*time.Second)
	p.screenshot("checkpoint-damaged")
	done()

	// Both runs side by side.
	p.tab("runs")
	p.wait("both runs listed", `document.querySelectorAll(".run-row").length >= 2`, 30*time.Second)
	eval[bool](p, `document.querySelectorAll(".run-row .run-check").forEach(c => c.checked = true), document.querySelector("#runs-compare").click(), true`)
	p.wait("the comparison", `document.querySelector("#run-view").dataset.mode === "compare" && document.querySelectorAll(".run-progress").length >= 2 && +(document.querySelector('.run-chart[data-metric="loss"]') || {dataset: {}}).dataset.points > 0`, 30*time.Second)
	p.screenshot("runs-compare")
	p.tab("notebook")

	// Completion from the kernel while typing; Interrupt stops a long cell.
	done = step("completion and interrupt")
	id = eval[string](p, `(c => (c.view.dispatch({changes: {from: 0, insert: "fmt.Pri"}, selection: {anchor: 7}}), c.view.focus(), c.id))(workbench.notebook.addCell("code"))`)
	if _, err := chromedp.Run(ctx, chromedp.KeyEvent("n")); err != nil {
		t.Fatal(err)
	}
	p.wait("completions from the kernel", `document.querySelector(".cm-tooltip-autocomplete") && document.querySelector(".cm-tooltip-autocomplete").textContent.includes("Println")`, 30*time.Second)
	eval[bool](p, `workbench.notebook.deleteCell(workbench.notebook.cells.find(c => c.id === `+js(id)+`)), true`)
	id = eval[string](p, `workbench.notebook.addCell("code", undefined, "time.Sleep(60 * time.Second)\nfmt.Println(\"not interrupted\")").id`)
	sel := `document.querySelector('[data-cell-id=` + js(id) + `]')`
	eval[bool](p, sel+`.querySelector(".cell-run").click(), true`)
	p.wait("the long cell to run", sel+`.dataset.state === "running" && document.querySelector("#kernel-status").dataset.status === "busy"`, 30*time.Second)
	t0 := time.Now()
	eval[bool](p, `document.querySelector("#nb-interrupt").click(), true`)
	p.wait("the interrupted cell to end", sel+`.dataset.state !== "running"`, 30*time.Second)
	if out := eval[string](p, sel+`.querySelector(".cell-outputs").innerText`); strings.Contains(out, "not interrupted") || !strings.Contains(out, "Interrupted") || time.Since(t0) > 30*time.Second {
		t.Errorf("Interrupt did not stop the cell: %q", out)
	}
	done()

	// A panic in a goroutine that compiled code started kills the kernel: a
	// restart notice, the notebook intact, the next cell runs.
	done = step("kernel crash and restart")
	cellsBefore := p.cells()
	id = eval[string](p, `workbench.notebook.addCell("code", undefined, `+js(crashCell)+`).id`)
	eval[bool](p, `document.querySelector('[data-cell-id=`+js(id)+`] .cell-run').click(), true`)
	p.wait("the restart notice", `!document.querySelector("#restart-notice").hidden`, 120*time.Second)
	p.wait("the kernel back to idle", `document.querySelector("#kernel-status").dataset.status === "idle"`, 120*time.Second)
	p.screenshot("kernel-restarted")
	cellsAfter := p.cells()
	if len(cellsAfter) != len(cellsBefore)+1 {
		t.Errorf("%d cells before the crash, %d after, want one more (the crashing cell)", len(cellsBefore), len(cellsAfter))
	}
	for _, c := range cellsAfter {
		if c.ID == deviceOut.ID && c.Text != deviceOut.Text {
			t.Errorf("the device cell's output changed across the restart: %q, was %q", c.Text, deviceOut.Text)
		}
	}
	c = p.run("fmt.Println(6 * 7)", 60*time.Second)
	if c.State != "ok" || !strings.Contains(c.Text, "42") {
		t.Errorf("after the restart a cell says %q (%s), want 42", c.Text, c.State)
	}
	done()
	p.screenshot("final")
}

// The cells the test runs in a scratch notebook.
const (
	deviceCell = "dev, _ := tensor.DefaultDevice()\nx := tensor.Ones(dev, 2, 3)\nfmt.Println(\"device:\", x.Device())"
	modelCell  = "ad := tensor.CPU().Autodiff()\nad.Seed(1)\nnet := nn.NewSequential(nn.NewLinear(ad, 784, 32), nn.ReLU{}, nn.NewLinear(ad, 32, 10))\nfmt.Println(\"model ready\")"
	chartCell  = "viz.Line([]float64{1, 2, 3, 4}, []float64{3, 1, 4, 1})"
	// A go statement's goroutine is guarded by the kernel; one a compiled
	// function starts is not, and its panic ends the process.
	crashCell = "time.AfterFunc(0, func() { panic(\"boom in a goroutine\") })\ntime.Sleep(5 * time.Second)"
)

// mnistCell trains the model cell's net on 2000 MNIST images, logging
// every 5 steps (tens of records a second on an idle machine) and
// checkpointing every 200, for 1000 epochs: far longer than the test waits
// before pressing Stop.
func mnistCell(runDir string) string {
	return fmt.Sprintf(`mnistDir, err := data.MNISTDir()
if err != nil {
	panic(err)
}
trainSet, testSet, err := data.LoadMNIST(mnistDir)
if err != nil {
	panic(err)
}
trainSet = trainSet.Subset(2000)
testSet = testSet.Subset(200)
trainSet.Standardize, testSet.Standardize = true, true
trainLoader, err := data.NewLoader(trainSet, data.LoaderConfig{BatchSize: 20, Shuffle: true, Seed: 1, Device: tensor.CPU()})
if err != nil {
	panic(err)
}
validLoader, err := data.NewLoader(testSet, data.LoaderConfig{BatchSize: 200, Device: tensor.CPU()})
if err != nil {
	panic(err)
}
ck := train.NewCheckpoints()
ck.EverySteps = 200
sup := &train.Supervised{Config: train.Config{Epochs: 1000, LogEvery: 5, RunDir: %q},
	Train: trainLoader, Valid: validLoader, Checkpoint: ck}
res, err := sup.Fit(context.Background(), &train.Learner{Model: net, Optimizer: optim.NewAdamW(optim.AdamWConfig{LR: 0.001})})
fmt.Println("run ended:", res.Reason, err)`, runDir)
}

// copyDir copies a directory tree.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

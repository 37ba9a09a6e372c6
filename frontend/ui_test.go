//go:build unix

package frontend

// A browser test of the built UI alone, against a fake engine that speaks
// the workbench API (workbench/API.md): HTTP calls answered from a script,
// and updates pushed over a minimal WebSocket. It checks what the UI itself
// is responsible for: notebooks render and run, HTML outputs run their
// scripts, errors show their line, choosing a device calls devices.set,
// a run logging every 20 ms charts while it runs (throttled redraws, not
// debounced ones), and a kernel restart shows its notice. The end-to-end
// test against the real engine is workbench/browsertest.

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/chromium"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// fakeEngine answers the workbench API and pushes updates to every socket.
type fakeEngine struct {
	mu      sync.Mutex
	conns   []*bufio.ReadWriter
	calls   []string
	params  map[string]json.RawMessage
	device  string
	updates int // run.update records sent
}

func (f *fakeEngine) push(topic string, data any) {
	b, _ := json.Marshal(map[string]any{"topic": topic, "data": data})
	var h []byte
	switch n := len(b); {
	case n < 126:
		h = []byte{0x81, byte(n)}
	case n < 1<<16:
		h = []byte{0x81, 126, byte(n >> 8), byte(n)}
	default:
		h = append([]byte{0x81, 127}, binary.BigEndian.AppendUint64(nil, uint64(n))...)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Write(h)
		c.Write(b)
		c.Flush()
	}
}

func (f *fakeEngine) ws(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	rw.Flush()
	f.mu.Lock()
	f.conns = append(f.conns, rw)
	f.mu.Unlock()
	go func() { // hold the connection until the client goes
		buf := make([]byte, 512)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()
}

// scrollThroughJS scrolls the page from top to bottom and back, a screen at
// a time, and resolves to true.
const scrollThroughJS = `(async () => { const h = document.documentElement.scrollHeight;
for (let y = 0; y < h; y += innerHeight / 2) { scrollTo(0, y); await new Promise(r => requestAnimationFrame(() => setTimeout(r, 20))); }
scrollTo(0, 0); await new Promise(r => setTimeout(r, 50)); return true; })()`

var fakeCells = []map[string]any{
	{"id": "md1", "cell_type": "markdown", "source": "# Title\n\nSome *text*."},
	{"id": "c1", "cell_type": "code", "source": "fmt.Println(1)", "outputs": []any{
		map[string]any{"output_type": "stream", "name": "stdout", "text": "saved output\n"}}, "execution_count": 1},
}

func (f *fakeEngine) call(method string, params json.RawMessage) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, method)
	f.params[method] = params
	f.mu.Unlock()
	var p map[string]any
	json.Unmarshal(params, &p)
	switch method {
	case "server.info":
		return map[string]any{"version": "test", "root": "/fake", "kernel": map[string]any{"status": "idle", "restarts": 0}}, nil
	case "kernel.status":
		return map[string]any{"status": "idle", "restarts": 0}, nil
	case "notebook.list":
		return []any{map[string]any{"path": "a.ipynb"}, map[string]any{"path": "bad.ipynb"}}, nil
	case "notebook.open":
		if p["path"] == "bad.ipynb" {
			return nil, fmt.Errorf("notebook bad.ipynb: invalid JSON at offset 12")
		}
		if p["path"] == "notebooks/01-tensors.ipynb" { // a real notebook with its saved outputs
			b, err := os.ReadFile(filepath.Join("..", "notebooks", "01-tensors.ipynb"))
			if err != nil {
				return nil, err
			}
			var nb map[string]any
			if err := json.Unmarshal(b, &nb); err != nil {
				return nil, err
			}
			nb["path"] = p["path"]
			return nb, nil
		}
		return map[string]any{"path": p["path"], "cells": fakeCells}, nil
	case "notebook.update", "notebook.save", "devices.set", "runs.stop", "kernel.interrupt", "kernel.restart":
		if method == "devices.set" {
			f.mu.Lock()
			f.device = p["name"].(string)
			f.mu.Unlock()
		}
		return map[string]any{}, nil
	case "kernel.execute":
		code, _ := p["code"].(string)
		path, id := p["path"], p["cell_id"]
		live := map[string]any{"output_type": "stream", "name": "stdout", "text": "live line\n"}
		f.push("cell.output", map[string]any{"path": path, "cell_id": id, "output": live})
		if strings.Contains(code, "bad") {
			return map[string]any{"execution_count": 2, "status": "error", "outputs": []any{map[string]any{
				"output_type": "error", "ename": "CompileError", "evalue": "2:3: undefined: bad",
				"traceback": []string{"   2 |   bad", "     |   ^"}}}}, nil
		}
		html := `<div id="scripted">waiting</div><script>document.getElementById("scripted").textContent = "script ran"; window.scriptRan = (window.scriptRan||0) + 1;</script>`
		return map[string]any{"execution_count": 3, "status": "ok", "outputs": []any{live,
			map[string]any{"output_type": "display_data", "data": map[string]any{"text/html": html, "text/plain": "html"}}}}, nil
	case "kernel.complete":
		return map[string]any{"matches": []string{"Println", "Printf"}, "cursor_start": 4, "cursor_end": 6}, nil
	case "devices.list":
		f.mu.Lock()
		defer f.mu.Unlock()
		def := f.device
		if def == "" {
			def = "cpu"
		}
		return map[string]any{"devices": []any{
			map[string]any{"name": "cpu", "kind": "cpu", "memory": 1 << 30, "cores": 2, "default": def == "cpu"},
			map[string]any{"name": "strict", "kind": "strict", "default": def == "strict"}}}, nil
	case "variables.list":
		return map[string]any{"variables": []any{
			map[string]any{"name": "net", "type": "nn.Sequential", "params": 25450},
			map[string]any{"name": "x", "type": "*tensor.Tensor", "shape": []int{2, 3}, "dtype": "float32", "device": "cpu", "bytes": 24}}}, nil
	case "model.tree", "model.graph":
		if p["name"] != "net" {
			return nil, fmt.Errorf("%v is not a model", p["name"])
		}
		if method == "model.tree" {
			return map[string]any{"html": "<ul class=tree><li>Sequential<ul><li>Linear(784, 32)</li></ul></li></ul>"}, nil
		}
		return map[string]any{"svg": `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="40"><text x="5" y="20">Linear</text></svg>`}, nil
	case "checkpoints.list":
		return []any{
			map[string]any{"path": "/runs/r1/checkpoints/epoch-0001-step-000020", "epoch": 1, "step": 20, "metrics": map[string]any{"valid.loss": 0.5}},
			map[string]any{"path": "/runs/r1/checkpoints/epoch-0002-step-000040", "epoch": 2, "step": 40, "error": "checkpoint: model.safetensors: sha256 mismatch"}}, nil
	case "checkpoints.export":
		return map[string]any{"out": p["out"], "bytes": 1234}, nil
	case "runs.list":
		return []any{map[string]any{"dir": "/runs/r1", "name": "r1", "status": "running", "epochs": 0, "step": 0},
			map[string]any{"dir": "/runs/dp", "name": "dp", "status": "completed", "epochs": 1, "step": 8, "world_size": 2}}, nil
	case "runs.snapshot":
		if p["dir"] == "/runs/dp" { // a data-parallel run: its start record has world_size
			t0 := time.Now().Add(-time.Minute)
			return map[string]any{"dir": "/runs/dp", "records": []any{
				map[string]any{"kind": "start", "time": t0.Format(time.RFC3339Nano), "config": map[string]any{"epochs": 1}, "batches": 8, "world_size": 2},
				map[string]any{"kind": "end", "time": t0.Add(time.Second).Format(time.RFC3339Nano), "epoch": 1, "step": 8, "reason": "completed"}}, "next": 2}, nil
		}
		return map[string]any{"dir": "/runs/r1", "records": []any{map[string]any{"kind": "start", "time": time.Now().Format(time.RFC3339Nano),
			"config": map[string]any{"epochs": 2}, "batches": 1000}}, "next": 1}, nil
	}
	return nil, fmt.Errorf("unknown method %q", method)
}

func (f *fakeEngine) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServerFS(Assets()))
	mux.HandleFunc("/ws", f.ws)
	mux.HandleFunc("POST /api/call/{method}", func(w http.ResponseWriter, r *http.Request) {
		var params json.RawMessage
		json.NewDecoder(r.Body).Decode(&params)
		res, err := f.call(r.PathValue("method"), params)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"result": res})
	})
	return mux
}

func TestUIAgainstFakeEngine(t *testing.T) {
	if !Built() {
		t.Skip("the workbench UI is not built (run make assets): UI test skipped")
	}
	if path, ok := chromium.Path(); !ok {
		t.Skipf("no chromium at %s: UI test skipped", path)
	}
	if _, err := fs.Stat(Assets(), "index.html"); err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{params: map[string]json.RawMessage{}}
	srv := httptest.NewServer(f.handler())
	defer srv.Close()

	ctx := chromium.New(t, 1400, 900)
	ctx, cancel2 := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel2()

	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string]("String("+js+")"))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	wait := func(what, js string) { t.Helper(); waitFor(t, ctx, what, js) }
	shoot := func(name string) {
		// Scrolled through first: editors measure their lines once seen.
		chromedp.Run(ctx, chromedp.Evaluate[bool](scrollThroughJS, chromedp.EvalAwaitPromise))
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
		if err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		dir := filepath.Join("..", "bin", "screenshots")
		if d := os.Getenv("KILN_SCREENSHOTS"); d != "" {
			dir = d
		}
		if os.MkdirAll(dir, 0o755) == nil {
			os.WriteFile(filepath.Join(dir, name+".jpg"), shot, 0o644)
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/?token=abc&notebook=a.ipynb")); err != nil {
		t.Fatal(err)
	}
	wait("the page", `document.body.dataset.ready === "true"`)
	if got := eval(`document.querySelector("#kernel-status").dataset.status`); got != "idle" {
		t.Errorf("kernel status %q, want idle", got)
	}
	if got := eval(`document.querySelectorAll("#cells .cell").length`); got != "2" {
		t.Fatalf("%s cells shown, want 2", got)
	}
	if got := eval(`document.querySelector('[data-cell-id="md1"] .md-view h1').textContent`); got != "Title" {
		t.Errorf("Markdown heading %q, want Title", got)
	}
	if got := eval(`document.querySelector('[data-cell-id="c1"] .cell-outputs').innerText`); !strings.Contains(got, "saved output") {
		t.Errorf("saved output not shown: %q", got)
	}

	// Run a cell: live output, then the result with an HTML output whose script runs.
	eval(`document.querySelector('[data-cell-id="c1"] .cell-run').click()`)
	wait("the cell to finish", `document.querySelector('[data-cell-id="c1"]').dataset.state === "ok"`)
	if got := eval(`document.querySelector("#scripted") && document.querySelector("#scripted").textContent`); got != "script ran" {
		t.Errorf("HTML output's script did not run: %q", got)
	}
	if got := eval(`document.querySelector('[data-cell-id="c1"] .cell-outputs').innerText.split("live line").length - 1`); got != "1" {
		t.Errorf("the live output shows %s times, want once", got)
	}
	if got := eval(`document.querySelector('[data-cell-id="c1"] .cell-count').textContent`); got != "[3]" {
		t.Errorf("execution count %q, want [3]", got)
	}
	var exec struct{ Path, CellID, Code string }
	f.mu.Lock()
	json.Unmarshal(f.params["kernel.execute"], &exec)
	var upd struct {
		Path  string
		Cells []map[string]any
	}
	json.Unmarshal(f.params["notebook.update"], &upd)
	f.mu.Unlock()
	if exec.Path != "a.ipynb" || exec.Code != "fmt.Println(1)" {
		t.Errorf("kernel.execute got %+v", exec)
	}
	if upd.Path != "a.ipynb" || len(upd.Cells) != 2 {
		t.Errorf("notebook.update got %s with %d cells, want a.ipynb with 2", upd.Path, len(upd.Cells))
	}

	// A failing cell shows its error and the line it points at.
	id := eval(`workbench.notebook.addCell("code", undefined, "x := 1\n  bad").id`)
	eval(`document.querySelector('[data-cell-id="` + id + `"] .cell-run').click()`)
	wait("the error", `document.querySelector('[data-cell-id="`+id+`"]').dataset.state === "error"`)
	if got := eval(`document.querySelector('[data-cell-id="` + id + `"] .output-error').dataset.line`); got != "2" {
		t.Errorf("error line %q, want 2", got)
	}
	if got := eval(`document.querySelectorAll('[data-cell-id="` + id + `"] .cm-error-line').length`); got != "1" {
		t.Errorf("%s editor lines marked, want 1", got)
	}

	// Typing in a code cell completes from the kernel.
	eval(`(v => (v.dispatch({changes: {from: 0, to: v.state.doc.length, insert: "fmt.P"}, selection: {anchor: 5}}), v.focus(), 1))(workbench.notebook.cells[1].view)`)
	if _, err := chromedp.Run(ctx, chromedp.KeyEvent("r")); err != nil {
		t.Fatal(err)
	}
	wait("the completion list", `document.querySelector(".cm-tooltip-autocomplete")`)
	if got := eval(`document.querySelector(".cm-tooltip-autocomplete").textContent`); !strings.Contains(got, "Println") {
		t.Errorf("completions %q, want Println from kernel.complete", got)
	}
	f.mu.Lock()
	complete := string(f.params["kernel.complete"])
	f.mu.Unlock()
	if !strings.Contains(complete, `"code":"fmt.Pr"`) || !strings.Contains(complete, `"cursor":6`) {
		t.Errorf("kernel.complete got %s", complete)
	}

	// A real notebook's saved outputs all render.
	eval(`workbench.notebook.open("notebooks/01-tensors.ipynb")`)
	wait("01-tensors", `workbench.notebook.path === "notebooks/01-tensors.ipynb"`)
	var nbCode, nbShown, nbErrors int
	fmt.Sscan(eval(`workbench.notebook.cells.filter(c => c.type === "code").length`), &nbCode)
	fmt.Sscan(eval(`workbench.notebook.cells.filter(c => c.type === "code" && c.root.querySelector(".output")).length`), &nbShown)
	fmt.Sscan(eval(`document.querySelectorAll("#cells .output-error").length`), &nbErrors)
	if nbCode < 10 || nbShown != nbCode || nbErrors != 1 {
		t.Errorf("01-tensors: %d code cells, %d showing outputs, %d errors; want all shown and the one panic", nbCode, nbShown, nbErrors)
	}
	if got := eval(`document.querySelectorAll('#cells .cell[data-cell-type="markdown"] .md-view h1, #cells .cell[data-cell-type="markdown"] .md-view h2').length`); got == "0" {
		t.Error("01-tensors: no Markdown heading rendered")
	}
	shoot("frontend-notebook")
	eval(`workbench.notebook.open("a.ipynb")`)
	wait("a.ipynb again", `workbench.notebook.path === "a.ipynb"`)

	// A notebook that cannot be opened shows the engine's error and keeps the open one.
	eval(`workbench.notebook.open("bad.ipynb")`)
	wait("the open error", `!document.querySelector("#nb-error").hidden`)
	if got := eval(`document.querySelector("#nb-error").textContent`); !strings.Contains(got, "invalid JSON") {
		t.Errorf("open error %q", got)
	}
	if got := eval(`workbench.notebook.path`); got != "a.ipynb" {
		t.Errorf("open notebook %q after a failed open, want a.ipynb", got)
	}

	// Devices: choosing strict calls devices.set.
	eval(`document.querySelector('.tab[data-tab="devices"]').click()`)
	wait("devices", `document.querySelector('.device-row[data-device="strict"] .device-use')`)
	eval(`document.querySelector('.device-row[data-device="strict"] .device-use').click()`)
	wait("strict as default", `document.querySelector('.device-row[data-device="strict"]').dataset.default === "true"`)

	// Variables, model views, checkpoints.
	eval(`document.querySelector('.tab[data-tab="variables"]').click()`)
	wait("the variables", `document.querySelector('.var-row[data-name="x"]')`)
	if got := eval(`document.querySelector('.var-row[data-name="x"]').innerText`); !strings.Contains(got, "[2, 3]") || !strings.Contains(got, "24 B") {
		t.Errorf("variable x shows %q", got)
	}
	eval(`document.querySelector('.tab[data-tab="model"]').click()`)
	// The picker offers the modules (variables with parameters) only.
	wait("the module picker", `document.querySelector('#model-name option[value="net"]')`)
	if got := eval(`Array.from(document.querySelectorAll("#model-name option.model-option")).map(o => o.value).join(",")`); got != "net" {
		t.Errorf("the Model tab offers %q, want net only", got)
	}
	eval(`workbench.model.show("nope")`)
	wait("the model error", `!document.querySelector("#model-error").hidden`)
	eval(`(s => (s.value = "net", s.dispatchEvent(new Event("change"))))(document.querySelector("#model-name"))`)
	wait("the model views", `document.querySelector("#model-graph svg") && document.querySelector("#model-tree li") && document.querySelector("#model-error").hidden`)
	eval(`document.querySelector('.tab[data-tab="checkpoints"]').click()`)
	wait("the checkpoints", `document.querySelectorAll(".ckpt-row").length === 2`)
	if got := eval(`document.querySelector('.ckpt-row[data-damaged="true"] .ckpt-error').textContent`); !strings.Contains(got, "sha256") {
		t.Errorf("damaged checkpoint shows %q", got)
	}
	eval(`document.querySelector("#ckpt-out").value = "/tmp/x.safetensors", document.querySelector('.ckpt-row[data-damaged="false"] .ckpt-export').click()`)
	wait("the export", `document.querySelector("#ckpt-result").dataset.state === "done"`)
	f.mu.Lock()
	export := string(f.params["checkpoints.export"])
	f.mu.Unlock()
	if !strings.Contains(export, `"path":"/runs/r1/checkpoints/epoch-0001-step-000020"`) || !strings.Contains(export, `"format":"safetensors"`) || !strings.Contains(export, `"out":"/tmp/x.safetensors"`) {
		t.Errorf("checkpoints.export got %s", export)
	}

	// Runs: updates every 20 ms chart while they stream.
	eval(`document.querySelector('.tab[data-tab="runs"]').click()`)
	wait("the run row", `document.querySelector('.run-row[data-dir="/runs/r1"] .run-open')`)
	eval(`document.querySelector('.run-row[data-dir="/runs/r1"] .run-open').click()`)
	wait("the run view", `document.querySelector('.run-progress[data-dir="/runs/r1"]')`)
	stop := make(chan struct{})
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		t0 := time.Now()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			rec := map[string]any{"kind": "step", "time": t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano), "epoch": 1, "step": i,
				"split": "train", "metrics": map[string]any{"loss": 1.0 / float64(i)}, "lr": 0.01, "batches": 1000, "batch": i, "samples": 20 * i}
			f.push("run.update", map[string]any{"dir": "/runs/r1", "index": i, "record": rec})
			f.mu.Lock()
			f.updates = i
			f.mu.Unlock()
		}
	}()
	points := `+(document.querySelector('.run-chart[data-metric="loss"]') || {dataset: {points: 0}}).dataset.points`
	var seen []int
	for end := time.Now().Add(20 * time.Second); len(seen) < 4 && time.Now().Before(end); time.Sleep(150 * time.Millisecond) {
		var n int
		fmt.Sscan(eval(points), &n)
		if n > 0 && (len(seen) == 0 || n > seen[len(seen)-1]) {
			seen = append(seen, n)
		}
	}
	close(stop)
	<-streamed
	if len(seen) < 4 {
		t.Errorf("the loss chart grew only through %v points while updates streamed every 20 ms", seen)
	}
	// Records 1 s apart, 1 step each, 20 samples a step: 20 samples/s.
	if got := eval(`document.querySelector('.run-value[data-metric^="throughput"] .run-value-item').dataset.value`); got != "20" {
		t.Errorf("throughput %s samples/s, want 20", got)
	}
	if got := eval(`document.querySelector(".run-progress-text").textContent`); !strings.Contains(got, "ETA") || !strings.Contains(got, "epoch 1/2") {
		t.Errorf("progress %q lacks the epoch or ETA", got)
	}
	eval(`document.querySelector(".run-stop").click()`)
	time.Sleep(300 * time.Millisecond)
	f.mu.Lock()
	stopParams := string(f.params["runs.stop"])
	f.mu.Unlock()
	if !strings.Contains(stopParams, "/runs/r1") {
		t.Errorf("Stop sent runs.stop %s", stopParams)
	}

	// A data-parallel run: "×2" in the table, its ranks in its view; a
	// run on one process shows neither.
	if got := eval(`document.querySelector('.run-row[data-dir="/runs/dp"] .run-name').textContent`); got != "dp×2" {
		t.Errorf("the data-parallel run's name cell reads %q, want dp×2", got)
	}
	if got := eval(`String(document.querySelectorAll('.run-row[data-dir="/runs/r1"] .run-ranks, .run-progress[data-dir="/runs/r1"] .run-ranks').length)`); got != "0" {
		t.Errorf("the run on one process shows %s ranks marks", got)
	}
	eval(`document.querySelector('.run-row[data-dir="/runs/dp"] .run-open').click()`)
	wait("the data-parallel run's view", `document.querySelector('.run-progress[data-dir="/runs/dp"] .run-ranks')`)
	if got := eval(`document.querySelector('.run-progress[data-dir="/runs/dp"] .run-ranks').textContent`); got != "data-parallel · 2 ranks" {
		t.Errorf("the data-parallel run's view says %q", got)
	}

	// A restart pushed by the engine shows the notice.
	f.push("kernel.status", map[string]any{"status": "idle", "restarts": 1, "message": "the kernel died: panic in a goroutine; restarted"})
	wait("the restart notice", `!document.querySelector("#restart-notice").hidden`)
	if got := eval(`document.querySelector("#restart-notice").textContent`); !strings.Contains(got, "restarted") {
		t.Errorf("restart notice %q", got)
	}
	shoot("frontend-fake-engine")
}

// wailsShimJS stands in for the desktop app's injected bindings: App.Call
// answers through the fake engine's HTTP API (the result JSON, unwrapped,
// as the bound Go method returns it) and EventsOn keeps the handlers, which
// the test then calls as Wails would.
const wailsShimJS = `window.go = {main: {App: {Call: async (method, params) => {
  window.wailsCalls = (window.wailsCalls || []).concat([method]);
  const r = await fetch("/api/call/" + method, {method: "POST", body: params});
  const b = await r.json();
  if (b.error !== undefined) throw b.error;
  return JSON.stringify(b.result);
}}}};
window.wailsHandlers = {};
window.runtime = {EventsOn: (name, fn) => { (window.wailsHandlers[name] = window.wailsHandlers[name] || []).push(fn); return () => {}; }};`

// openDesktopPage serves the UI from a fake engine and opens url (a path
// and query) in headless Chromium with shim (the Wails bindings the desktop
// app injects) evaluated before the page's own scripts, for two minutes at
// most; it skips t when the UI is not built or Chromium is missing.
func openDesktopPage(t *testing.T, shim, url string) (context.Context, *fakeEngine) {
	t.Helper()
	if !Built() {
		t.Skip("the workbench UI is not built (run make assets): UI test skipped")
	}
	if path, ok := chromium.Path(); !ok {
		t.Skipf("no chromium at %s: UI test skipped", path)
	}
	f := &fakeEngine{params: map[string]json.RawMessage{}}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	ctx := chromium.New(t, 1280, 800)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	addShim := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: shim})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(ctx, addShim); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+url)); err != nil {
		t.Fatal(err)
	}
	return ctx, f
}

func TestUIWailsTransport(t *testing.T) {
	ctx, f := openDesktopPage(t, wailsShimJS, "/?notebook=a.ipynb")
	wait := func(what, js string) { t.Helper(); waitFor(t, ctx, what, js) }
	wait("the page", `document.body.dataset.ready === "true"`)
	if v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.transport`)); v != "wails" {
		t.Errorf("transport %q, want wails", v)
	}
	wait("the notebook through App.Call", `document.querySelectorAll("#cells .cell").length === 2 && window.wailsCalls.includes("notebook.open")`)
	// A bound call's error reaches the UI.
	chromedp.Run(ctx, chromedp.Evaluate[bool](`workbench.notebook.open("bad.ipynb"), true`))
	wait("the open error", `document.querySelector("#nb-error").textContent.includes("invalid JSON")`)
	// Wails events drive the UI like WebSocket frames.
	chromedp.Run(ctx, chromedp.Evaluate[bool](`window.wailsHandlers.workbench.forEach(fn => fn({topic: "kernel.status", data: {status: "busy", restarts: 0}})), true`))
	wait("the busy status", `document.querySelector("#kernel-status").dataset.status === "busy"`)
	f.mu.Lock()
	n := len(f.conns)
	f.mu.Unlock()
	if n != 0 {
		t.Errorf("the Wails transport opened %d WebSockets, want none", n)
	}
}

// waitFor polls the page until js is truthy, failing the test after 30 s;
// what names the awaited state in the failure.
func waitFor(t *testing.T, ctx context.Context, what, js string) {
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

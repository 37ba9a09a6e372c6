package workbench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/kernel/jupyter"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/workbench"
)

var (
	buildOnce sync.Once
	kilnBin   string
	buildErr  error
)

// kiln builds the kiln binary once for the package's tests.
func kiln(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real kernels; skipped with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kiln-workbench-test")
		if err != nil {
			buildErr = err
			return
		}
		kilnBin = filepath.Join(dir, "kiln")
		out, err := exec.Command("go", "build", "-o", kilnBin, "github.com/kiln-ml/kiln/cmd/kiln").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build kiln: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return kilnBin
}

// recorder is a Publisher that keeps every update.
type recorder struct {
	mu      sync.Mutex
	updates []update
}

type update struct {
	topic string
	data  map[string]any
}

func (r *recorder) Publish(topic string, data any) {
	b, _ := json.Marshal(data)
	var m map[string]any
	json.Unmarshal(b, &m)
	r.mu.Lock()
	r.updates = append(r.updates, update{topic, m})
	r.mu.Unlock()
}

// await waits until an update of topic satisfies ok.
func (r *recorder) await(t *testing.T, topic string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, u := range r.updates {
			if u.topic == topic && ok(u.data) {
				r.mu.Unlock()
				return u.data
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s update as expected; got %v", topic, r.updates)
	return nil
}

const tinyNotebook = `{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Tiny\n"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "sum",
   "metadata": {},
   "outputs": [],
   "source": [
    "x := 40\n",
    "x + 2"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Go (Kiln)",
   "language": "go",
   "name": "kiln"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
`

// newServer starts a Server on a fresh root holding tiny.ipynb.
func newServer(t *testing.T) (*workbench.Server, *recorder, string) {
	t.Helper()
	bin := kiln(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "tiny.ipynb"), []byte(tinyNotebook), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := workbench.New(context.Background(), workbench.Config{Root: root, Kiln: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rec := &recorder{}
	srv.Subscribe(rec)
	return srv, rec, root
}

// call runs a method and decodes its result into a generic value.
func call(t *testing.T, srv *workbench.Server, method string, params any) any {
	t.Helper()
	res, err := callErr(srv, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res
}

func callErr(srv *workbench.Server, method string, params any) (any, error) {
	p, _ := json.Marshal(params)
	res, err := srv.Call(context.Background(), method, p)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res)
	var v any
	json.Unmarshal(b, &v)
	return v, nil
}

func TestNotebookRoundTripAndAutosave(t *testing.T) {
	srv, rec, root := newServer(t)
	path := filepath.Join(root, "tiny.ipynb")
	nb := call(t, srv, "notebook.open", map[string]any{"path": "tiny.ipynb"}).(map[string]any)
	cells := nb["cells"].([]any)
	if len(cells) != 2 || cells[1].(map[string]any)["source"] != "x := 40\nx + 2" {
		t.Fatalf("cells %v", cells)
	}
	// Saving without a change leaves the file byte for byte as it was.
	call(t, srv, "notebook.save", map[string]any{"path": "tiny.ipynb"})
	if b, _ := os.ReadFile(path); string(b) != tinyNotebook {
		t.Fatalf("an unchanged notebook was rewritten:\n%s", b)
	}
	// A run cell's outputs go into the notebook, which is autosaved.
	res := call(t, srv, "kernel.execute", map[string]any{"path": "tiny.ipynb", "cell_id": "sum", "code": "x := 40\nx + 2"}).(map[string]any)
	if res["status"] != "ok" || !strings.Contains(fmt.Sprint(res["outputs"]), "42") {
		t.Fatalf("execute: %v", res)
	}
	rec.await(t, "cell.output", func(d map[string]any) bool { return d["cell_id"] == "sum" })
	rec.await(t, "notebook.saved", func(d map[string]any) bool { return d["path"] == "tiny.ipynb" })
	b, _ := os.ReadFile(path)
	var saved map[string]any
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprint(saved["cells"].([]any)[1])
	if !strings.Contains(out, "execute_result") || !strings.Contains(out, "42") {
		t.Fatalf("saved cell lacks its result: %s", out)
	}
	// Bad input: a corrupt notebook, a path outside the root, bad params.
	os.WriteFile(filepath.Join(root, "bad.ipynb"), []byte(`{"cells": [`), 0o644)
	if _, err := callErr(srv, "notebook.open", map[string]any{"path": "bad.ipynb"}); err == nil ||
		!errors.Is(err, workbench.ErrNotebook) {
		t.Errorf("corrupt notebook: %v", err)
	}
	if _, err := callErr(srv, "notebook.open", map[string]any{"path": "../outside.ipynb"}); err == nil ||
		!strings.Contains(err.Error(), "outside") {
		t.Errorf("path outside the root: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "secret.ipynb")
	os.WriteFile(outside, []byte(tinyNotebook), 0o644)
	os.Symlink(outside, filepath.Join(root, "link.ipynb"))
	if _, err := callErr(srv, "notebook.open", map[string]any{"path": "link.ipynb"}); err == nil ||
		!strings.Contains(err.Error(), "outside") {
		t.Errorf("a symbolic link leading outside the root: %v", err)
	}
	if _, err := srv.Call(context.Background(), "notebook.open", json.RawMessage(`[1,2]`)); err == nil {
		t.Error("params of the wrong type were accepted")
	}
	if _, err := srv.Call(context.Background(), "no.such", nil); !errors.Is(err, workbench.ErrUnknownMethod) ||
		!strings.Contains(err.Error(), "no.such") {
		t.Errorf("unknown method: %v", err)
	}
}

func TestKernelDeathIsRestarted(t *testing.T) {
	srv, rec, _ := newServer(t)
	call(t, srv, "kernel.execute", map[string]any{"code": "y := 1"})
	res := call(t, srv, "kernel.execute", map[string]any{"code": "time.AfterFunc(0, func() { panic(\"boom\") })\ntime.Sleep(5 * time.Second)"}).(map[string]any)
	if res["status"] != "error" || !strings.Contains(fmt.Sprint(res["outputs"]), "boom") {
		t.Fatalf("the dying cell: %v", res)
	}
	rec.await(t, "kernel.status", func(d map[string]any) bool {
		return strings.Contains(fmt.Sprint(d["message"]), "restarted") && d["restarts"] == 1.0
	})
	res = call(t, srv, "kernel.execute", map[string]any{"code": "2 * 21"}).(map[string]any)
	if res["status"] != "ok" || !strings.Contains(fmt.Sprint(res["outputs"]), "42") {
		t.Fatalf("after the restart: %v", res)
	}
}

func TestDevicesVariablesAndModel(t *testing.T) {
	srv, _, _ := newServer(t)
	devs := call(t, srv, "devices.list", nil).(map[string]any)["devices"].([]any)
	var names []string
	for _, d := range devs {
		if d := d.(map[string]any); d["software"] != true { // lavapipe, where Mesa's Vulkan drivers are installed
			names = append(names, d["name"].(string))
		}
	}
	if strings.Join(names, ",") != "cpu,strict" {
		t.Fatalf("devices %v", names)
	}
	call(t, srv, "devices.set", map[string]any{"name": "strict"})
	res := call(t, srv, "kernel.execute", map[string]any{"code": "d, _ := tensor.DefaultDevice()\nd.String()"})
	if !strings.Contains(fmt.Sprint(res), "strict") {
		t.Fatalf("default device after devices.set: %v", res)
	}
	if _, err := callErr(srv, "devices.set", map[string]any{"name": "cpu; os.Exit(1)"}); err == nil {
		t.Error("a device name with code in it was accepted")
	}
	call(t, srv, "devices.set", map[string]any{"name": "cpu"})
	call(t, srv, "kernel.execute", map[string]any{"code": "w := tensor.Ones(tensor.CPU(), 3, 4)\nm := nn.NewSequential(nn.NewLinear(tensor.CPU(), 4, 3), nn.ReLU{}, nn.NewLinear(tensor.CPU(), 3, 2))"})
	vars := fmt.Sprint(call(t, srv, "variables.list", nil))
	for _, want := range []string{"name:w", "shape:[3 4]", "bytes:48", "name:m", "params:23"} {
		if !strings.Contains(vars, want) {
			t.Errorf("variables lack %q: %s", want, vars)
		}
	}
	tree := call(t, srv, "model.tree", map[string]any{"name": "m"}).(map[string]any)["html"].(string)
	if !strings.Contains(tree, "Linear") {
		t.Errorf("module tree: %.300s", tree)
	}
	svg := call(t, srv, "model.graph", map[string]any{"name": "m"}).(map[string]any)["svg"].(string)
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "matmul") && !strings.Contains(svg, "linear") {
		t.Errorf("graph: %.300s", svg)
	}
	if _, err := callErr(srv, "model.tree", map[string]any{"name": "m)\nos.Exit(1"}); err == nil {
		t.Error("a model name with code in it was accepted")
	}
}

// trainRun trains a tiny classifier for two epochs in runDir, writing its
// events and checkpoints, and returns the model.
func trainRun(t *testing.T, runDir string) *nn.Linear {
	t.Helper()
	dev := tensor.CPU().Autodiff()
	dev.Seed(1)
	var m *nn.Linear
	tensor.NoScope(func() { m = nn.NewLinear(dev, 4, 3) })
	r := rand.New(rand.NewPCG(1, 2))
	items := make([]data.Item, 48)
	for i := range items {
		items[i] = data.Item{X: []float32{float32(r.NormFloat64()), 1, 2, float32(i % 3)}, Label: int64(i % 3)}
	}
	ld, err := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: 8, Device: tensor.CPU()})
	if err != nil {
		t.Fatal(err)
	}
	s := &train.Supervised{Config: train.Config{Epochs: 2, RunDir: runDir, LogEvery: 1}, Train: ld}
	if _, err := s.Fit(context.Background(), &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRunsSnapshotUpdatesStopAndCheckpoints(t *testing.T) {
	srv, rec, root := newServer(t)
	runDir := filepath.Join(root, "runs", "tiny")
	m := trainRun(t, runDir)
	defer nn.Release(m)
	rec.await(t, "runs.changed", func(map[string]any) bool { return true })
	var runs []any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		runs = call(t, srv, "runs.list", nil).([]any)
		if len(runs) == 1 && runs[0].(map[string]any)["status"] == "completed" {
			break
		}
	}
	if len(runs) != 1 || runs[0].(map[string]any)["status"] != "completed" || runs[0].(map[string]any)["epochs"] != 2.0 {
		t.Fatalf("runs %v", runs)
	}
	snap := call(t, srv, "runs.snapshot", map[string]any{"dir": runDir}).(map[string]any)
	evs, err := train.ReadEvents(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if next := snap["next"].(float64); int(next) != len(evs) || len(snap["records"].([]any)) != len(evs) {
		t.Fatalf("snapshot has %v records, the log %d", snap["next"], len(evs))
	}
	// A late subscriber: records appended after the snapshot arrive as
	// updates numbered from next on.
	late := &recorder{}
	srv.Subscribe(late)
	f, _ := os.OpenFile(filepath.Join(runDir, "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "{\"kind\":\"step\",\"step\":99,\"epoch\":3,\"metrics\":{\"loss\":0.1}}\n")
	f.Close()
	got := late.await(t, "run.update", func(d map[string]any) bool { return d["dir"] == runDir })
	if got["index"] != float64(len(evs)) || !strings.Contains(fmt.Sprint(got["record"]), "99") {
		t.Fatalf("late update %v, want index %d", got, len(evs))
	}
	// A new run replacing the log: runs.changed, and its records numbered
	// from 0 again.
	again := &recorder{}
	cancelAgain := srv.Subscribe(again)
	os.WriteFile(filepath.Join(runDir, "events.jsonl"), []byte("{\"kind\":\"start\",\"step\":0}\n"), 0o644)
	again.await(t, "runs.changed", func(map[string]any) bool { return true })
	again.await(t, "run.update", func(d map[string]any) bool { return d["index"] == 0.0 && d["dir"] == runDir })
	cancelAgain()
	if snap := call(t, srv, "runs.snapshot", map[string]any{"dir": runDir}).(map[string]any); snap["next"] != 1.0 {
		t.Fatalf("snapshot of the replaced log: next %v, want 1", snap["next"])
	}
	// Stop refuses a run that has ended, and writes a running run's STOP
	// file (train stops at its next step).
	ended := filepath.Join(root, "runs", "ended")
	os.MkdirAll(ended, 0o755)
	os.WriteFile(filepath.Join(ended, "events.jsonl"), []byte("{\"kind\":\"start\"}\n{\"kind\":\"end\",\"reason\":\"completed\"}\n"), 0o644)
	if _, err := callErr(srv, "runs.stop", map[string]any{"dir": ended}); err == nil || !strings.Contains(err.Error(), "not running (completed)") {
		t.Errorf("stopping an ended run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ended, train.StopFile)); err == nil {
		t.Error("a STOP file was left in an ended run")
	}
	call(t, srv, "runs.stop", map[string]any{"dir": runDir})
	if _, err := os.Stat(filepath.Join(runDir, train.StopFile)); err != nil {
		t.Fatalf("no STOP file: %v", err)
	}
	// Checkpoints: listed with metrics, exported, loadable by store.
	cks := call(t, srv, "checkpoints.list", map[string]any{"dir": runDir}).([]any)
	if len(cks) == 0 {
		t.Fatal("no checkpoints listed")
	}
	last := cks[len(cks)-1].(map[string]any)
	if last["error"] != nil || last["epoch"] != 2.0 {
		t.Fatalf("last checkpoint %v", last)
	}
	res := call(t, srv, "checkpoints.export", map[string]any{"path": last["path"], "format": "safetensors", "out": "export/tiny.safetensors"}).(map[string]any)
	if res["bytes"].(float64) <= 0 {
		t.Fatalf("export %v", res)
	}
	fresh := nn.NewLinear(tensor.CPU(), 4, 3)
	if err := store.LoadModel(fresh, filepath.Join(root, "export", "tiny.safetensors")); err != nil {
		t.Fatal(err)
	}
	if !fresh.Weight.AllClose(m.Weight.Detach(), 0, 0) {
		t.Error("the exported weights differ from the trained model's")
	}
	// A damaged checkpoint is listed with its error; the others still load.
	victim := filepath.Join(last["path"].(string), "model.safetensors")
	b, _ := os.ReadFile(victim)
	b[len(b)-1] ^= 0xff
	os.WriteFile(victim, b, 0o644)
	cks = call(t, srv, "checkpoints.list", map[string]any{"dir": runDir}).([]any)
	if e := cks[len(cks)-1].(map[string]any)["error"]; e == nil || !strings.Contains(fmt.Sprint(e), "sha256") && !strings.Contains(fmt.Sprint(e), "SHA") {
		t.Errorf("damaged checkpoint listed as %v", cks[len(cks)-1])
	}
	if _, err := callErr(srv, "checkpoints.export", map[string]any{"path": last["path"], "out": "x.safetensors"}); err == nil {
		t.Error("a damaged checkpoint was exported")
	}
	if _, err := callErr(srv, "checkpoints.export", map[string]any{"path": "/etc", "out": "x.safetensors"}); err == nil {
		t.Error("a path outside the runs was exported")
	}
}

func TestTokenProtection(t *testing.T) {
	tok, _ := newFakeServer(t, workbench.Config{Token: "s3cret",
		Assets: fstest.MapFS{"index.html": {Data: []byte("<p>ui</p>")}}})
	ts := httptest.NewServer(tok.Handler())
	defer ts.Close()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", 403}, {"POST", "/api/call/server.info", 403}, {"GET", "/ws", 403},
		{"GET", "/?token=wrong", 403},
		{"GET", "/?token=s3cret", 200}, {"POST", "/api/call/server.info?token=s3cret", 200},
		{"POST", "/api/call/no.such?token=s3cret", 404}, {"POST", "/api/other?token=s3cret", 404},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, bytes.NewReader(nil))
		if c.method == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
}

func TestOutputsStreamWhileTheCellRuns(t *testing.T) {
	srv, rec, _ := newServer(t)
	done := make(chan map[string]any, 1)
	go func() {
		res, err := callErr(srv, "kernel.execute", map[string]any{"path": "tiny.ipynb", "cell_id": "sum",
			"code": "fmt.Println(\"first\")\ntime.Sleep(3 * time.Second)\nfmt.Println(\"second\")"})
		m, _ := res.(map[string]any)
		if err != nil {
			m = map[string]any{"error": err.Error()}
		}
		done <- m
	}()
	rec.await(t, "cell.output", func(d map[string]any) bool { return strings.Contains(fmt.Sprint(d["output"]), "first") })
	select {
	case res := <-done:
		t.Fatalf("the first line arrived only with the cell's end: %v", res)
	default:
	}
	// While the cell runs, the variables listing answers at once from the
	// snapshot of the last cell's end, marked busy ...
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	vars, err := srv.Call(ctx, "variables.list", nil)
	cancel()
	if m, _ := vars.(map[string]any); err != nil || m["busy"] != true {
		t.Errorf("variables.list during a running cell: %v, %v; want an answer marked busy", vars, err)
	}
	// ... and a request that needs the interpreter waits for the kernel and
	// gives up when its context ends, instead of hanging.
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = srv.Call(ctx, "model.tree", json.RawMessage(`{"name": "m"}`))
	cancel()
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("model.tree during a running cell: %v, want a busy error", err)
	}
	res := <-done
	// The two lines, printed 3 s apart, are one stream output, as Jupyter
	// keeps them.
	outs, _ := res["outputs"].([]any)
	if res["status"] != "ok" || len(outs) != 1 || outs[0].(map[string]any)["text"] != "first\nsecond\n" {
		t.Fatalf("execute: %v, want one stream output \"first\\nsecond\\n\"", res)
	}
	rec.await(t, "cell.output", func(d map[string]any) bool {
		return d["index"] == 0.0 && strings.Contains(fmt.Sprint(d["output"]), "first\nsecond")
	})
	rec.await(t, "cell.done", func(d map[string]any) bool { return d["cell_id"] == "sum" && d["status"] == "ok" })
}

// TestSavedNotebookMatchesJupytersLayout re-saves the repository's own
// notebook (written by Jupyter) after an update that changes nothing: the
// file must come back byte for byte, so a save shows in a diff only what
// changed.
func TestSavedNotebookMatchesJupytersLayout(t *testing.T) {
	srv, _, root := newServer(t)
	orig, err := os.ReadFile(filepath.Join("..", "notebooks", "01-tensors.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "tensors.ipynb")
	os.WriteFile(path, orig, 0o644)
	nb := call(t, srv, "notebook.open", map[string]any{"path": "tensors.ipynb"}).(map[string]any)
	call(t, srv, "notebook.update", map[string]any{"path": "tensors.ipynb", "cells": nb["cells"]})
	call(t, srv, "notebook.save", map[string]any{"path": "tensors.ipynb"})
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, orig) {
		i := 0
		for i < len(got) && i < len(orig) && got[i] == orig[i] {
			i++
		}
		t.Fatalf("the re-saved notebook differs from byte %d:\nsaved: %.120q\norig:  %.120q", i, got[i:], orig[i:])
	}
}

// TestAttachToExistingKernel attaches to a kernel started elsewhere by its
// connection file: cells run on it, closing the workbench leaves it
// running, and its death is reported, not "restarted".
func TestAttachToExistingKernel(t *testing.T) {
	bin := kiln(t)
	p, err := jupyter.StartKernel(jupyter.StartOptions{Spec: jupyter.KernelSpec{
		Argv: []string{bin, "kernel", "run", "-f", "{connection_file}"}, Language: "go", InterruptMode: "message"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	root := t.TempDir()
	srv, err := workbench.New(context.Background(), workbench.Config{Root: root, Existing: p.ConnectionFile})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	srv.Subscribe(rec)
	res := call(t, srv, "kernel.execute", map[string]any{"code": "attached := 6 * 7\nattached"}).(map[string]any)
	if res["status"] != "ok" || !strings.Contains(fmt.Sprint(res["outputs"]), "42") {
		t.Fatalf("execute on the attached kernel: %v", res)
	}
	if info := call(t, srv, "server.info", nil).(map[string]any); info["attached"] != true {
		t.Errorf("server.info %v: want attached", info)
	}
	if _, err := callErr(srv, "kernel.restart", nil); err == nil {
		t.Error("an attached kernel was restarted")
	}
	srv.Close()
	select {
	case <-p.Done():
		t.Fatal("closing the workbench ended the attached kernel")
	case <-time.After(300 * time.Millisecond):
	}
	// A second workbench on the same kernel sees the session's variables;
	// when the kernel dies it says so and does not claim a restart.
	srv, err = workbench.New(context.Background(), workbench.Config{Root: root, Existing: p.ConnectionFile})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec = &recorder{}
	srv.Subscribe(rec)
	if res := call(t, srv, "kernel.execute", map[string]any{"code": "attached + 1"}); !strings.Contains(fmt.Sprint(res), "43") {
		t.Fatalf("the session's variable on re-attaching: %v", res)
	}
	p.Kill()
	rec.await(t, "kernel.status", func(d map[string]any) bool {
		return d["status"] == "dead" && strings.Contains(fmt.Sprint(d["message"]), "attached kernel died")
	})
}

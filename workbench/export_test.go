package workbench_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/workbench"
)

// exportFixture writes two runs under root/runs, each with one checkpoint
// of an MLP imported from ONNX (its weights negated, so a file holding the
// graph's own weights is told apart): "withgraph" records its graph as
// workbench.GraphFile, "nograph" does not. It returns the two checkpoint
// directories and the model the checkpoints hold.
func exportFixture(t *testing.T, root string) (withGraph, noGraph string, m *onnx.Model) {
	t.Helper()
	graph := filepath.Join("..", "onnx", "testdata", "models", "mlp_op13.onnx")
	m, err := onnx.Load(graph, tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nn.Release(m) })
	for _, p := range nn.Params(m) {
		p.Param.Assign(p.Param.MulScalar(-1))
	}
	for _, run := range []string{"withgraph", "nograph"} {
		dir := filepath.Join(root, "runs", run)
		ck := filepath.Join(dir, "checkpoints", "epoch-0001")
		if err := os.MkdirAll(filepath.Dir(ck), 0o755); err != nil {
			t.Fatal(err)
		}
		tensor.Scope(func() {
			err = store.SaveCheckpoint(ck, store.Checkpoint{Model: nn.StateDict(m), Epoch: 1, Step: 7, Metrics: map[string]float64{"loss": 0.25}})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(`{"kind":"start"}`+"\n"+`{"kind":"end","reason":"completed"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if run == "withgraph" {
			b, err := os.ReadFile(graph)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, workbench.GraphFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			withGraph = ck
		} else {
			noGraph = ck
		}
	}
	return withGraph, noGraph, m
}

// sameState reports whether the state dict of model equals tensors by name
// and value (within tol).
func sameState(t *testing.T, model any, get func(name string) (*tensor.Tensor, error), tol float64) {
	t.Helper()
	tensor.Scope(func() {
		for name, want := range nn.StateDict(model) {
			got, err := get(name)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if !got.To(tensor.Float32).AllClose(want.To(tensor.Float32), tol, tol) {
				t.Errorf("%s: the exported values differ from the checkpoint's", name)
			}
		}
	})
}

// TestExportDownloadsEveryFormat downloads a checkpoint over GET
// /api/export in each format `kiln export` writes and loads each file
// with the library that reads it.
func TestExportDownloadsEveryFormat(t *testing.T) {
	srv, _ := newFakeServer(t, workbench.Config{})
	root := call(t, srv, "server.info", nil).(map[string]any)["root"].(string)
	ck, bare, m := exportFixture(t, root)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	get := func(q url.Values) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(ts.URL + "/api/export?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	save := func(name string, b []byte) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		format, ggufType, file string
		load                   func(t *testing.T, path string)
	}{
		{"safetensors", "", "withgraph-epoch-0001.safetensors", func(t *testing.T, path string) {
			sf, err := store.OpenSafetensors(path)
			if err != nil {
				t.Fatal(err)
			}
			defer sf.Close()
			if md := sf.Metadata(); md["format"] != "pt" || md["kiln.step"] != "7" {
				t.Errorf("metadata %v, want format pt and kiln.step 7", md)
			}
			sameState(t, m, func(n string) (*tensor.Tensor, error) { return sf.Tensor(n, tensor.CPU()) }, 0)
		}},
		{"gguf", "", "withgraph-epoch-0001.gguf", func(t *testing.T, path string) {
			g, err := store.OpenGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			sameState(t, m, func(n string) (*tensor.Tensor, error) { return g.Tensor(n, tensor.CPU()) }, 0)
		}},
		{"gguf", "f16", "withgraph-epoch-0001.gguf", func(t *testing.T, path string) {
			g, err := store.OpenGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			sameState(t, m, func(n string) (*tensor.Tensor, error) { return g.Tensor(n, tensor.CPU()) }, 1e-2)
		}},
		{"onnx", "", "withgraph-epoch-0001.onnx", func(t *testing.T, path string) {
			got, err := onnx.Load(path, tensor.CPU())
			if err != nil {
				t.Fatal(err)
			}
			defer nn.Release(got)
			sd := nn.StateDict(got)
			sameState(t, m, func(n string) (*tensor.Tensor, error) { return sd[n], nil }, 0)
		}},
	} {
		t.Run(c.format+c.ggufType, func(t *testing.T) {
			resp, body := get(url.Values{"path": {ck}, "format": {c.format}, "gguf_type": {c.ggufType}})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
			if err != nil || params["filename"] != c.file {
				t.Errorf("Content-Disposition %q, want attachment named %s", resp.Header.Get("Content-Disposition"), c.file)
			}
			c.load(t, save(c.file, body))
		})
	}

	// Refusals name what was wrong, and export nothing.
	for _, c := range []struct {
		name string
		q    url.Values
		want string
	}{
		{"onnx without a graph", url.Values{"path": {bare}, "format": {"onnx"}}, "no model graph recorded"},
		{"outside the runs", url.Values{"path": {"/etc"}, "format": {"safetensors"}}, "not a checkpoint of a followed run"},
		{"unknown format", url.Values{"path": {ck}, "format": {"pickle"}}, `unknown format "pickle"`},
		{"unknown gguf type", url.Values{"path": {ck}, "format": {"gguf"}, "gguf_type": {"q4"}}, `GGUF type "q4"`},
		{"graph outside the root", url.Values{"path": {ck}, "format": {"onnx"}, "graph": {"/etc/passwd"}}, "outside the workbench's root"},
		{"no checkpoint", url.Values{"format": {"gguf"}}, "no checkpoint given"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := get(c.q)
			var e struct{ Error string }
			json.Unmarshal(body, &e)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, c.want) {
				t.Errorf("status %d, error %q; want 400 saying %q", resp.StatusCode, e.Error, c.want)
			}
		})
	}

	// A damaged checkpoint is refused.
	victim := filepath.Join(bare, "model.safetensors")
	b, _ := os.ReadFile(victim)
	b[len(b)-1] ^= 0xff
	os.WriteFile(victim, b, 0o644)
	if resp, body := get(url.Values{"path": {bare}, "format": {"safetensors"}}); resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("sha256")) {
		t.Errorf("a damaged checkpoint: status %d, %s", resp.StatusCode, body)
	}
}

// TestExportListsGraphAndWritesFiles checks checkpoints.list's graph
// fields and checkpoints.export's GGUF and ONNX files.
func TestExportListsGraphAndWritesFiles(t *testing.T) {
	srv, _ := newFakeServer(t, workbench.Config{})
	root := call(t, srv, "server.info", nil).(map[string]any)["root"].(string)
	ck, bare, m := exportFixture(t, root)
	for _, c := range []struct{ run, graph, hint string }{
		{filepath.Dir(filepath.Dir(ck)), filepath.Join(root, "runs", "withgraph", workbench.GraphFile), ""},
		{filepath.Dir(filepath.Dir(bare)), "", "onnx.Export(model, exampleInput"},
	} {
		cks := call(t, srv, "checkpoints.list", map[string]any{"dir": c.run}).([]any)
		if len(cks) != 1 {
			t.Fatalf("%s: %d checkpoints, want 1", c.run, len(cks))
		}
		e := cks[0].(map[string]any)
		if g, _ := e["graph"].(string); g != c.graph {
			t.Errorf("%s: graph %q, want %q", c.run, g, c.graph)
		}
		if h, _ := e["graph_hint"].(string); c.hint != "" && !strings.Contains(h, c.hint) || c.hint == "" && h != "" {
			t.Errorf("%s: graph_hint %q, want one saying %q", c.run, h, c.hint)
		}
	}
	res := call(t, srv, "checkpoints.export", map[string]any{"path": ck, "format": "onnx", "out": "export/m.onnx"}).(map[string]any)
	got, err := onnx.Load(filepath.Join(root, "export", "m.onnx"), tensor.CPU())
	if err != nil {
		t.Fatalf("%v (export answered %v)", err, res)
	}
	defer nn.Release(got)
	sd := nn.StateDict(got)
	sameState(t, m, func(n string) (*tensor.Tensor, error) { return sd[n], nil }, 0)
	call(t, srv, "checkpoints.export", map[string]any{"path": ck, "format": "gguf", "gguf_type": "q8_0", "out": "export/m.gguf"})
	if g, err := store.OpenGGUF(filepath.Join(root, "export", "m.gguf")); err != nil || len(g.Names()) != len(nn.StateDict(m)) {
		t.Errorf("GGUF export: %v", err)
	}
	if _, err := callErr(srv, "checkpoints.export", map[string]any{"path": ck, "format": "gguf", "out": filepath.Join(ck, "x.gguf")}); err == nil || !strings.Contains(err.Error(), "inside the checkpoint") {
		t.Errorf("an export into the checkpoint: %v", err)
	}
	if _, err := callErr(srv, "checkpoints.export", map[string]any{"path": bare, "format": "onnx", "out": "x.onnx"}); err == nil || !strings.Contains(err.Error(), workbench.GraphFile) {
		t.Errorf("ONNX without a graph: %v", err)
	}
}

// TestExportNeedsTokenAndOrigin checks that GET /api/export passes the
// engine's checks: the token, and a same-origin Referer when only the
// cookie shows it.
func TestExportNeedsTokenAndOrigin(t *testing.T) {
	srv, _ := newFakeServer(t, workbench.Config{Token: "s3cret"})
	root := call(t, srv, "server.info", nil).(map[string]any)["root"].(string)
	ck, _, _ := exportFixture(t, root)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	u := ts.URL + "/api/export?" + url.Values{"path": {ck}}.Encode()
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, 403},
		{"token header", map[string]string{"Authorization": "token s3cret"}, 200},
		{"cookie and own page", map[string]string{"Cookie": "kiln_token=s3cret", "Referer": ts.URL + "/"}, 200},
		{"cookie and another origin", map[string]string{"Cookie": "kiln_token=s3cret", "Referer": "http://evil.example/"}, 403},
		{"cookie alone", map[string]string{"Cookie": "kiln_token=s3cret"}, 403},
		{"rebound host", map[string]string{"Authorization": "token s3cret", "Host": "evil.example"}, 403},
	} {
		req, _ := http.NewRequest("GET", u, nil)
		for k, v := range c.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}

// TestExportONNXOfAnExportedGraph follows the advice the workbench gives
// for a run without a graph: a model built in Go, its graph recorded with
// onnx.Export as the run's GraphFile, then its checkpoint exported as
// ONNX with the checkpoint's weights, not the graph's.
func TestExportONNXOfAnExportedGraph(t *testing.T) {
	srv, _ := newFakeServer(t, workbench.Config{})
	root := call(t, srv, "server.info", nil).(map[string]any)["root"].(string)
	run := filepath.Join(root, "runs", "linear")
	ck := filepath.Join(run, "checkpoints", "epoch-0001")
	if err := os.MkdirAll(filepath.Dir(ck), 0o755); err != nil {
		t.Fatal(err)
	}
	dev := tensor.CPU()
	dev.Seed(3)
	var model *nn.Linear
	tensor.NoScope(func() { model = nn.NewLinear(dev, 4, 3) })
	defer nn.Release(model)
	if err := onnx.Export(model, tensor.Zeros(dev, 1, 4), filepath.Join(run, workbench.GraphFile)); err != nil {
		t.Fatal(err)
	}
	// Training moves the weights after the graph was recorded.
	model.Weight.Assign(model.Weight.MulScalar(2))
	var err error
	tensor.Scope(func() {
		err = store.SaveCheckpoint(ck, store.Checkpoint{Model: nn.StateDict(model), Epoch: 1, Step: 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	call(t, srv, "checkpoints.export", map[string]any{"path": ck, "format": "onnx", "out": "linear.onnx"})
	got, err := onnx.Load(filepath.Join(root, "linear.onnx"), dev)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(got)
	x := tensor.FromFloat32s(dev, []float32{1, 2, 3, 4}, 1, 4)
	tensor.Scope(func() {
		want, have := model.Forward(x), got.Forward(x)
		if !have.AllClose(want, 1e-6, 1e-6) {
			t.Errorf("the exported ONNX model computes %v, the checkpoint's weights %v", have.Float32s(), want.Float32s())
		}
	})
}

package workbench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/workbench"
)

// FuzzAPICall drives the HTTP API with random method names and bodies, as
// the UI would send them (same origin, token, JSON): the server must never
// panic and must always answer a JSON object holding "result" (2xx) or
// "error" (4xx). The Server is attached to a fake kernel (fakeKernel), so
// no input starts a process and kernel.execute runs nothing; every method
// is reachable, kernel.restart included (refused for an attached kernel).
// The notebooks the inputs create stay in the fuzz root; with no runs,
// runs.stop and checkpoints.export write nothing.
func FuzzAPICall(f *testing.F) {
	for _, seed := range []struct{ method, body string }{
		{"server.info", ``}, {"methods", `{}`}, {"notebook.list", `null`},
		{"notebook.open", `{"path": "tiny.ipynb"}`}, {"notebook.open", `{"path": "../outside.ipynb"}`},
		{"notebook.update", `{"path": "tiny.ipynb", "cells": [{"id": "a", "cell_type": "code", "source": "1 + 1"}]}`},
		{"notebook.update", `{"path": "new.ipynb", "cells": [{"cell_type": "markdown", "source": ["# hi"]}]}`},
		{"notebook.save", `{"path": "tiny.ipynb"}`}, {"notebook.close", `{"path": "tiny.ipynb"}`},
		{"kernel.status", `{}`}, {"kernel.execute", `{"path": "tiny.ipynb", "cell_id": "sum", "code": "x := 40\nx + 2"}`},
		{"kernel.execute", `{"code": 7}`}, {"kernel.interrupt", `{}`}, {"kernel.restart", `{}`},
		{"kernel.complete", `{"code": "fmt.Pr", "cursor": 6}`}, {"kernel.inspect", `{"code": "fmt.Println", "cursor": -1}`},
		{"devices.list", `{}`}, {"devices.set", `{"name": "cpu"}`}, {"variables.list", `{}`},
		{"model.tree", `{"name": "m"}`}, {"model.graph", `{"name": "m", "input": "tensor.Ones(tensor.CPU(), 1, 4)"}`},
		{"runs.list", `{}`}, {"runs.snapshot", `{"dir": "runs/x"}`}, {"runs.stop", `{"dir": "/"}`},
		{"checkpoints.list", `{"dir": "runs"}`}, {"checkpoints.export", `{"path": "/etc", "format": "safetensors", "out": "x"}`},
		{"no.such", `{}`}, {"notebook.open", `[1, 2]`}, {"notebook.open", `{"path": `}, {"a/b", `{}`}, {"é\x00", "\xff"},
	} {
		f.Add(seed.method, []byte(seed.body))
	}
	srv, _ := newFakeServer(f, workbench.Config{Token: "s3cret"})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, method string, body []byte) {
		if method == "" || method == "." || method == ".." {
			t.Skip("not a path segment: net/http redirects the cleaned path")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, "POST", "/api/call/"+url.PathEscape(method), bytes.NewReader(body))
		req.Host = "127.0.0.1:8888"
		req.Header.Set("Origin", "http://127.0.0.1:8888")
		req.Header.Set("Authorization", "token s3cret")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var answer map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%q %q: HTTP %d answered %q, not a JSON object: %v", method, body, rec.Code, rec.Body, err)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%q %q: Content-Type %q", method, body, ct)
		}
		_, hasResult := answer["result"]
		_, hasError := answer["error"]
		switch {
		case rec.Code >= 200 && rec.Code < 300 && hasResult && !hasError:
		case rec.Code >= 400 && rec.Code < 500 && hasError && !hasResult:
		default:
			t.Errorf("%q %q: HTTP %d %.300s, want 2xx with result or 4xx with error", method, body, rec.Code, rec.Body)
		}
	})
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/workbench"
)

// idleKernel is a Jupyter kernel served in the test process that runs
// nothing: the engine needs one to start.
type idleKernel struct{ jupyter.BaseHandler }

func (idleKernel) KernelInfo() jupyter.KernelInfo {
	return jupyter.KernelInfo{Implementation: "idle", LanguageInfo: jupyter.LanguageInfo{Name: "go"}}
}

func (idleKernel) Execute(context.Context, jupyter.ExecuteRequest, jupyter.Output) jupyter.ExecuteResult {
	return jupyter.ExecuteResult{}
}

// startIdleKernel serves an idleKernel until the test ends and returns its
// connection file.
func startIdleKernel(t *testing.T) string {
	t.Helper()
	srv, err := jupyter.NewServer(jupyter.Config{
		Connection: jupyter.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", SignatureScheme: "hmac-sha256", Key: jupyter.NewID()},
		Handler:    idleKernel{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoSignalHandler: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	conn := filepath.Join(t.TempDir(), "kernel.json")
	if err := srv.ConnectionInfo().WriteFile(conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

// The desktop app's engine, configured from its command line as the app
// does and called through the method bound into its page (App.Call),
// lists the runs of its --runs folder and those of the run registry
// outside it, and a run registered while it runs within 2 s.
func TestDesktopEngineListsRegistryRuns(t *testing.T) {
	reg := t.TempDir()
	t.Setenv(train.RegistryEnv, reg)
	root, elsewhere := t.TempDir(), t.TempDir()
	writeRun := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		rec := `{"version":1,"kind":"start","time":"2026-01-01T00:00:00Z","epoch":0,"step":0}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, train.EventsFile), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inFolder := filepath.Join(root, "runs", "here")
	writeRun(inFolder)
	before := filepath.Join(elsewhere, "notebook-run")
	writeRun(before)
	if err := train.RegisterRun(before); err != nil {
		t.Fatal(err)
	}

	o, err := parseSettings([]string{"--root", root, "--runs", filepath.Join(root, "runs"), "--existing", startIdleKernel(t)}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := workbench.New(ctx, o.engineConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	app := newApp(ctx, srv)
	list := func() map[string]bool {
		out, err := app.Call("runs.list", "")
		if err != nil {
			t.Fatal(err)
		}
		var runs []struct {
			Dir string `json:"dir"`
		}
		if err := json.Unmarshal([]byte(out), &runs); err != nil {
			t.Fatal(err)
		}
		dirs := map[string]bool{}
		for _, r := range runs {
			dirs[r.Dir] = true
		}
		return dirs
	}
	if got := list(); !got[inFolder] || !got[before] || len(got) != 2 {
		t.Errorf("runs.list: %v, want %s and %s", got, inFolder, before)
	}
	info, err := app.Call("server.info", "")
	if err != nil {
		t.Fatal(err)
	}
	var si struct {
		Registry string `json:"run_registry"`
	}
	if json.Unmarshal([]byte(info), &si); si.Registry != reg {
		t.Errorf("server.info run_registry %q, want %s", si.Registry, reg)
	}

	after := filepath.Join(elsewhere, "demo-run")
	writeRun(after)
	start := time.Now()
	if err := train.RegisterRun(after); err != nil {
		t.Fatal(err)
	}
	for !list()[after] {
		if time.Since(start) > 2*time.Second {
			t.Fatalf("a run registered while the app runs is not listed after 2 s: %v", list())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("registered run listed after %v", time.Since(start).Round(time.Millisecond))
}

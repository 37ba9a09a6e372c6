package workbench_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
	"github.com/kiln-ml/kiln/workbench"
)

// fakeKernel is a Jupyter kernel served in the test process: every cell's
// value is its own code, and it records the code of every cell it got, so a
// test can tell what reached the kernel. It starts in milliseconds and runs
// nothing, which makes it the kernel of tests that exercise the HTTP layer
// and of the fuzz target.
type fakeKernel struct {
	jupyter.BaseHandler
	mu    sync.Mutex
	codes []string
}

func (k *fakeKernel) KernelInfo() jupyter.KernelInfo {
	return jupyter.KernelInfo{Implementation: "fake", ImplementationVersion: "0.1", Banner: "fake kernel",
		LanguageInfo: jupyter.LanguageInfo{Name: "go", Version: "1", Mimetype: "text/x-go", FileExtension: ".go"}}
}

func (k *fakeKernel) Execute(ctx context.Context, req jupyter.ExecuteRequest, out jupyter.Output) jupyter.ExecuteResult {
	k.mu.Lock()
	k.codes = append(k.codes, req.Code)
	k.mu.Unlock()
	return jupyter.ExecuteResult{Data: jupyter.MimeBundle{"text/plain": req.Code}}
}

// ran reports whether a cell with exactly this code reached the kernel.
func (k *fakeKernel) ran(code string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Contains(k.codes, code)
}

// startFakeKernel serves a fakeKernel until the test ends and returns it
// with its connection file, for Config.Existing.
func startFakeKernel(tb testing.TB) (*fakeKernel, string) {
	tb.Helper()
	k := &fakeKernel{}
	srv, err := jupyter.NewServer(jupyter.Config{
		Connection: jupyter.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", SignatureScheme: "hmac-sha256", Key: jupyter.NewID()},
		Handler:    k, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoSignalHandler: true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("the fake kernel did not stop")
		}
	})
	conn := filepath.Join(tb.TempDir(), "kernel.json")
	if err := srv.ConnectionInfo().WriteFile(conn); err != nil {
		tb.Fatal(err)
	}
	return k, conn
}

// newFakeServer starts a Server attached to a fake kernel, on a fresh root
// holding tiny.ipynb; cfg's Root and Existing are filled in.
func newFakeServer(tb testing.TB, cfg workbench.Config) (*workbench.Server, *fakeKernel) {
	tb.Helper()
	k, conn := startFakeKernel(tb)
	cfg.Root, cfg.Existing = tb.TempDir(), conn
	if err := os.WriteFile(filepath.Join(cfg.Root, "tiny.ipynb"), []byte(tinyNotebook), 0o644); err != nil {
		tb.Fatal(err)
	}
	srv, err := workbench.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv, k
}

package train_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// TestRunRegistry: Fit records its run directory in the registry once,
// however often it trains there; entries of deleted runs go, corrupt
// entries are skipped, and "off" turns the registry off.
func TestRunRegistry(t *testing.T) {
	reg := filepath.Join(t.TempDir(), "registry")
	t.Setenv(train.RegistryEnv, reg)
	fit := func(dir string) {
		t.Helper()
		m := newLinear(tensor.CPU(), 1)
		defer nn.Release(m)
		s := &train.Supervised{Config: train.Config{Epochs: 1, RunDir: dir}, Train: loader(t, blobs(8, 1), tensor.CPU(), data.LoaderConfig{BatchSize: 4})}
		if _, err := s.Fit(context.Background(), &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}); err != nil {
			t.Fatal(err)
		}
	}
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	fit(a)
	fit(b)
	fit(a)
	runs, err := train.RegisteredRuns()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Dir != a || runs[1].Dir != b {
		t.Fatalf("registry lists %+v, want a (trained last) then b", runs)
	}
	if runs[0].PID != os.Getpid() || runs[0].Host == "" || runs[0].Started.IsZero() {
		t.Errorf("entry %+v lacks its process", runs[0])
	}
	if err := os.WriteFile(filepath.Join(reg, "bad.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	runs, err = train.RegisteredRuns()
	if err != nil || len(runs) != 1 || runs[0].Dir != a {
		t.Fatalf("after deleting b: %+v, %v", runs, err)
	}
	if ents, _ := os.ReadDir(reg); len(ents) != 2 { // a's entry and bad.json
		t.Errorf("b's entry was not pruned: %d files", len(ents))
	}
	if err := train.UnregisterRun(a); err != nil {
		t.Fatal(err)
	}
	if runs, _ = train.RegisteredRuns(); len(runs) != 0 {
		t.Errorf("after UnregisterRun: %+v", runs)
	}

	t.Setenv(train.RegistryEnv, "off")
	fit(filepath.Join(base, "c"))
	if d, err := train.RegistryDir(); d != "" || err != nil {
		t.Errorf("off: RegistryDir %q, %v", d, err)
	}
	t.Setenv(train.RegistryEnv, reg)
	if runs, _ = train.RegisteredRuns(); len(runs) != 0 {
		t.Errorf("a run with the registry off was registered: %+v", runs)
	}
}

// TestRegistryDefault: without KILN_RUN_REGISTRY the registry follows
// XDG_STATE_HOME, then the home directory.
func TestRegistryDefault(t *testing.T) {
	t.Setenv(train.RegistryEnv, "")
	t.Setenv("XDG_STATE_HOME", "/state")
	if d, _ := train.RegistryDir(); d != "/state/kiln/runs" {
		t.Errorf("with XDG_STATE_HOME: %q", d)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := train.RegistryDir(); d != "/home/u/.local/state/kiln/runs" {
		t.Errorf("with HOME: %q", d)
	}
}

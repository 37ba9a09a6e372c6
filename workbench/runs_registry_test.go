package workbench_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/workbench"
)

// listed returns the runs.list entries of srv by directory.
func listed(t *testing.T, srv *workbench.Server) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range call(t, srv, "runs.list", nil).([]any) {
		m := r.(map[string]any)
		dir := m["dir"].(string)
		if out[dir] != nil {
			t.Errorf("runs.list lists %s twice", dir)
		}
		out[dir] = m
	}
	return out
}

// until polls cond every 10 ms for up to limit and returns how long it took
// to hold; it fails the test when it never does.
func until(t *testing.T, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// writeRun writes a run directory with an event log of the given records.
func writeRun(t *testing.T, dir string, records ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, train.EventsFile), []byte(strings.Join(records, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendRecord(t *testing.T, dir, record string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, train.EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, record); err != nil {
		t.Fatal(err)
	}
}

func register(t *testing.T, dir string) {
	t.Helper()
	if err := train.RegisterRun(dir); err != nil {
		t.Fatal(err)
	}
}

const startRecord = `{"version":1,"kind":"start","time":"2026-01-01T00:00:00Z","epoch":0,"step":0,"batches":10}`

// The workbench lists the runs of its folder and every run of the run
// registry, wherever it lies, each once: a run registered while it runs
// shows within 2 s and its step follows its log within a second; entries
// whose directory is gone are skipped, a deleted run leaves the list, and
// a registered run's checkpoints are listed and exported like a folder's.
func TestRegistryRunsAreListed(t *testing.T) {
	reg := t.TempDir()
	t.Setenv(train.RegistryEnv, reg)
	elsewhere := t.TempDir() // outside the workbench's root

	// Before the workbench starts: a registered run whose directory is
	// gone, and one in its own runs folder registered under two names.
	gone := filepath.Join(elsewhere, "gone")
	writeRun(t, gone, startRecord)
	register(t, gone)
	os.RemoveAll(gone)
	older := filepath.Join(elsewhere, "older")
	writeRun(t, older, startRecord, `{"kind":"end","time":"2026-01-01T00:01:00Z","epoch":1,"step":10,"reason":"completed"}`)
	register(t, older)

	srv, _ := newFakeServer(t, workbench.Config{})
	info := call(t, srv, "server.info", nil).(map[string]any)
	if info["run_registry"] != reg {
		t.Errorf("server.info run_registry %v, want %s", info["run_registry"], reg)
	}
	root := filepath.Dir(info["run_dirs"].([]any)[0].(string))
	inRoot := filepath.Join(root, "runs", "in-root")
	writeRun(t, inRoot, startRecord)
	register(t, inRoot)
	alias := filepath.Join(elsewhere, "alias")
	if err := os.Symlink(inRoot, alias); err != nil {
		t.Fatal(err)
	}
	register(t, alias)

	// A run registered while the workbench runs: listed within 2 s.
	live := filepath.Join(elsewhere, "live")
	writeRun(t, live, startRecord)
	register(t, live)
	took := until(t, "the registered run listed", 2*time.Second, func() bool { return listed(t, srv)[live] != nil })
	t.Logf("registered run listed after %v", took.Round(time.Millisecond))
	// Its step follows its log within a second.
	for step := 5; step <= 15; step += 5 {
		appendRecord(t, live, fmt.Sprintf(`{"kind":"step","time":"2026-01-01T00:00:01Z","epoch":1,"step":%d,"metrics":{"loss":0.5}}`, step))
		took := until(t, "the step in runs.list", time.Second, func() bool { return listed(t, srv)[live]["step"] == float64(step) })
		t.Logf("step %d listed after %v", step, took.Round(time.Millisecond))
	}
	appendRecord(t, live, `{"kind":"end","time":"2026-01-01T00:00:02Z","epoch":1,"step":15,"reason":"completed"}`)
	until(t, "the end in runs.list", time.Second, func() bool { return listed(t, srv)[live]["status"] == "completed" })

	runs := listed(t, srv)
	for _, want := range []string{older, inRoot, live} {
		if runs[want] == nil {
			t.Errorf("%s is not listed; runs.list: %v", want, runs)
		}
	}
	if runs[gone] != nil || runs[alias] != nil {
		t.Errorf("a gone run or a second name of a listed run is listed: %v", runs)
	}
	if len(runs) != 3 {
		t.Errorf("runs.list has %d runs, want 3: %v", len(runs), runs)
	}
	if runs[older]["registered"] != true || runs[inRoot]["registered"] != nil {
		t.Errorf("registered marks: older %v, in-root %v", runs[older]["registered"], runs[inRoot]["registered"])
	}

	// A registered run that then appears in the runs folder too (through
	// a link): listed once, under the folder's name.
	linked := filepath.Join(root, "runs", "linked-older")
	if err := os.Symlink(older, linked); err != nil {
		t.Fatal(err)
	}
	until(t, "the linked run under the folder's name", 3*time.Second, func() bool {
		runs := listed(t, srv)
		return runs[linked] != nil && runs[older] == nil
	})
	if r := listed(t, srv)[linked]; r["registered"] != nil {
		t.Errorf("the run in the folder is marked registered: %v", r)
	}

	// A real Fit outside the root: its checkpoints are listed and exported.
	fitDir := filepath.Join(elsewhere, "fit")
	m := trainRun(t, fitDir)
	defer nn.Release(m)
	until(t, "the fitted run completed", 3*time.Second, func() bool { return listed(t, srv)[fitDir]["status"] == "completed" })
	cks := call(t, srv, "checkpoints.list", map[string]any{"dir": fitDir}).([]any)
	if len(cks) == 0 {
		t.Fatal("the registered run's checkpoints are not listed")
	}
	last := cks[len(cks)-1].(map[string]any)
	res := call(t, srv, "checkpoints.export", map[string]any{"path": last["path"], "out": "export/fit.safetensors"}).(map[string]any)
	if res["bytes"].(float64) <= 0 {
		t.Errorf("export: %v", res)
	}

	// A deleted run leaves the list; the gone entry is no error.
	os.RemoveAll(live)
	until(t, "the deleted run gone from runs.list", 3*time.Second, func() bool { return listed(t, srv)[live] == nil })
	if _, err := callErr(srv, "runs.snapshot", map[string]any{"dir": gone}); err == nil || !strings.Contains(err.Error(), "run registry "+reg) {
		t.Errorf("runs.snapshot of a gone run: %v, want an error naming the registry", err)
	}
}

// With the registry off the workbench follows its folders alone, and
// server.info says why.
func TestRegistryOff(t *testing.T) {
	t.Setenv(train.RegistryEnv, "off")
	srv, _ := newFakeServer(t, workbench.Config{})
	info := call(t, srv, "server.info", nil).(map[string]any)
	if info["run_registry"] != "" || !strings.Contains(fmt.Sprint(info["run_registry_note"]), "off") {
		t.Errorf("server.info with the registry off: run_registry %q, note %q", info["run_registry"], info["run_registry_note"])
	}
}

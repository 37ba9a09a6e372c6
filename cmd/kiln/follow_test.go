package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/workbench"
)

// startRecord is an Observer that, when a run's start event arrives, calls
// at once (on the observer's goroutine, while the run goes on).
type startRecord struct {
	at   func(train.Event)
	mu   sync.Mutex
	evs  []train.Event
	once sync.Once
}

func (o *startRecord) OnEvent(e train.Event) {
	o.mu.Lock()
	o.evs = append(o.evs, e)
	o.mu.Unlock()
	if e.Kind == train.EventStart {
		o.once.Do(func() { o.at(e) })
	}
}

// The real `kiln demo -np 2` (this test binary standing in for kiln, found
// through KILN_BIN), started and followed live by train.FollowCommand
// while a workbench engine follows the runs directory: the start event
// reaches the follower with world size 2 while the ranks train, the
// engine's runs.snapshot and runs.list report world_size 2 (during the run
// and after it), and `kiln inspect` prints the ranks.
func TestFollowDataParallelDemoInWorkbench(t *testing.T) {
	if raceEnabled {
		t.Skip("a training demo: the plain run checks it (see race_test.go)")
	}
	if testing.Short() {
		t.Skip("runs two ranks under mpirun; skipped with -short")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KILN_TEST_MAIN", "1") // the test binary runs main, as kiln
	t.Setenv("KILN_BIN", self)
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	dir := filepath.Join(runs, "dp")
	srv, err := workbench.New(context.Background(), workbench.Config{Root: root, RunDirs: []string{runs}, Existing: startFakeKernel(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	call := func(method string, params any) any {
		p, _ := json.Marshal(params)
		res, err := srv.Call(context.Background(), method, p)
		if err != nil {
			t.Errorf("%s: %v", method, err)
			return nil
		}
		b, _ := json.Marshal(res)
		var v any
		json.Unmarshal(b, &v)
		return v
	}

	var during map[string]any // the run's summary when its start event arrived
	obs := &startRecord{at: func(train.Event) {
		snap, _ := call("runs.snapshot", map[string]string{"dir": dir}).(map[string]any)
		during, _ = snap["summary"].(map[string]any)
	}}
	cmd, err := train.KilnCommand("demo", "-np", "2", "-subset", "2000", "-epochs", "1", "-batch", "64", "-device", "cpu", "-run-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	res, err := train.FollowCommand(context.Background(), cmd, dir, []train.Observer{obs})
	t.Logf("kiln demo -np 2 followed in %v:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != train.StopCompleted || res.Epochs != 1 || len(res.Valid) != 1 || res.Valid[0]["accuracy"] < 0.5 {
		t.Errorf("result %+v", res)
	}
	obs.mu.Lock()
	evs := obs.evs
	obs.mu.Unlock()
	if len(evs) < 3 || evs[0].WorldSize != 2 || evs[len(evs)-1].Kind != train.EventEnd {
		t.Fatalf("followed %d events, first %+v", len(evs), evs[0])
	}
	if during["world_size"] != float64(2) {
		t.Errorf("runs.snapshot as the run started: summary %v, want world_size 2", during)
	}
	t.Logf("the run as the engine saw it when its start event arrived: %v", during)

	// The engine reads the rest of the log on its next file-system event
	// or rescan (every 2 s).
	var listed map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list, _ := call("runs.list", nil).([]any)
		for _, r := range list {
			if r, _ := r.(map[string]any); r["dir"] == dir {
				listed = r
			}
		}
		if listed["status"] == "completed" || time.Now().After(deadline) {
			break
		}
	}
	if listed["world_size"] != float64(2) || listed["status"] != "completed" {
		t.Errorf("runs.list entry %v, want world_size 2, completed", listed)
	}

	var stdout, stderr bytes.Buffer
	if err := inspectCommand([]string{dir}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "ranks       2, data-parallel") {
		t.Errorf("kiln inspect:\n%s", stdout.String())
	}
}

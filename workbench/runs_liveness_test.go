package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// slowItems delays every item, so that a run lasts.
type slowItems struct{ data.Dataset }

func (d slowItems) Get(i int) (data.Item, error) {
	time.Sleep(10 * time.Millisecond)
	return d.Dataset.Get(i)
}

// TestRunsChildTraining is the training process of
// TestKilledRunShowsKilled: the test binary run again with
// KILN_WORKBENCH_CHILD_RUN set to a run directory, training a 4→3
// classifier on 16 synthetic items, 40 ms a step, logging every step, for
// ever.
func TestRunsChildTraining(t *testing.T) {
	dir := os.Getenv("KILN_WORKBENCH_CHILD_RUN")
	if dir == "" {
		t.Skip("the child process of TestKilledRunShowsKilled")
	}
	r := rand.New(rand.NewPCG(1, 2))
	items := make([]data.Item, 16)
	for i := range items {
		x := make([]float32, 4)
		for j := range x {
			x[j] = float32(r.NormFloat64()) + float32(i%3)
		}
		items[i] = data.Item{X: x, Label: int64(i % 3)}
	}
	ld, err := data.NewLoader(slowItems{data.NewInMemory(items)}, data.LoaderConfig{BatchSize: 4, Device: tensor.CPU()})
	if err != nil {
		t.Fatal(err)
	}
	ad := tensor.CPU().Autodiff()
	ad.Seed(1)
	var m *nn.Linear
	tensor.NoScope(func() { m = nn.NewLinear(ad, 4, 3) })
	s := &train.Supervised{Config: train.Config{Epochs: 1_000_000, LogEvery: 1, RunDir: dir}, Train: ld, Checkpoint: train.NoCheckpoints}
	_, err = s.Fit(context.Background(), &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.01})})
	t.Fatalf("the run ended: %v", err)
}

// topics records the topics a runFollower publishes, with their times.
type topics struct {
	mu   sync.Mutex
	list []string
	at   []time.Time
}

func (p *topics) publish(topic string, _ any) {
	p.mu.Lock()
	p.list = append(p.list, topic)
	p.at = append(p.at, time.Now())
	p.mu.Unlock()
}

// since reports whether topic was published after t.
func (p *topics) since(topic string, t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.list {
		if s == topic && p.at[i].After(t) {
			return true
		}
	}
	return false
}

// follow starts a runFollower on runs and returns the run methods of a
// Server around it (no kernel: runs.* need none).
func follow(t *testing.T, runs string) (map[string]method, *topics) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &topics{}
	f := newRunFollower(ctx, []string{runs}, "", p.publish)
	t.Cleanup(func() {
		cancel()
		f.wait()
	})
	return (&Server{runs: f}).runMethods(), p
}

// runOf returns the runs.list entry of dir (nil when not listed).
func runOf(t *testing.T, methods map[string]method, dir string) map[string]any {
	t.Helper()
	res, err := methods["runs.list"](context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	var list []map[string]any
	json.Unmarshal(b, &list)
	for _, r := range list {
		if r["dir"] == dir {
			return r
		}
	}
	return nil
}

func stop(methods map[string]method, dir string) error {
	_, err := methods["runs.stop"](context.Background(), json.RawMessage(fmt.Sprintf(`{"dir":%q}`, dir)))
	return err
}

// A training process killed with SIGKILL writes nothing more; runs.list
// says "killed" within 10 s all the same (runs.changed tells the UI), and
// runs.stop refuses the run instead of writing a STOP file nobody reads.
func TestKilledRunShowsKilled(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("checks processes by pid and flock")
	}
	runs := filepath.Join(t.TempDir(), "runs")
	dir := filepath.Join(runs, "slow")
	os.MkdirAll(runs, 0o755)
	methods, published := follow(t, runs)

	cmd := exec.Command(os.Args[0], "-test.run=^TestRunsChildTraining$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KILN_WORKBENCH_CHILD_RUN="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	pid := float64(cmd.Process.Pid)
	var run map[string]any
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		run = runOf(t, methods, dir)
		if run != nil && run["status"] == "running" && run["step"].(float64) > 0 && run["pid"] == pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live run is listed as %v; the child said:\n%s", run, out.String())
		}
	}
	// Alive through a few liveness checks.
	time.Sleep(2*rescanEvery + 500*time.Millisecond)
	if run = runOf(t, methods, dir); run["status"] != "running" || run["heartbeat"] == nil {
		t.Fatalf("the live run after %v: %v", 2*rescanEvery, run)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for run = runOf(t, methods, dir); run["status"] != "killed"; run = runOf(t, methods, dir) {
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("10 s after SIGKILL the run is listed as %v", run)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("listed as killed %v after SIGKILL: %v", time.Since(killed).Round(time.Millisecond), run["why"])
	if !strings.Contains(fmt.Sprint(run["why"]), fmt.Sprintf("process %d was killed", cmd.Process.Pid)) {
		t.Errorf("why: %v", run["why"])
	}
	if !published.since("runs.changed", killed) {
		t.Error("no runs.changed after the kill")
	}
	err := stop(methods, dir)
	if err == nil || !strings.Contains(err.Error(), "is not running: its process") || !strings.Contains(err.Error(), "no heartbeat since") {
		t.Errorf("runs.stop on the killed run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, train.StopFile)); err == nil {
		t.Error("runs.stop left a STOP file in the killed run")
	}
	cmd.Wait() // reaped: still killed
	if run = runOf(t, methods, dir); run["status"] != "killed" {
		t.Errorf("reaped: %v", run)
	}
}

// Runs whose process cannot be checked from here show as stale once they
// have shown no sign of life for train.StaleAfter; runs.stop refuses them.
func TestStaleRunsShowStale(t *testing.T) {
	runs := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write := func(name, events, process string) string {
		dir := filepath.Join(runs, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(events), 0o644)
		if process != "" {
			os.WriteFile(filepath.Join(dir, train.ProcessFile), []byte(process), 0o644)
		}
		return dir
	}
	start := `{"version":1,"kind":"start","time":"2025-06-01T12:00:00Z"}` + "\n"
	heartbeat := func(t time.Time) string {
		return fmt.Sprintf(`{"version":1,"pid":4242,"host":"another-machine.example","boot_id":"not-this-boot","locked":true,"started":%q,"heartbeat":%q,"state":"running"}`,
			t.Add(-time.Minute).Format(time.RFC3339Nano), t.Format(time.RFC3339Nano))
	}
	remoteStale := write("remote-stale", start, heartbeat(old))
	remoteLive := write("remote-live", start, heartbeat(time.Now().Add(time.Hour))) // fresh for the whole test
	legacyStale := write("legacy-stale", start, "")
	os.Chtimes(filepath.Join(legacyStale, "events.jsonl"), old, old)
	legacyLive := write("legacy-live", start, "")
	completed := write("completed", start+`{"kind":"end","reason":"completed"}`+"\n", heartbeat(old))

	methods, _ := follow(t, runs)
	cases := []struct {
		dir, status, why string
	}{
		{remoteStale, "stale", "process 4242 on another-machine.example has sent no heartbeat for"},
		{remoteLive, "running", ""},
		{legacyStale, "stale", "no " + train.ProcessFile},
		{legacyLive, "running", ""},
		{completed, "completed", ""},
	}
	for _, c := range cases {
		run := runOf(t, methods, c.dir)
		if run["status"] != c.status || !strings.Contains(fmt.Sprint(run["why"]), c.why) {
			t.Errorf("%s: %v, want %s (…%s…)", filepath.Base(c.dir), run, c.status, c.why)
		}
		err := stop(methods, c.dir)
		switch c.status {
		case "running":
			if err != nil {
				t.Errorf("%s: runs.stop: %v", filepath.Base(c.dir), err)
			}
		case "stale":
			if err == nil || !strings.Contains(err.Error(), "is not running: its ") || !strings.Contains(err.Error(), c.why) {
				t.Errorf("%s: runs.stop: %v", filepath.Base(c.dir), err)
			}
		default:
			if err == nil || !strings.Contains(err.Error(), "is not running ("+c.status+")") {
				t.Errorf("%s: runs.stop: %v", filepath.Base(c.dir), err)
			}
		}
	}
	if run := runOf(t, methods, remoteStale); run["pid"] != 4242.0 || run["host"] != "another-machine.example" {
		t.Errorf("the stale run's process: %v", run)
	}
}

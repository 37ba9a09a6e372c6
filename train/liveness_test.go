package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// slowData delays every item, so that a run lasts.
type slowData struct {
	data.Dataset
	delay time.Duration
}

func (d slowData) Get(i int) (data.Item, error) {
	time.Sleep(d.delay)
	return d.Dataset.Get(i)
}

// slowRun is a Supervised that trains a 4→3 classifier for ever (a million
// epochs of 4 batches, each 40 ms or more) into dir, logging every step.
func slowRun(t *testing.T, dir string) (*train.Supervised, *train.Learner) {
	model := newLinear(tensor.CPU(), 1)
	t.Cleanup(func() { nn.Release(model) })
	s := &train.Supervised{
		Config:     train.Config{Epochs: 1_000_000, LogEvery: 1, RunDir: dir},
		Train:      loader(t, slowData{blobs(16, 1), 10 * time.Millisecond}, tensor.CPU(), data.LoaderConfig{BatchSize: 4}),
		Checkpoint: train.NoCheckpoints,
	}
	return s, &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.01})}
}

// TestTrainChildProcess is the training process of TestKilledRunIsKilled
// (the test binary run again with KILN_TRAIN_CHILD_DIR set); it trains
// until killed.
func TestTrainChildProcess(t *testing.T) {
	dir := os.Getenv("KILN_TRAIN_CHILD_DIR")
	if dir == "" {
		t.Skip("the child process of TestKilledRunIsKilled")
	}
	s, l := slowRun(t, dir)
	_, err := s.Fit(context.Background(), l)
	t.Fatalf("the run ended: %v", err)
}

// startTraining starts a separate process training into dir and waits for
// its first step record.
func startTraining(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("checks processes by pid and flock")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrainChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KILN_TRAIN_CHILD_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, train.EventsFile))
		if bytes.Contains(b, []byte(`"kind":"step"`)) {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("no step record after 60 s; the child said:\n%s", out.String())
		}
	}
}

// A SIGKILLed training process is judged killed at once, as a zombie and
// once reaped, and was judged running, with its pid, while it lived.
func TestKilledRunIsKilled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cmd := startTraining(t, dir)
	l, err := train.RunLiveness(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.State != train.LivenessRunning || l.PID != cmd.Process.Pid || !l.Local || l.Heartbeat.IsZero() {
		t.Fatalf("the live run: %+v", l)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		// Not reaped yet: a zombie, without its lock.
		if l, err = train.RunLiveness(dir); err == nil && l.State == train.LivenessKilled {
			break
		}
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("5 s after SIGKILL: %+v, %v", l, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(l.Why, "killed") || l.PID != cmd.Process.Pid {
		t.Errorf("killed run: %+v", l)
	}
	cmd.Wait()
	if l, err := train.RunLiveness(dir); err != nil || l.State != train.LivenessKilled {
		t.Errorf("reaped: %+v, %v", l, err)
	}
}

// Fit holds the run directory's process.json while it runs and marks it
// ended after its end record; a second Fit into the directory meanwhile
// fails with ErrRunDirInUse.
func TestFitHoldsItsRunDirectory(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no advisory file locks or process table under WebAssembly: the run goes unlocked, so a second Fit is not refused")
	}
	dir := filepath.Join(t.TempDir(), "run")
	s, l := slowRun(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu     sync.Mutex
		during []train.Liveness
		second error
	)
	seen := make(chan struct{})
	s.Observers = []train.Observer{train.ObserverFunc(func(e train.Event) {
		if e.Kind != train.EventStep || e.Step != 1 {
			return
		}
		l, err := train.RunLiveness(dir)
		if err != nil {
			t.Error(err)
		}
		s2, l2 := slowRun(t, dir)
		ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second) // should it run
		_, err2 := s2.Fit(ctx2, l2)
		cancel2()
		mu.Lock()
		during, second = append(during, l), err2
		mu.Unlock()
		close(seen)
		cancel()
	})}
	res, err := s.Fit(ctx, l)
	if err != nil || res.Reason != train.StopCancelled {
		t.Fatalf("%+v, %v", res, err)
	}
	<-seen
	mu.Lock()
	defer mu.Unlock()
	if len(during) != 1 || during[0].State != train.LivenessRunning || during[0].PID != os.Getpid() || !during[0].Local {
		t.Errorf("during the run: %+v", during)
	}
	if !errors.Is(second, train.ErrRunDirInUse) || !strings.Contains(second.Error(), "process") {
		t.Errorf("a second Fit into the directory: %v", second)
	}
	after, err := train.RunLiveness(dir)
	if err != nil || after.State != train.LivenessStopped || after.Reason != train.StopCancelled || after.Ended.IsZero() {
		t.Errorf("after the run: %+v, %v", after, err)
	}
	var rec map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, train.ProcessFile))
	if err := json.Unmarshal(b, &rec); err != nil || rec["state"] != "ended" || rec["pid"] != float64(os.Getpid()) {
		t.Errorf("process.json after the run: %s (%v)", b, err)
	}
	// The lock was let go: the directory takes a new run.
	s3, l3 := slowRun(t, dir)
	s3.Config.Epochs = 1
	if _, err := s3.Fit(context.Background(), l3); err != nil {
		t.Errorf("a new run after the first: %v", err)
	}
}

// The heartbeat moves while a run lives.
func TestHeartbeatMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for two heartbeats")
	}
	dir := filepath.Join(t.TempDir(), "run")
	s, l := slowRun(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := s.Fit(ctx, l); done <- err }()
	var first time.Time
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		l, err := train.RunLiveness(dir)
		if err != nil || l.State != train.LivenessRunning {
			continue
		}
		if first.IsZero() {
			first = l.Heartbeat
		} else if l.Heartbeat.Sub(first) >= train.HeartbeatEvery/2 {
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("the heartbeat stayed at %v", first)
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/train"
)

// runDemoFor runs `kiln demo args…` with its output in a buffer (not a
// terminal, so log lines, no dashboard) and returns the output.
func runDemoFor(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := demo(context.Background(), args, &out); err != nil {
		t.Fatalf("kiln demo %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

var accuracyLine = regexp.MustCompile(`(?m)^test accuracy: ([0-9.]+)% on (\d+) images$`)

// checkMNISTDemo checks the demo's output and run directory and returns
// the test accuracy it printed (a fraction).
func checkMNISTDemo(t *testing.T, out, dir string, epochs, testImages int) float64 {
	t.Helper()
	m := accuracyLine.FindStringSubmatch(out)
	if m == nil || m[2] != strconv.Itoa(testImages) {
		t.Fatalf("no accuracy line for %d test images in:\n%s", testImages, out)
	}
	acc, _ := strconv.ParseFloat(m[1], 64)
	if !strings.Contains(out, "completed after "+strconv.Itoa(epochs)+" epochs") || !strings.Contains(out, "epoch times ") {
		t.Errorf("no summary line in:\n%s", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequences in output for a non-terminal:\n%q", out)
	}
	evs, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 3 || evs[0].Kind != train.EventStart || evs[len(evs)-1].Kind != train.EventEnd ||
		evs[len(evs)-1].Reason != train.StopCompleted {
		t.Fatalf("events.jsonl: %d events, first %+v", len(evs), evs[0])
	}
	valid := 0
	for _, e := range evs {
		if e.Kind == train.EventEpoch && e.Split == "valid" {
			valid++
			if got := strconv.FormatFloat(100*e.Metrics["accuracy"], 'f', 2, 64); e.Epoch == epochs && got != m[1] {
				t.Errorf("last valid event accuracy %v, printed %s%%", e.Metrics["accuracy"], m[1])
			}
		}
	}
	if valid != epochs {
		t.Errorf("%d valid epoch events, want %d", valid, epochs)
	}
	return acc / 100
}

// The demo on a subset: 6000 training images for one epoch (47 steps),
// tested on the first 3000 test images. It reaches about 87%; 80% leaves
// room for kernel rounding while far above chance (10%).
func TestDemoMNISTSubset(t *testing.T) {
	if raceEnabled {
		t.Skip("a training demo: the plain run checks it (see race_test.go)")
	}
	dir := filepath.Join(t.TempDir(), "run")
	out := runDemoFor(t, "-subset", "6000", "-epochs", "1", "-device", "cpu", "-run-dir", dir)
	t.Log(out)
	if acc := checkMNISTDemo(t, out, dir, 1, 3000); acc < 0.80 {
		t.Errorf("test accuracy %.2f%%, want at least 80%%", 100*acc)
	}
	for _, want := range []string{"device: cpu (-device)", "training a 784-256-128-10 MLP on 6000 MNIST images for 1 epochs",
		"epoch 1/1 train loss"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestDemoXOR(t *testing.T) {
	out := runDemoFor(t, "-xor", "-steps", "20", "-device", "cpu")
	if !strings.Contains(out, "step    1  loss") || !strings.Contains(out, "trained 20 steps") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestDemoBadFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"zero epochs", []string{"-epochs", "0"}, "must be positive"},
		{"negative subset", []string{"-subset", "-1"}, "not negative"},
		{"stray argument", []string{"mnist"}, "unexpected arguments"},
		{"unknown device", []string{"-device", "tpu:9"}, "tpu"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := demo(context.Background(), c.args, &out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// `kiln demo -np 2` trains data-parallel on two ranks under mpirun (this
// test binary standing in for kiln): one run directory, written by rank 0
// alone with world size 2 in its start event, one summary, and an accuracy
// far above chance.
func TestDemoDataParallel(t *testing.T) {
	if raceEnabled {
		t.Skip("a training demo: the plain run checks it (see race_test.go)")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin")
	}
	t.Setenv("KILN_TEST_MAIN", "1") // the ranks run main
	dir := filepath.Join(t.TempDir(), "run")
	out := runDemoFor(t, "-np", "2", "-subset", "4000", "-epochs", "1", "-batch", "64", "-device", "cpu", "-run-dir", dir)
	t.Log(out)
	if acc := checkMNISTDemo(t, out, dir, 1, 2000); acc < 0.75 {
		t.Errorf("test accuracy %.2f%%, want at least 75%%", 100*acc)
	}
	if n := strings.Count(out, "test accuracy:"); n != 1 || !strings.Contains(out, "32 steps of 64 per process, 2 processes under Open MPI (mpirun)") {
		t.Errorf("%d accuracy lines (want rank 0's alone) or no line naming the 2 processes", n)
	}
	evs, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].WorldSize != 2 || evs[0].Batches != 32 {
		t.Errorf("start event %+v: want world size 2 and 32 batches per rank", evs[0])
	}
}

// rankPID returns the PID of the process whose environment holds tag and
// OMPI_COMM_WORLD_RANK=rank, 0 when there is none (yet).
func rankPID(tag string, rank int) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		if slices.Contains(vars, tag) && slices.Contains(vars, "OMPI_COMM_WORLD_RANK="+strconv.Itoa(rank)) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return 0
}

// TestDemoDataParallelRankKilled: SIGKILL one rank of `kiln demo -np 2`
// after its first epoch's checkpoint, and the run ends within 30 s with
// an error naming rank 1; `kiln demo -np 2 -resume DIR` then continues it
// from that checkpoint to the end.
func TestDemoDataParallelRankKilled(t *testing.T) {
	if raceEnabled {
		t.Skip("a training demo: the plain run checks it (see race_test.go)")
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin")
	}
	if runtime.GOOS != "linux" {
		t.Skip("finds the rank through /proc")
	}
	t.Setenv("KILN_TEST_MAIN", "1") // the ranks run main
	tag := fmt.Sprintf("KILN_TEST_KILL_TAG=%d-%d", os.Getpid(), time.Now().UnixNano())
	name, value, _ := strings.Cut(tag, "=")
	t.Setenv(name, value)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"-np", "2", "-subset", "8000", "-epochs", "4", "-batch", "32", "-device", "cpu", "-run-dir", dir}
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- demo(context.Background(), args, &out) }()

	deadline := time.Now().Add(90 * time.Second)
	for {
		if ck, _ := filepath.Glob(filepath.Join(dir, train.CheckpointsDir, "epoch-0001*")); len(ck) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the demo ended (%v) before its first checkpoint:\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after 90 s:\n%s", out.String())
		}
	}
	pid := rankPID(tag, 1)
	if pid == 0 {
		t.Fatalf("rank 1 not found among the processes:\n%s", out.String())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the run went on 60 s after rank 1 was killed:\n%s", out.String())
	}
	took := time.Since(killed)
	t.Logf("ended %s after the kill with %v; output:\n%s", took, err, out.String())
	if took > 30*time.Second {
		t.Errorf("the run took %s to end after rank 1 was killed", took)
	}
	if err == nil || !strings.Contains(out.String()+err.Error(), "rank 1") {
		t.Fatalf("the run's end does not name rank 1 (err %v)", err)
	}
	if !strings.Contains(err.Error(), "-resume "+dir) {
		t.Errorf("the error does not say how to resume: %v", err)
	}
	if strings.Contains(out.String(), "completed after 4 epochs") {
		t.Fatal("the run completed though rank 1 was killed before its end: the test did not test anything")
	}

	resumed := runDemoFor(t, "-np", "2", "-subset", "8000", "-epochs", "4", "-batch", "32", "-device", "cpu", "-resume", dir)
	t.Log(resumed)
	if !strings.Contains(resumed, "resuming from the last checkpoint of "+dir) {
		t.Errorf("no resume line")
	}
	if acc := checkMNISTDemo(t, resumed, dir, 4, 4000); acc < 0.8 {
		t.Errorf("resumed run's test accuracy %.2f%%, want at least 80%%", 100*acc)
	}
	evs, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var resumes int
	for _, e := range evs {
		if e.Kind == train.EventResume {
			resumes++
			if e.Position == nil || e.Position.Epoch < 1 {
				t.Errorf("resume event %+v: want a position after epoch 1", e)
			}
		}
	}
	if resumes != 1 {
		t.Errorf("%d resume events, want 1", resumes)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

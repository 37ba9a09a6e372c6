package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

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

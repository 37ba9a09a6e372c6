package dashboard_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/train/dashboard"
)

// blobs returns n items of 4 features in 3 separable classes.
func blobs(n int) *data.InMemory {
	r := rand.New(rand.NewPCG(1, 1))
	items := make([]data.Item, n)
	for i := range items {
		x := make([]float32, 4)
		for j := range x {
			x[j] = float32(r.NormFloat64() * 0.5)
		}
		x[i%3] += 2
		items[i] = data.Item{X: x, Label: int64(i % 3)}
	}
	return data.NewInMemory(items)
}

// job is a small classification run on dev: a 4→3 linear model, SGD.
// The caller releases the learner with release.
func job(t *testing.T, dev tensor.Device, epochs int) (*train.Supervised, *train.Learner) {
	t.Helper()
	ld, err := data.NewLoader(blobs(96), data.LoaderConfig{BatchSize: 16, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	ad := dev.Autodiff()
	ad.Seed(1)
	var model *nn.Linear
	tensor.NoScope(func() { model = nn.NewLinear(ad, 4, 3) })
	opt := optim.NewSGD(optim.SGDConfig{LR: 0.1})
	s := &train.Supervised{Config: train.Config{Epochs: epochs, LogEvery: 3}, Train: ld, Valid: ld}
	return s, &train.Learner{Model: model, Optimizer: opt}
}

func release(l *train.Learner) {
	nn.Release(l.Model)
	l.Optimizer.ZeroState()
}

func TestRunOffTerminalLogsPlainLines(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		s, l := job(t, dev, 2)
		defer release(l)
		var out bytes.Buffer
		res, err := dashboard.Run(context.Background(), s, l, dashboard.Options{Title: "blobs", Output: &out})
		if err != nil || res.Reason != train.StopCompleted {
			t.Fatalf("Run: %+v, %v", res, err)
		}
		got := out.String()
		if strings.Contains(got, "\x1b") {
			t.Fatalf("escape sequences in the plain output:\n%q", got)
		}
		lines := strings.Split(strings.TrimSpace(got), "\n")
		// Two step lines (every 3 of 6 steps) and one epoch line per epoch.
		if len(lines) != 6 || !strings.HasPrefix(lines[0], "epoch 1/2 batch 3/6 step 3 loss") ||
			!strings.HasPrefix(lines[5], "epoch 2/2 train loss") || !strings.Contains(lines[5], "| valid loss") {
			t.Fatalf("plain output:\n%s", got)
		}
		if s.Log != nil || len(s.Observers) != 0 {
			t.Fatal("Run changed the Supervised it was given")
		}
	})
}

func TestRunKeepsTheCallersLog(t *testing.T) {
	s, l := job(t, tensor.CPU(), 1)
	defer release(l)
	var log, out bytes.Buffer
	s.Log = &log
	if _, err := dashboard.Run(context.Background(), s, l, dashboard.Options{Output: &out}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || !strings.Contains(log.String(), "epoch 1/1 train") {
		t.Fatalf("output %q, log %q", out.String(), log.String())
	}
}

// On a terminal (a pseudo-terminal here) Run draws the dashboard, and q
// stops the run after its current step.
func TestRunOnTerminalStopsOnQ(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 90}); err != nil {
		t.Fatal(err)
	}
	if !dashboard.IsTerminal(tty) {
		t.Fatal("IsTerminal(pty) is false")
	}
	var screen testutil.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			_, _ = screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()

	s, l := job(t, tensor.CPU(), 1_000_000) // runs until stopped
	defer release(l)
	s.Log = nil
	type outcome struct {
		res train.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := dashboard.Run(context.Background(), s, l, dashboard.Options{Title: "blobs", Output: tty, Input: tty})
		done <- outcome{res, err}
	}()
	deadline := time.Now().Add(20 * time.Second)
	validated := func() bool {
		return strings.Contains(screen.String(), "valid (epoch") || strings.Contains(screen.String(), "valid ep ")
	}
	for !validated() {
		if time.Now().After(deadline) {
			t.Fatalf("no dashboard with a validated epoch after 20 s; screen:\n%q", screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := ptmx.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if o.err != nil || o.res.Reason != train.StopCancelled {
			t.Fatalf("Run after q: %+v, %v", o.res, o.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20 s of q")
	}
	time.Sleep(100 * time.Millisecond) // let the last frame arrive
	for _, want := range []string{"Kiln", "blobs", "epoch", "ETA", "loss", "cancelled"} {
		if !strings.Contains(screen.String(), want) {
			t.Errorf("screen lacks %q", want)
		}
	}
}

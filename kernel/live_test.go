package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/train"
)

// trainCell is a cell that trains a 4→3 classifier on blobs of n items in
// batches of batch, for epochs epochs, logging every step, in dir; ctxExpr
// is the context it passes to Fit.
func trainCell(dir string, n, batch, epochs int, ctxExpr string) string {
	return fmt.Sprintf(`
rng := rand.New(rand.NewSource(1))
items := make([]data.Item, 0, %[2]d)
for i := 0; i < %[2]d; i++ {
	c := i %% 3
	x := make([]float32, 4)
	for j := range x {
		x[j] = float32(rng.NormFloat64()) + float32(2*c)
	}
	items = append(items, data.Item{X: x, Label: int64(c)})
}
ld, err := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: %[3]d, Device: tensor.CPU()})
if err != nil {
	panic(err)
}
model := nn.NewLinear(tensor.CPU().Autodiff(), 4, 3)
sup := &train.Supervised{Config: train.Config{Epochs: %[4]d, LogEvery: 1, RunDir: %[1]q}, Train: ld}
res, err := sup.Fit(%[5]s, &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.05})})
if err != nil {
	panic(err)
}
fmt.Println("steps", res.Steps, res.Reason)
`, dir, n, batch, epochs, ctxExpr)
}

// dashboardMessages returns the display messages of the run's dashboard
// (those with a display_id), checking that the first shows it and the
// others update it.
func dashboardMessages(t *testing.T, rec *recorder) []display.Message {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []display.Message
	preloads := 0
	for _, m := range rec.messages {
		if m.DisplayID() == "" {
			if html, _ := m.Data.Data[display.MIMETypeHTML].(string); strings.Contains(html, "echarts") {
				preloads++
			}
			continue
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatal("no dashboard was shown")
	}
	for i, m := range out {
		want := display.UpdateDisplayData
		if i == 0 {
			want = display.DisplayData
		}
		if m.Kind != want || m.DisplayID() != out[0].DisplayID() {
			t.Fatalf("dashboard message %d: %v under %q, want %v under %q", i, m.Kind, m.DisplayID(), want, out[0].DisplayID())
		}
	}
	if preloads > 1 {
		t.Errorf("the chart library was sent %d times", preloads)
	}
	return out
}

var optionRE = regexp.MustCompile(`opt=(\{.*?\}),me=document\.currentScript`)

// lossSeries returns the points of the "raw" series of the loss-per-step
// chart in a dashboard render.
func lossSeries(t *testing.T, m display.Message) [][2]float64 {
	t.Helper()
	pts, ok := findLossSeries(m)
	if !ok {
		html, _ := m.Data.Data[display.MIMETypeHTML].(string)
		var titles []string
		for _, sub := range optionRE.FindAllStringSubmatch(html, -1) {
			var opt struct {
				Title any `json:"title"`
			}
			_ = json.Unmarshal([]byte(sub[1]), &opt)
			titles = append(titles, fmt.Sprint(opt.Title))
		}
		t.Fatalf("no loss-per-step chart with a raw series among %q", titles)
	}
	return pts
}

// findLossSeries is lossSeries, reporting whether the render has the chart.
func findLossSeries(m display.Message) ([][2]float64, bool) {
	html, _ := m.Data.Data[display.MIMETypeHTML].(string)
	for _, sub := range optionRE.FindAllStringSubmatch(html, -1) {
		var opt struct {
			Title  any `json:"title"`
			Series []struct {
				Name string       `json:"name"`
				Data [][2]float64 `json:"data"`
			} `json:"series"`
		}
		if err := json.Unmarshal([]byte(sub[1]), &opt); err != nil {
			continue // charts with non-numeric data
		}
		if !strings.Contains(fmt.Sprint(opt.Title), "loss per step") {
			continue
		}
		for _, s := range opt.Series {
			if s.Name == "raw" {
				return s.Data, true
			}
		}
	}
	return nil, false
}

// stepLosses returns the (step, loss) of every step event of a run: the
// loss of the samples since the previous step event of the epoch, from the
// running means over the epoch that the events carry (the mean of the
// first interval of an epoch is its running mean).
func stepLosses(t *testing.T, dir string) ([][2]float64, []train.Event) {
	t.Helper()
	evs, err := train.ReadEvents(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var pts [][2]float64
	var prev train.Event
	for _, e := range evs {
		if e.Kind != train.EventStep {
			continue
		}
		loss := e.Metrics["loss"]
		if prev.Kind == train.EventStep && prev.Epoch == e.Epoch && e.Samples > prev.Samples {
			loss = (loss*float64(e.Samples) - prev.Metrics["loss"]*float64(prev.Samples)) / float64(e.Samples-prev.Samples)
		}
		pts = append(pts, [2]float64{float64(e.Step), loss})
		prev = e
	}
	return pts, evs
}

func TestLiveDashboard(t *testing.T) {
	s := newSession(t, kernel.Options{})
	dir := filepath.Join(t.TempDir(), "run")
	rec := &recorder{}
	if _, err := s.Execute(context.Background(), trainCell(dir, 600, 4, 2, "ctx"), rec); err != nil {
		t.Fatal(describe(err))
	}
	msgs := dashboardMessages(t, rec)
	logged, _ := stepLosses(t, dir)
	if len(logged) != 300 {
		t.Fatalf("%d step events logged, want 300", len(logged))
	}
	got := lossSeries(t, msgs[len(msgs)-1])
	if len(got) != len(logged) {
		t.Fatalf("final render holds %d points, the log %d", len(got), len(logged))
	}
	for i := range got {
		if got[i][0] != logged[i][0] || math.Abs(got[i][1]-logged[i][1]) > 1e-9*max(1, math.Abs(logged[i][1])) {
			t.Fatalf("point %d: rendered %v, logged %v", i, got[i], logged[i])
		}
	}
	// A second run in the same session does not send the library again.
	rec2 := &recorder{}
	if _, err := s.Execute(context.Background(), trainCell(filepath.Join(t.TempDir(), "run2"), 30, 10, 1, "ctx"), rec2); err != nil {
		t.Fatal(describe(err))
	}
	for _, m := range rec2.messages {
		if html, _ := m.Data.Data[display.MIMETypeHTML].(string); len(html) > 200<<10 {
			t.Errorf("second run's %v is %d bytes: the library went out again", m.Kind, len(html))
		}
	}
}

func TestLiveDashboardThinsUpdates(t *testing.T) {
	s := newSession(t, kernel.Options{})
	dir := filepath.Join(t.TempDir(), "run")
	rec := &recorder{}
	start := time.Now()
	if _, err := s.Execute(context.Background(), trainCell(dir, 1500, 1, 6, "ctx"), rec); err != nil {
		t.Fatal(describe(err))
	}
	took := time.Since(start)
	msgs := dashboardMessages(t, rec)
	logged, _ := stepLosses(t, dir)
	if n := len(lossSeries(t, msgs[len(msgs)-1])); n != len(logged) || n != 9000 {
		t.Fatalf("final render: %d points, logged %d, want 9000", n, len(logged))
	}
	// updates come at most 4 a second: a run shorter than a second (9000
	// tiny steps can be, on a fast CPU backend) may show only its first and
	// final render
	if want := min(3, 2+int(took/time.Second)); len(msgs) < want {
		t.Fatalf("only %d dashboard messages in %v, want at least %d", len(msgs), took, want)
	}
	if max := 4*took.Seconds() + 2; float64(len(msgs)) > max {
		t.Errorf("%d updates in %v: more than 4 a second", len(msgs), took)
	}
	charted := 0
	for i, m := range msgs[:len(msgs)-1] {
		// The first update (the start) has no chart yet, and one step's
		// loss is shown as a value.
		pts, ok := findLossSeries(m)
		if ok {
			charted++
		}
		if n := len(pts); n > 500 {
			t.Errorf("update %d holds %d points, want at most 500", i, n)
		}
		if html, _ := m.Data.Data[display.MIMETypeHTML].(string); len(html) > 500<<10 {
			t.Errorf("update %d is %d bytes", i, len(html))
		}
	}
	if len(msgs) > 3 && charted == 0 {
		t.Errorf("none of %d updates before the final one charts the loss", len(msgs)-1)
	}
}

func TestLiveDashboardInterrupt(t *testing.T) {
	s := newSession(t, kernel.Options{})
	dir := filepath.Join(t.TempDir(), "run")
	rec := &recorder{}
	// The cell passes context.Background(): the interrupt stops the run
	// through the session's run hook.
	done := startRun(t, s, rec, trainCell(dir, 300, 1, 100000, "context.Background()"))
	time.Sleep(300 * time.Millisecond)
	s.Interrupt()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the cell still runs 20 s after the interrupt")
	}
	if !errors.Is(err, kernel.ErrInterrupted) {
		t.Fatalf("cell ended with %v, want an interrupt", err)
	}
	logged, evs := stepLosses(t, dir)
	end := evs[len(evs)-1]
	if end.Kind != train.EventEnd || end.Reason != train.StopCancelled {
		t.Fatalf("last event %+v, want the end, cancelled", end)
	}
	ck := evs[len(evs)-2]
	if ck.Kind != train.EventCheckpoint || ck.Step != end.Step {
		t.Fatalf("event before the end %+v, want the final checkpoint at step %d", ck, end.Step)
	}
	_, stderr := rec.out()
	if !strings.Contains(stderr, "final checkpoint: "+ck.Path) {
		t.Errorf("stderr does not say where the checkpoint is:\n%s", stderr)
	}
	msgs := dashboardMessages(t, rec)
	if n := len(lossSeries(t, msgs[len(msgs)-1])); n != len(logged) {
		t.Errorf("final render holds %d points, the log %d", n, len(logged))
	}
	// The session is usable, and the run can be resumed.
	if got := run(t, s, "1 + 1"); got != "2" {
		t.Fatalf("after the interrupt: %q", got)
	}
}

// slowTrainCell trains with a cell-declared stepper whose every step takes
// 1.5 s, so that a graceful stop has to wait for it.
func slowTrainCell(dir string) string {
	return fmt.Sprintf(`
type slowStep struct{ M *nn.Linear }

func (s *slowStep) TrainStep(x, y *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	time.Sleep(1500 * time.Millisecond)
	out := s.M.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

items := make([]data.Item, 64)
for i := range items {
	items[i] = data.Item{X: []float32{1, 2, 3, float32(i %% 3)}, Label: int64(i %% 3)}
}
ld, _ := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: 4})
model := nn.NewLinear(tensor.CPU().Autodiff(), 4, 3)
l := &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.05})}
l.Stepper = &slowStep{M: model}
sup := &train.Supervised{Config: train.Config{Epochs: 100, LogEvery: 1, RunDir: %q}, Train: ld}
sup.Fit(context.Background(), l)
fmt.Println("after the run")
`, dir)
}

// startSlowRun runs slowTrainCell in the background until its dashboard
// shows, and returns the channel of the cell's error.
func startSlowRun(t *testing.T, s *kernel.Session, rec *recorder) <-chan error {
	t.Helper()
	return startRun(t, s, rec, slowTrainCell(filepath.Join(t.TempDir(), "run")))
}

// startRun runs cell in the background until it shows a dashboard, and
// returns the channel of the cell's error.
func startRun(t *testing.T, s *kernel.Session, rec *recorder, cell string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(context.Background(), cell, rec)
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rec.mu.Lock()
		shown := len(rec.messages) > 0
		rec.mu.Unlock()
		if shown {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatal("no dashboard after 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLiveDashboardSecondInterruptIsImmediate(t *testing.T) {
	s := newSession(t, kernel.Options{})
	rec := &recorder{}
	done := startSlowRun(t, s, rec)
	s.Interrupt() // graceful: waits for the 1.5 s step
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the cell ended before the step did: %v", err)
	default:
	}
	start := time.Now()
	s.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, kernel.ErrInterrupted) {
			t.Fatalf("cell ended with %v", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the second interrupt took %v", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cell still runs 10 s after the second interrupt")
	}
	if stdout, _ := rec.out(); strings.Contains(stdout, "after the run") {
		t.Error("the cell went on after the interrupt")
	}
}

func TestLiveDashboardGraceRunsOut(t *testing.T) {
	s := newSession(t, kernel.Options{})
	kernel.SetLiveGrace(s, 200*time.Millisecond)
	rec := &recorder{}
	done := startSlowRun(t, s, rec)
	start := time.Now()
	s.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, kernel.ErrInterrupted) {
			t.Fatalf("cell ended with %v", err)
		}
		if took := time.Since(start); took > 1200*time.Millisecond {
			t.Errorf("interrupted after %v, want the 200 ms grace", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cell still runs 10 s after the interrupt")
	}
	if _, stderr := rec.out(); !strings.Contains(stderr, "did not stop within 200ms") {
		t.Errorf("stderr does not say the grace ran out:\n%s", stderr)
	}
}

func TestLiveDashboardSessionsCloseInAnyOrder(t *testing.T) {
	a := newSession(t, kernel.Options{})
	b := newSession(t, kernel.Options{})
	a.Close() // closed before b: b must keep its dashboards
	rec := &recorder{}
	if _, err := b.Execute(context.Background(), trainCell(filepath.Join(t.TempDir(), "run"), 30, 10, 1, "ctx"), rec); err != nil {
		t.Fatal(describe(err))
	}
	dashboardMessages(t, rec)
	b.Close()
	// A session opened after both closed is the hook again.
	c := newSession(t, kernel.Options{})
	rec = &recorder{}
	if _, err := c.Execute(context.Background(), trainCell(filepath.Join(t.TempDir(), "run2"), 30, 10, 1, "ctx"), rec); err != nil {
		t.Fatal(describe(err))
	}
	dashboardMessages(t, rec)
}

package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/kiln-ml/kiln/train"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ev returns an event elapsed seconds into a run started at t0.
func ev(kind train.EventKind, elapsed float64) train.Event {
	return train.Event{Kind: kind, Time: t0.Add(time.Duration(elapsed * float64(time.Second))), Elapsed: elapsed}
}

func start(epochs, batches int) train.Event {
	e := ev(train.EventStart, 0)
	e.Version = train.EventLogVersion
	e.Config, _ = json.Marshal(train.Config{Epochs: epochs})
	e.Batches = batches
	return e
}

func step(elapsed float64, epoch, batch, batches, stepN int, loss float64) train.Event {
	e := ev(train.EventStep, elapsed)
	e.Epoch, e.Batch, e.Batches, e.Step, e.Samples = epoch, batch, batches, stepN, 32*batch
	e.Split, e.LR = "train", 0.003
	e.Metrics = train.Values{"loss": loss, "accuracy": 1 - loss/3}
	return e
}

func epochEnd(elapsed float64, epoch, stepN int, split string, loss float64) train.Event {
	e := ev(train.EventEpoch, elapsed)
	e.Epoch, e.Step, e.Split = epoch, stepN, split
	e.Metrics = train.Values{"loss": loss, "accuracy": 0.9}
	return e
}

// newTestModel returns a model whose clock is at t0 plus *clock seconds.
func newTestModel(cancel func(), clock *float64) *Model {
	m := NewModel("test-run", cancel, &bytes.Buffer{})
	m.now = func() time.Time { return t0.Add(time.Duration(*clock * float64(time.Second))) }
	return m
}

// feed sends the events to m and returns the last command.
func feed(m *Model, evs ...train.Event) tea.Cmd {
	var cmd tea.Cmd
	for _, e := range evs {
		_, cmd = m.Update(eventMsg(e))
	}
	return cmd
}

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

func TestProgressAndETA(t *testing.T) {
	// Two epochs of 100 batches; validation after each.
	cases := []struct {
		name      string
		evs       []train.Event
		clock     float64 // seconds after t0 at which the view is drawn
		wantEpoch float64 // epoch fraction done
		wantTotal float64
		want      []string // substrings of the view
	}{
		{"before the first step", []train.Event{start(2, 100)}, 1, 0, 0,
			[]string{"epoch 1/2", "0/100", "ETA --:--", "training", "0:01"}},
		{"a quarter of the run", []train.Event{start(2, 100), step(5, 1, 25, 100, 25, 2), step(10, 1, 50, 100, 50, 1)},
			10, 0.5, 0.25, []string{"epoch 1/2", " 50%  50/100  ETA 0:10", " 25%  step 50  ETA 0:30", "0:10",
				"160 samples/s  5 steps/s", "lr 0.003"}},
		{"ETAs count down between events", []train.Event{start(2, 100), step(10, 1, 50, 100, 50, 1)},
			14, 0.5, 0.25, []string{"ETA 0:06", "ETA 0:26", "0:14"}},
		{"ETA never goes below zero", []train.Event{start(2, 100), step(10, 1, 50, 100, 50, 1)},
			100, 0.5, 0.25, []string{"ETA 0:00", "ETA 0:00"}},
		{"end of the first epoch, validating", []train.Event{start(2, 100), epochEnd(0.5, 0, 0, "valid", 2.3),
			step(20, 1, 100, 100, 100, 0.5), epochEnd(20, 1, 100, "train", 0.6)},
			20, 1, 0.5, []string{"100%  100/100", " 50%  step 100", "validating", "train ep 1"}},
		{"second epoch after validation", []train.Event{start(2, 100), step(20, 1, 100, 100, 100, 0.5),
			epochEnd(20, 1, 100, "train", 0.6), epochEnd(22, 1, 100, "valid", 0.4),
			step(32, 2, 50, 100, 150, 0.3)},
			32, 0.5, 0.75, []string{"epoch 2/2", " 50%  50/100  ETA 0:10", "valid ep 1", "step 150",
				"160 samples/s  5 steps/s"}},
		{"no validation: the next epoch starts at its first step", []train.Event{start(2, 100),
			step(20, 1, 100, 100, 100, 0.5), epochEnd(20, 1, 100, "train", 0.6), step(25, 2, 20, 100, 120, 0.3)},
			25, 0.2, 0.6, []string{"epoch 2/2", " 20%  20/100", "training"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := c.clock
			m := newTestModel(nil, &clock)
			feed(m, c.evs...)
			fe, ft := m.progress()
			if math.Abs(fe-c.wantEpoch) > 1e-9 || math.Abs(ft-c.wantTotal) > 1e-9 {
				t.Errorf("progress %v, %v; want %v, %v", fe, ft, c.wantEpoch, c.wantTotal)
			}
			view := m.View()
			for _, s := range c.want {
				if !strings.Contains(view, s) {
					t.Errorf("view lacks %q:\n%s", s, view)
				}
			}
		})
	}
}

func TestWithoutBatchCountsProgressIsByEpoch(t *testing.T) {
	clock := 0.0
	m := newTestModel(nil, &clock)
	s := start(4, 0)
	feed(m, s, epochEnd(3, 1, 10, "train", 1))
	fe, ft := m.progress()
	if !math.IsNaN(fe) || ft != 0.25 {
		t.Fatalf("progress %v, %v; want NaN, 0.25", fe, ft)
	}
	if v := m.View(); !strings.Contains(v, "batches unknown") || !strings.Contains(v, " 25%") {
		t.Fatalf("view:\n%s", v)
	}
}

func key(s string) tea.KeyMsg {
	switch s {
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func TestStopKeys(t *testing.T) {
	cases := []struct {
		name        string
		msgs        []tea.Msg
		wantCancels int
		wantQuit    bool // the last message's command quits the program
		want        string
	}{
		{"q cancels once and keeps showing the run", []tea.Msg{key("q"), key("q")}, 1, false, "stopping"},
		{"ctrl+c cancels", []tea.Msg{key("ctrl+c")}, 1, false, "ctrl+c again leaves now"},
		{"a second ctrl+c leaves", []tea.Msg{key("q"), key("ctrl+c")}, 1, true, "stopping"},
		{"SIGINT counts as ctrl+c", []tea.Msg{filterInterrupt(nil, tea.InterruptMsg{})}, 1, false, "stopping"},
		{"other keys do nothing", []tea.Msg{key("x"), key("enter")}, 0, false, "q: stop after the current step"},
		{"after the end q does nothing", []tea.Msg{eventMsg(ev(train.EventEnd, 3)), key("q")}, 0, false, "after 0 epochs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cancels := 0
			clock := 1.0
			m := newTestModel(func() { cancels++ }, &clock)
			feed(m, start(1, 10), step(1, 1, 5, 10, 5, 1))
			var cmd tea.Cmd
			for _, msg := range c.msgs {
				_, cmd = m.Update(msg)
			}
			if cancels != c.wantCancels {
				t.Errorf("cancel called %d times, want %d", cancels, c.wantCancels)
			}
			if isQuit(cmd) != c.wantQuit {
				t.Errorf("quit %v, want %v", isQuit(cmd), c.wantQuit)
			}
			if v := m.View(); !strings.Contains(v, c.want) {
				t.Errorf("view lacks %q:\n%s", c.want, v)
			}
		})
	}
}

func TestEndQuits(t *testing.T) {
	cases := []struct {
		name   string
		reason train.StopReason
		err    string
		want   []string
	}{
		{"completed", train.StopCompleted, "", []string{"completed after 1 epochs, 10 steps in 0:12"}},
		{"cancelled", train.StopCancelled, "", []string{"cancelled after 1 epochs"}},
		{"early stop", train.StopEarly, "", []string{"stopped early after 1 epochs"}},
		{"failed, with the error", train.StopFailed, "train: epoch 2: boom", []string{"failed", "train: epoch 2: boom"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := 50.0
			m := newTestModel(nil, &clock)
			end := ev(train.EventEnd, 12)
			end.Reason, end.Error, end.Step = c.reason, c.err, 10
			cmd := feed(m, start(1, 10), step(10, 1, 10, 10, 10, 1), epochEnd(10, 1, 10, "train", 1), end)
			if !isQuit(cmd) {
				t.Fatal("the end event does not quit the program")
			}
			v := m.View()
			for _, s := range c.want {
				if !strings.Contains(v, s) {
					t.Errorf("view lacks %q:\n%s", s, v)
				}
			}
			// The footer alone says how the run ended; the header keeps
			// the time.
			head, _, _ := strings.Cut(v, "\n")
			if !strings.HasSuffix(head, "  0:12") || strings.Contains(head, string(c.reason)) {
				t.Errorf("header %q", head)
			}
		})
	}
	t.Run("Fit returning quits too", func(t *testing.T) {
		clock := 0.0
		m := newTestModel(nil, &clock)
		_, cmd := m.Update(doneMsg{})
		if !isQuit(cmd) {
			t.Fatal("doneMsg does not quit")
		}
	})
}

func TestTicksRedrawUntilTheEnd(t *testing.T) {
	clock := 0.0
	m := newTestModel(nil, &clock)
	if m.Init() == nil {
		t.Fatal("Init starts no clock")
	}
	if _, cmd := m.Update(tickMsg(t0)); cmd == nil {
		t.Fatal("a tick before the end schedules no next tick")
	}
	feed(m, start(1, 1), ev(train.EventEnd, 1))
	if _, cmd := m.Update(tickMsg(t0)); cmd != nil {
		t.Fatal("a tick after the end schedules another")
	}
}

// Checkpoints, resumes and events of unknown kinds go to the status line,
// the latest alone.
func TestStatusLine(t *testing.T) {
	ck := ev(train.EventCheckpoint, 20)
	ck.Epoch, ck.Step, ck.Path = 1, 469, "/runs/mnist/checkpoints/epoch-0001-step-000469"
	ck.Metrics = train.Values{"valid.loss": 0.1}
	future := ev("future_kind", 21)
	future.Epoch, future.Step, future.Split, future.Metrics = 1, 470, "valid", train.Values{"accuracy": 0.97}
	resume := ev(train.EventResume, 1)
	resume.Path, resume.Position = "/runs/mnist/checkpoints/epoch-0001-step-000469", &train.Position{Epoch: 1, Step: 469}
	cases := []struct {
		name  string
		evs   []train.Event
		width int
		want  string
	}{
		{"none yet", nil, 80, ""},
		{"a checkpoint", []train.Event{ck}, 80, "checkpoint  epoch 1 step 469  /runs/mnist/checkpoints/epoch-0001-step-000469"},
		{"the latest event only", []train.Event{ck, future},
			80, "future_kind  epoch 1 step 470  accuracy 0.97  split=valid"},
		{"a long path is cut from its start", []train.Event{future, ck},
			53, "checkpoint  epoch 1 step 469  …epoch-0001-step-000469"},
		{"a long line is cut at its end", []train.Event{ck, future}, 40, "future_kind  epoch 1 step 470  accuracy…"},
		{"a resume", []train.Event{resume}, 100, "resumed  epoch 2 batch 0 step 469  from /runs/mnist/checkpoints/epoch-0001-step-000469"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := 0.0
			m := newTestModel(nil, &clock)
			feed(m, append([]train.Event{start(2, 469)}, c.evs...)...)
			m.Update(tea.WindowSizeMsg{Width: c.width, Height: 30})
			lines := strings.Split(strings.TrimSuffix(m.View(), "\n"), "\n")
			if got := lines[len(lines)-2]; got != c.want {
				t.Errorf("status line %q, want %q", got, c.want)
			}
		})
	}
}

// fullModel has every part of the view filled, with long names.
func fullModel() *Model {
	clock := 33.0
	m := newTestModel(nil, &clock)
	evs := []train.Event{start(3, 469)}
	for i := 1; i <= 40; i++ {
		evs = append(evs, step(float64(i)*0.5, 1, i*10, 469, i*10, 2/float64(i)))
	}
	vals := epochEnd(21, 1, 469, "valid", 0.1)
	vals.Metrics["top5_accuracy_with_a_long_name"] = 0.999
	ck := ev(train.EventCheckpoint, 22)
	ck.Epoch, ck.Path = 1, "/"+strings.Repeat("a-very-long-directory/", 20)+"epoch-0001-step-000469"
	evs = append(evs, epochEnd(20, 1, 469, "train", 0.2), vals, ck)
	feed(m, evs...)
	return m
}

func TestViewFitsWidth(t *testing.T) {
	for _, w := range []int{0, 20, 40, 60, 80, 132, 200} {
		m := fullModel()
		m.Update(tea.WindowSizeMsg{Width: w, Height: 40})
		v := m.View()
		limit := w
		if w == 0 {
			limit = defaultWidth
		}
		limit = max(limit, minWidth)
		for _, line := range strings.Split(strings.TrimSuffix(v, "\n"), "\n") {
			if got := lipgloss.Width(line); got > limit {
				t.Errorf("width %d: line of %d cells: %q", w, got, line)
			}
		}
		if w >= 80 {
			for _, s := range []string{"Kiln · test-run", "epoch 2/3", "valid", "checkpoint", "loss by epoch", "┤", "┬"} {
				if !strings.Contains(v, s) {
					t.Errorf("width %d: view lacks %q:\n%s", w, s, v)
				}
			}
		}
		if w == 80 {
			t.Logf("the dashboard at 80 columns:\n%s", v)
		}
	}
}

func TestNoColoursOffTerminal(t *testing.T) {
	if v := fullModel().View(); strings.Contains(v, "\x1b") {
		t.Fatalf("escape sequences in a view for a buffer:\n%q", v)
	}
}

func TestLossHistoryIsBounded(t *testing.T) {
	clock := 0.0
	m := newTestModel(nil, &clock)
	feed(m, start(1, 1<<20))
	for i := 0; i < 3*maxPoints; i++ {
		m.Update(eventMsg(step(float64(i), 1, i+1, 1<<20, i+1, 1)))
	}
	if n := len(m.trainPoints); n > maxPoints || n < maxPoints/2 {
		t.Fatalf("%d losses kept, want between %d and %d", n, maxPoints/2, maxPoints)
	}
}

// A data-parallel run says its ranks in the header; a run on one process
// does not.
func TestHeaderShowsRanks(t *testing.T) {
	for _, ranks := range []int{0, 2} {
		clock := 1.0
		m := newTestModel(nil, &clock)
		e := start(1, 10)
		e.WorldSize = ranks
		feed(m, e)
		head, _, _ := strings.Cut(m.View(), "\n")
		if got := strings.Contains(head, "×2 ranks"); got != (ranks == 2) {
			t.Errorf("world size %d: header %q", ranks, head)
		}
		if !strings.Contains(head, "test-run") {
			t.Errorf("header %q lacks the title", head)
		}
	}
}

// The metrics table keeps its columns apart and aligned at every width,
// with headers that shorten and columns that go as the width shrinks.
func TestTableLayout(t *testing.T) {
	cases := []struct {
		width   int
		headers []string // the header cells after "metric"
	}{
		{200, []string{"train (epoch 1 so far)", "train (epoch 1)", "valid (epoch 1)", "best valid (epoch 1)"}},
		{160, []string{"train (epoch 1 so far)", "train (epoch 1)", "valid (epoch 1)", "best valid (epoch 1)"}},
		{80, []string{"train ep 1 so far", "train ep 1", "valid ep 1", "best ep 1"}},
		{60, []string{"so far", "train", "valid", "best"}},
		{40, []string{"so far", "train", "valid"}},
		{30, []string{"so far", "valid"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.width), func(t *testing.T) {
			m := fullModel()
			m.Update(tea.WindowSizeMsg{Width: c.width, Height: 40})
			lines := strings.Split(m.View(), "\n")
			if rows := checkTable(t, fmt.Sprintf("width %d", c.width), lines); rows != 3 {
				t.Errorf("%d rows, want 3", rows)
			}
			for _, l := range lines {
				if strings.HasPrefix(l, "metric ") {
					got := cellSplit.FindAllString(l, -1)[1:]
					if strings.Join(got, "|") != strings.Join(c.headers, "|") {
						t.Errorf("headers %q, want %q", got, c.headers)
					}
					if c.width >= 160 && !strings.Contains(l, strings.Repeat(" ", wideTableGap)+"train (epoch 1)") {
						t.Errorf("at %d columns the gaps are narrow: %q", c.width, l)
					}
				}
			}
		})
	}
}

// The chart's range only grows: a run whose loss falls keeps its first
// values on the chart, on a linear scale.
func TestChartRangeCoversTheRun(t *testing.T) {
	clock := 0.0
	m := newTestModel(nil, &clock)
	feed(m, start(2, 100))
	for b := 10; b <= 200; b += 10 {
		epoch, batch := (b-1)/100+1, (b-1)%100+1
		feed(m, step(float64(b), epoch, batch, 100, b, 2.3*math.Exp(-float64(b)/20)))
		lo, hi := m.yLo, m.yHi
		a := yAxis(lo, hi, 5)
		for _, p := range m.trainPoints {
			if p.y < a.lo || p.y > a.hi {
				t.Fatalf("after step %d: point %v outside the axis %+v", b, p, a)
			}
		}
	}
	if v := m.View(); !strings.Contains(v, "┤") || strings.Contains(v, "log") {
		t.Errorf("view:\n%s", v)
	}
}

// The chart's train line is the loss between step events, recovered from
// their running means, smoothed; where the running mean does not cover
// just the samples the event counts (an epoch's first event, an epoch
// resumed part way) it is the running mean itself.
func TestTrainLossBetweenStepEvents(t *testing.T) {
	// Batches of 32: losses 2 in batches 1-10, 1 in 11-20 (running means
	// 2 and 1.5), then a new epoch with a running mean of 0.8.
	clock := 0.0
	m := newTestModel(nil, &clock)
	feed(m, start(2, 20), step(1, 1, 10, 20, 10, 2), step(2, 1, 20, 20, 20, 1.5), step(3, 2, 10, 20, 30, 0.8))
	// Smoothed: 2; (0.6·0.4·2 + 0.4·1)/(0.6·0.4 + 0.4); then 0.8 joins.
	s2 := (0.6*0.4*2 + 0.4*1) / (0.6*0.4 + 0.4)
	s3 := (0.6*0.6*0.4*2 + 0.6*0.4*1 + 0.4*0.8) / (0.6*0.6*0.4 + 0.6*0.4 + 0.4)
	want := []point{{0.5, 2}, {1, s2}, {1.5, s3}}
	if len(m.trainPoints) != len(want) {
		t.Fatalf("points %v, want %v", m.trainPoints, want)
	}
	for i, p := range m.trainPoints {
		if math.Abs(p.x-want[i].x) > 1e-12 || math.Abs(p.y-want[i].y) > 1e-12 {
			t.Fatalf("points %v, want %v", m.trainPoints, want)
		}
	}

	t.Run("resumed part way through an epoch", func(t *testing.T) {
		m := newTestModel(nil, &clock)
		r := ev(train.EventResume, 0)
		r.Config, _ = json.Marshal(train.Config{Epochs: 2})
		r.Position = &train.Position{Epoch: 0, Batch: 10, Step: 10}
		// Samples count from the resume; the running means from the
		// epoch's start.
		s1, s2 := step(1, 1, 15, 20, 15, 1), step(2, 1, 20, 20, 20, 0.5)
		s1.Samples, s2.Samples = 160, 320
		feed(m, r, s1, s2)
		if got := m.trainPoints[1].y; math.Abs(got-(0.6*0.4*1+0.4*0.5)/(0.6*0.4+0.4)) > 1e-12 {
			t.Errorf("after a resume the second point is %v, want the smoothed running means", got)
		}
		if m.epoch != 1 || !m.started {
			t.Errorf("after the resume: epoch %d, started %v", m.epoch, m.started)
		}
	})
}

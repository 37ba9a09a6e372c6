package dashboard

import (
	"bytes"
	"encoding/json"
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
				"speed 160 samples/s  5 steps/s", "lr 0.003"}},
		{"ETAs count down between events", []train.Event{start(2, 100), step(10, 1, 50, 100, 50, 1)},
			14, 0.5, 0.25, []string{"ETA 0:06", "ETA 0:26", "0:14"}},
		{"ETA never goes below zero", []train.Event{start(2, 100), step(10, 1, 50, 100, 50, 1)},
			100, 0.5, 0.25, []string{"ETA 0:00", "ETA 0:00"}},
		{"end of the first epoch, validating", []train.Event{start(2, 100), epochEnd(0.5, 0, 0, "valid", 2.3),
			step(20, 1, 100, 100, 100, 0.5), epochEnd(20, 1, 100, "train", 0.6)},
			20, 1, 0.5, []string{"100%  100/100", " 50%  step 100", "validating", "train epoch 1"}},
		{"second epoch after validation", []train.Event{start(2, 100), step(20, 1, 100, 100, 100, 0.5),
			epochEnd(20, 1, 100, "train", 0.6), epochEnd(22, 1, 100, "valid", 0.4),
			step(32, 2, 50, 100, 150, 0.3)},
			32, 0.5, 0.75, []string{"epoch 2/2", " 50%  50/100  ETA 0:10", "valid epoch 1", "step 150",
				"speed 160 samples/s  5 steps/s"}},
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
		{"completed", train.StopCompleted, "", []string{"completed after 1 epochs, 10 steps in 0:12", "completed  0:12"}},
		{"cancelled", train.StopCancelled, "", []string{"cancelled after 1 epochs"}},
		{"early stop", train.StopEarly, "", []string{"stopped early"}},
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

func TestUnknownKindsBecomeNotes(t *testing.T) {
	clock := 0.0
	m := newTestModel(nil, &clock)
	ck := ev("checkpoint", 20)
	ck.Epoch, ck.Step, ck.Split, ck.Metrics = 1, 469, "valid", train.Values{"accuracy": 0.97}
	feed(m, start(2, 469), ck)
	for i := 0; i < maxNotes+2; i++ {
		feed(m, ev("future_kind", 21))
	}
	feed(m, ck)
	v := m.View()
	if !strings.Contains(v, "checkpoint epoch 1 step 469  accuracy 0.97  split=valid") {
		t.Errorf("no checkpoint line:\n%s", v)
	}
	if n := strings.Count(v, "future_kind"); n != maxNotes-1 {
		t.Errorf("%d future_kind lines, want %d (the last %d notes):\n%s", n, maxNotes-1, maxNotes, v)
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
	ck := ev("checkpoint", 22)
	ck.Error = strings.Repeat("a very long message ", 20)
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
			for _, s := range []string{"Kiln · test-run", "epoch 2/3", "valid epoch 1", "checkpoint", "loss, running mean"} {
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
	for i := 0; i < 3*maxLosses; i++ {
		m.Update(eventMsg(step(float64(i), 1, i+1, 1<<20, i+1, 1)))
	}
	if n := len(m.losses); n > maxLosses || n < maxLosses/2 {
		t.Fatalf("%d losses kept, want between %d and %d", n, maxLosses/2, maxLosses)
	}
}

package dashboard

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kiln-ml/kiln/train"
)

// screenEnv names the directory through which TestScreen talks to the
// test binary it runs in tmux as the scripted dashboard (screenProgram).
const screenEnv = "KILN_DASHBOARD_SCREEN_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(screenEnv); dir != "" {
		os.Exit(screenProgram(dir))
	}
	os.Exit(m.Run())
}

// The scripted run: 3 epochs of 50 batches of 32 on 2 ranks, a step event
// every 5 batches, validation and a checkpoint after each epoch.
const (
	scriptEpochs  = 3
	scriptBatches = 50
	scriptEvery   = 5
)

func scriptCheckpoint(epoch int) string {
	return fmt.Sprintf("/tmp/kiln-screen-test/runs/mnist-mlp-20260102-030405/checkpoints/epoch-%04d-step-%06d",
		epoch, epoch*scriptBatches)
}

// script is the scripted run's events, its clock starting at base. The
// loss of batch n falls from 2.3 towards 0.0004, with some noise; step
// events carry the epoch's running means, as Fit's do. pause marks the
// event after which the program waits for the test to look at the screen
// (the second checkpoint).
func script(base time.Time) (evs []train.Event, pause int) {
	at := func(kind train.EventKind, elapsed float64) train.Event {
		return train.Event{Kind: kind, Time: base.Add(time.Duration(elapsed * float64(time.Second))), Elapsed: elapsed}
	}
	s := at(train.EventStart, 0)
	s.Version, s.Batches, s.WorldSize = train.EventLogVersion, scriptBatches, 2
	s.Config, _ = json.Marshal(train.Config{Epochs: scriptEpochs})
	evs = append(evs, s)
	step, elapsed := 0, 0.0
	for epoch := 1; epoch <= scriptEpochs; epoch++ {
		var sum, correct float64
		for b := 1; b <= scriptBatches; b++ {
			step++
			elapsed += 0.1
			loss := 2.3*math.Exp(-float64(step)/25) + 0.0004 + 0.05*math.Sin(float64(step))*math.Exp(-float64(step)/50)
			sum += 32 * loss
			correct += 32 * min(1, max(0, 1-loss/2.5))
			if b%scriptEvery == 0 {
				e := at(train.EventStep, elapsed)
				e.Epoch, e.Batch, e.Batches, e.Step, e.Samples, e.Split = epoch, b, scriptBatches, step, 32*b, "train"
				e.LR = 3e-3 * (1 + math.Cos(math.Pi*float64(step)/150)) / 2
				e.Metrics = train.Values{"loss": sum / float64(32*b), "accuracy": correct / float64(32*b)}
				evs = append(evs, e)
			}
		}
		tr := at(train.EventEpoch, elapsed)
		tr.Epoch, tr.Step, tr.Split = epoch, step, "train"
		tr.Metrics = train.Values{"loss": sum / (32 * scriptBatches), "accuracy": correct / (32 * scriptBatches)}
		elapsed += 0.3
		va := at(train.EventEpoch, elapsed)
		va.Epoch, va.Step, va.Split = epoch, step, "valid"
		vloss := 1.2*math.Exp(-float64(epoch)) + 0.00054721
		va.Metrics = train.Values{"loss": vloss, "accuracy": min(1, 1-vloss/3)}
		ck := at(train.EventCheckpoint, elapsed)
		ck.Epoch, ck.Step, ck.Path = epoch, step, scriptCheckpoint(epoch)
		ck.Position = &train.Position{Epoch: epoch, Step: step}
		evs = append(evs, tr, va, ck)
		if epoch == 2 {
			pause = len(evs) - 1
		}
	}
	end := at(train.EventEnd, elapsed)
	end.Epoch, end.Step, end.Reason = scriptEpochs, step, train.StopCompleted
	return append(evs, end), pause
}

// screenProgram is the test binary run in tmux by TestScreen: the
// dashboard, on the terminal, fed the scripted run through a real Bubble
// Tea program. It writes dir/paused at the script's pause and goes on when
// dir/resume exists.
func screenProgram(dir string) int {
	m := NewModel("screen-test", nil, os.Stdout)
	p := tea.NewProgram(m)
	go func() {
		evs, pause := script(time.Now())
		for i, e := range evs {
			p.Send(eventMsg(e))
			time.Sleep(5 * time.Millisecond)
			if i == pause {
				_ = os.WriteFile(filepath.Join(dir, "paused"), nil, 0o644)
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
					if _, err := os.Stat(filepath.Join(dir, "resume")); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}
	}()
	if _, err := p.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestScreen runs the dashboard on a real terminal emulator (tmux) 80 and
// 160 columns wide with the scripted run, and checks what the screen
// shows half way (after the second checkpoint) and at the end.
func TestScreen(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (apt package tmux)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{80, 160} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			t.Parallel()
			mid, final := runOnScreen(t, tmux, self, width, 30)
			t.Logf("half way, %d columns:\n%s", width, mid)
			t.Logf("at the end, %d columns:\n%s", width, final)
			checkScreen(t, "half way", width, mid)
			checkScreen(t, "at the end", width, final)

			// Nothing moved: every part starts on the same line half
			// way and at the end.
			for _, prefix := range []string{"Kiln · ", "metric ", "loss by epoch", "checkpoint  "} {
				if a, b := lineStarting(mid, prefix), lineStarting(final, prefix); a < 0 || a != b {
					t.Errorf("%q on line %d half way and %d at the end", prefix, a, b)
				}
			}
			if a, b := lineContaining(mid, "└"), lineContaining(final, "└"); a < 0 || a != b {
				t.Errorf("the x axis on line %d half way and %d at the end", a, b)
			}
			if got := statusLine(mid); !strings.HasSuffix(got, "epoch-0002-step-000100") {
				t.Errorf("half way the status line is %q, want the second checkpoint", got)
			}
			if got := statusLine(final); !strings.HasPrefix(got, "checkpoint  epoch 3 step 150  ") ||
				!strings.HasSuffix(got, "epoch-0003-step-000150") {
				t.Errorf("at the end the status line is %q, want the last checkpoint", got)
			}
			if n := strings.Count(final, "completed"); n != 1 || !strings.Contains(final, "completed after 3 epochs, 150 steps in 0:16") {
				t.Errorf("%d lines say the run completed, want 1:\n%s", n, final)
			}
			if !strings.Contains(mid, "q: stop after the current step") || strings.Contains(mid, "completed") {
				t.Errorf("half way the footer is not the key help:\n%s", mid)
			}
			if width >= 160 && !strings.Contains(final, "train (epoch 3 so far)") {
				t.Errorf("at %d columns the table has short headers:\n%s", width, final)
			}
		})
	}
}

// runOnScreen runs screenProgram in a new tmux server, in a window width
// by height, and returns its screen half way and at the end, with the
// lines tmux wrapped joined again (so that a line too long shows as such)
// and the scrollback above the window included (so that a dashboard that
// pushed lines up shows them).
func runOnScreen(t *testing.T, tmux, self string, width, height int) (mid, final string) {
	dir, err := os.MkdirTemp("", "kiln-screen") // short: tmux sockets have a path limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "tmux")
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	command := fmt.Sprintf("env %s=%s TERM=xterm-256color %s; echo __exit $?; sleep 60",
		screenEnv, shellQuote(dir), shellQuote(self))
	if out, err := run("new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-s", "screen", command); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = run("kill-server") })
	capture := func() string {
		out, err := run("capture-pane", "-p", "-J", "-S", "-", "-t", "screen")
		if err != nil {
			t.Fatalf("tmux capture-pane: %v: %s", err, out)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " ")
		}
		return strings.Join(lines, "\n")
	}
	waitFor := func(what string, done func(screen string) bool) string {
		deadline := time.Now().Add(15 * time.Second)
		for {
			screen := capture()
			if done(screen) {
				return screen
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 15 s; screen:\n%s", what, screen)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("pause", func(string) bool {
		_, err := os.Stat(filepath.Join(dir, "paused"))
		return err == nil
	})
	mid = waitFor("second checkpoint on the screen", func(s string) bool { return strings.Contains(s, "epoch-0002-step-000100") })
	if err := os.WriteFile(filepath.Join(dir, "resume"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	final = waitFor("exit", func(s string) bool { return strings.Contains(s, "__exit ") })
	if !strings.Contains(final, "__exit 0") {
		t.Fatalf("the program failed:\n%s", final)
	}
	final = strings.TrimRight(final[:strings.Index(final, "__exit")], "\n")
	return mid, final
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func lineStarting(screen, prefix string) int {
	for i, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

func lineContaining(screen, s string) int {
	for i, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// statusLine is the line above the footer.
func statusLine(screen string) string {
	lines := strings.Split(screen, "\n")
	if len(lines) < 2 {
		return ""
	}
	return lines[len(lines)-2]
}

// cellSplit matches the cells of a table row: text with single spaces in
// it, between runs of two or more.
var cellSplit = regexp.MustCompile(`\S+(?: \S+)*`)

// numberCell is a number as the table writes it, or "-" for none.
var numberCell = regexp.MustCompile(`^(-|nan|-?inf|-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?)$`)

// checkScreen checks a screen of the dashboard width columns wide.
func checkScreen(t *testing.T, when string, width int, screen string) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("%s: line %d is %d cells wide, more than %d: %q", when, i, w, width, l)
		}
	}
	head := lineStarting(screen, "Kiln · screen-test · ×2 ranks")
	if head < 0 || !strings.Contains(screen, "samples/s") || !strings.Contains(screen, "ETA") ||
		!strings.Contains(screen, "epoch 3/3") && !strings.Contains(screen, "epoch 2/3") {
		t.Errorf("%s: no header with the title, ranks, epoch, ETA and throughput:\n%s", when, screen)
	}

	if rows := checkTable(t, when, lines); rows != 2 {
		t.Errorf("%s: %d metric rows, want loss and accuracy", when, rows)
	}

	// The chart: the y labels in their column, left of an axis drawn in
	// one column, numbers; the x axis under it; a validation marker.
	legend := lineStarting(screen, "loss by epoch")
	axis := lineContaining(screen, "└")
	if legend < 0 || axis < legend+4 {
		t.Fatalf("%s: no chart:\n%s", when, screen)
	}
	col := -1
	labels := 0
	for _, l := range lines[legend+1 : axis] {
		r := []rune(l)
		i := strings.IndexFunc(l, func(r rune) bool { return r == '┤' || r == '│' })
		if i < 0 {
			t.Errorf("%s: chart row %q has no axis", when, l)
			continue
		}
		c := len([]rune(l[:i]))
		if col < 0 {
			col = c
		}
		if c != col {
			t.Errorf("%s: chart row %q: axis in column %d, not %d", when, l, c, col)
		}
		if label := strings.TrimSpace(string(r[:c])); label != "" {
			labels++
			if _, err := strconv.ParseFloat(label, 64); err != nil {
				t.Errorf("%s: chart label %q is not a number", when, label)
			}
		}
	}
	if labels < 2 {
		t.Errorf("%s: %d y labels, want 2 at least", when, labels)
	}
	if c := strings.Index(lines[axis], "└"); len([]rune(lines[axis][:c])) != col {
		t.Errorf("%s: x axis %q does not start under the y axis (column %d)", when, lines[axis], col)
	}
	if !strings.Contains(strings.Join(lines[legend+1:axis], "\n"), string(validMarker)) {
		t.Errorf("%s: no validation point on the chart", when)
	}
	if axis+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[axis+1]), "0") {
		t.Errorf("%s: no x labels under the axis", when)
	}
}

// checkTable checks the metrics table in lines and returns its number of
// rows: every row has a cell per column, the columns two spaces apart at
// least, the names left-aligned, the numbers and their headers
// right-aligned (every row's cell ends in the same column), with at most
// 4 significant digits.
func checkTable(t *testing.T, when string, lines []string) (rows int) {
	t.Helper()
	top := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "metric ") {
			top = i
			break
		}
	}
	if top < 0 {
		t.Fatalf("%s: no metrics table:\n%s", when, strings.Join(lines, "\n"))
	}
	header := cellSplit.FindAllStringIndex(lines[top], -1)
	if len(header) < 2 {
		t.Errorf("%s: table header %q has %d columns, want the metric and 1 or more", when, lines[top], len(header))
	}
	for _, row := range lines[top+1:] {
		if row == "" {
			break
		}
		rows++
		cells := cellSplit.FindAllStringIndex(row, -1)
		if len(cells) != len(header) {
			t.Errorf("%s: row %q has %d cells, the header %d: columns run together", when, row, len(cells), len(header))
			continue
		}
		if cells[0][0] != 0 {
			t.Errorf("%s: row %q: metric name not at the left edge", when, row)
		}
		for c := 1; c < len(cells); c++ {
			text := row[cells[c][0]:cells[c][1]]
			if ansi.StringWidth(row[:cells[c][1]]) != ansi.StringWidth(lines[top][:header[c][1]]) {
				t.Errorf("%s: row %q: cell %q does not end under its header %q", when, row, text,
					lines[top][header[c][0]:header[c][1]])
			}
			if !numberCell.MatchString(text) {
				t.Errorf("%s: row %q: cell %q is not a number", when, row, text)
			} else if n := significantDigits(text); n > 4 {
				t.Errorf("%s: row %q: %q has %d significant digits", when, row, text, n)
			}
		}
	}
	return rows
}

// significantDigits counts the significant digits of a number as
// strconv writes it.
func significantDigits(s string) int {
	mantissa, _, _ := strings.Cut(strings.TrimPrefix(s, "-"), "e")
	digits := strings.TrimLeft(strings.ReplaceAll(mantissa, ".", ""), "0")
	if strings.Contains(mantissa, ".") {
		return len(digits)
	}
	return len(strings.TrimRight(digits, "0")) // trailing zeros of an integer say nothing
}

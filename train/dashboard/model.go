package dashboard

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/kiln-ml/kiln/train"
)

// Layout constants.
const (
	defaultWidth = 80 // columns before the terminal reports its size
	minWidth     = 20 // narrower terminals are drawn as if this wide, then cut
	chartHeight  = 4  // rows of the loss chart
	maxNotes     = 4  // checkpoint and other event lines kept
	maxLosses    = 4096
	tickEvery    = 500 * time.Millisecond
)

// eventMsg carries a train.Event into the program.
type eventMsg train.Event

// doneMsg tells the model that Fit returned.
type doneMsg struct{ err error }

// tickMsg redraws the clock and the ETAs between events.
type tickMsg time.Time

// Observe returns a train.Observer that sends each event to p, whose model
// is a *Model (or passes the messages on to one). It blocks while p is
// not yet running and returns at once after p has exited.
func Observe(p *tea.Program) train.Observer {
	return train.ObserverFunc(func(e train.Event) { p.Send(eventMsg(e)) })
}

// Model is the dashboard, a tea.Model. Its Update takes the events that
// Observe sends, keys (q and ctrl+c ask to stop), window sizes and its own
// clock ticks; View draws it in the window's width. It quits the program
// when the run's end event arrives. Create it with NewModel.
type Model struct {
	title  string
	cancel func()
	width  int
	now    func() time.Time
	st     styles

	started     bool
	start       time.Time // the start event's time
	epochs      int       // from the start event's config
	batches     int       // training batches per epoch; 0 when unknown
	epoch       int       // the epoch in progress or just finished
	batch       int       // batches of it done
	step        int
	lr          float64
	lastTime    time.Time // the latest event's time and elapsed seconds
	lastElapsed float64
	epochStart  float64 // elapsed seconds when the current epoch began
	startStep   int     // optimizer steps before the current epoch
	stepsPerSec float64
	itemsPerSec float64
	etaEpoch    float64 // seconds left, as of the latest event (NaN: unknown)
	etaTotal    float64

	running      train.Values // the latest step event's running means
	runningEpoch int          // and its epoch
	trainVals    train.Values // the latest train epoch
	validVals    train.Values // the latest valid epoch
	trainEpoch   int
	validEpoch   int
	seenValid    bool
	losses       []float64
	notes        []string

	endOfEpoch bool         // between a train epoch event and the next step
	stopping   bool         // stop was asked for
	end        *train.Event // the end event
	fitErr     error
	done       bool // Fit returned
}

// styles are the dashboard's colours, made for one output.
type styles struct {
	title, bar, faint, good, warn, bad lipgloss.Style
}

func newStyles(out io.Writer) styles {
	r := lipgloss.NewRenderer(out)
	return styles{
		title: r.NewStyle().Bold(true),
		bar:   r.NewStyle().Foreground(lipgloss.Color("69")),
		faint: r.NewStyle().Faint(true),
		good:  r.NewStyle().Foreground(lipgloss.Color("2")),
		warn:  r.NewStyle().Foreground(lipgloss.Color("3")),
		bad:   r.NewStyle().Foreground(lipgloss.Color("1")),
	}
}

// NewModel returns a dashboard titled title that calls cancel (which may
// be nil) when the user asks to stop. Its colours suit out (no colours
// when out is not a terminal; nil means os.Stdout).
func NewModel(title string, cancel func(), out io.Writer) *Model {
	if out == nil {
		out = os.Stdout
	}
	return &Model{
		title: title, cancel: cancel, now: time.Now, st: newStyles(out),
		epochs: 1, etaEpoch: math.NaN(), etaTotal: math.NaN(),
	}
}

// Init starts the clock.
func (m *Model) Init() tea.Cmd { return tick() }

func tick() tea.Cmd {
	return tea.Tick(tickEvery, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update handles a message; see Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case eventMsg:
		m.handle(train.Event(msg))
		if m.end != nil {
			return m, tea.Quit
		}
	case doneMsg:
		m.done, m.fitErr = true, msg.err
		return m, tea.Quit
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "esc":
			m.stop()
		case "ctrl+c":
			if m.stopping {
				return m, tea.Quit
			}
			m.stop()
		}
	case interruptMsg:
		if m.stopping {
			return m, tea.Quit
		}
		m.stop()
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tickMsg:
		if m.end == nil && !m.done {
			return m, tick()
		}
	}
	return m, nil
}

// stop asks the run to stop, once.
func (m *Model) stop() {
	if m.stopping || m.end != nil {
		return
	}
	m.stopping = true
	if m.cancel != nil {
		m.cancel()
	}
}

// handle folds e into the model's state.
func (m *Model) handle(e train.Event) {
	m.lastTime, m.lastElapsed = e.Time, e.Elapsed
	switch e.Kind {
	case train.EventStart:
		m.started, m.start = true, e.Time
		var cfg struct {
			Epochs int `json:"epochs"`
		}
		if json.Unmarshal(e.Config, &cfg) == nil && cfg.Epochs > 0 {
			m.epochs = cfg.Epochs
		}
		m.batches = e.Batches
		m.epoch, m.epochStart, m.startStep = 1, 0, 0
	case train.EventStep:
		m.endOfEpoch = false
		if e.Epoch != m.epoch && e.Epoch > 0 {
			m.epoch = e.Epoch
		}
		if e.Batches > 0 {
			m.batches = e.Batches
		}
		m.batch, m.step = e.Batch, e.Step
		if e.LR != 0 {
			m.lr = e.LR
		}
		m.running, m.runningEpoch = e.Metrics, e.Epoch
		if loss, ok := e.Metrics["loss"]; ok {
			if len(m.losses) == maxLosses { // halve the history, keeping its shape
				m.losses = resample(m.losses, maxLosses/2)
			}
			m.losses = append(m.losses, loss)
		}
		if dt := e.Elapsed - m.epochStart; dt > 0 {
			m.itemsPerSec = float64(e.Samples) / dt
			m.stepsPerSec = float64(e.Step-m.startStep) / dt
		}
	case train.EventEpoch:
		m.step = e.Step
		if e.Epoch > 0 {
			m.epoch = e.Epoch
		}
		// The next epoch starts when this one's last event is out.
		m.epochStart, m.startStep = e.Elapsed, e.Step
		switch e.Split {
		case "valid":
			m.validVals, m.validEpoch, m.seenValid = e.Metrics, e.Epoch, true
			m.endOfEpoch = false
			m.advanceEpoch()
		default:
			m.trainVals, m.trainEpoch = e.Metrics, e.Epoch
			if e.LR != 0 {
				m.lr = e.LR
			}
			m.batch = m.batches
			m.endOfEpoch = true
		}
	case train.EventEnd:
		m.end = &e
	default:
		m.note(e)
	}
	m.estimate()
}

// advanceEpoch moves the epoch bar to the next epoch once the current one
// is validated, so that it does not sit full while the next one runs.
func (m *Model) advanceEpoch() {
	if m.epoch < m.epochs {
		m.epoch++
		m.batch = 0
	}
}

// progress returns the fraction of the current epoch and of the run done
// (NaN for the epoch when the batches per epoch are unknown).
func (m *Model) progress() (epoch, total float64) {
	if m.batches <= 0 {
		return math.NaN(), float64(m.trainEpoch) / float64(m.epochs)
	}
	epoch = min(1, float64(m.batch)/float64(m.batches))
	total = (float64(m.epoch-1) + epoch) / float64(m.epochs)
	if m.trainEpoch > 0 && m.trainEpoch >= m.epoch { // the epoch ended, maybe before all batches (a cancel)
		total = max(total, float64(m.trainEpoch)/float64(m.epochs))
	}
	return epoch, min(1, total)
}

// estimate updates the ETAs from the latest progress: the time spent so
// far scaled by what is left, for the epoch (from its start) and the run.
func (m *Model) estimate() {
	fe, ft := m.progress()
	m.etaEpoch, m.etaTotal = math.NaN(), math.NaN()
	if fe > 0 {
		m.etaEpoch = (m.lastElapsed - m.epochStart) * (1 - fe) / fe
	}
	if ft > 0 {
		m.etaTotal = m.lastElapsed * (1 - ft) / ft
	}
}

// note keeps a line for an event of a kind the dashboard does not know
// (checkpoints and whatever later versions add): its kind, position and
// every field it has beyond the common ones.
func (m *Model) note(e train.Event) {
	line := fmt.Sprintf("%-10s epoch %d step %d", e.Kind, e.Epoch, e.Step)
	if len(e.Metrics) > 0 {
		line += "  " + e.Metrics.String()
	}
	var fields map[string]any
	if b, err := json.Marshal(e); err == nil && json.Unmarshal(b, &fields) == nil {
		for _, k := range []string{"version", "kind", "time", "epoch", "step", "elapsed_s", "metrics"} {
			delete(fields, k)
		}
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := fields[k].(type) {
			case string:
				line += fmt.Sprintf("  %s=%s", k, v)
			case float64:
				line += fmt.Sprintf("  %s=%s", k, number(v))
			default:
				b, _ := json.Marshal(v)
				line += fmt.Sprintf("  %s=%s", k, b)
			}
		}
	}
	m.notes = append(m.notes, line)
	if len(m.notes) > maxNotes {
		m.notes = m.notes[len(m.notes)-maxNotes:]
	}
}

// since returns the seconds from the latest event to now (0 before any).
func (m *Model) since() float64 {
	if m.lastTime.IsZero() {
		return 0
	}
	return max(0, m.now().Sub(m.lastTime).Seconds())
}

// elapsed returns the seconds the run has taken so far.
func (m *Model) elapsed() float64 {
	if !m.started {
		return math.NaN()
	}
	if m.end != nil || m.done {
		return m.lastElapsed
	}
	return m.lastElapsed + m.since()
}

// eta returns an ETA as of now, counting down between events.
func (m *Model) eta(atEvent float64) float64 {
	if math.IsNaN(atEvent) {
		return atEvent
	}
	return max(0, atEvent-m.since())
}

// status is the run's state in a word or two, styled.
func (m *Model) status() string {
	switch {
	case m.end != nil:
		switch m.end.Reason {
		case train.StopCompleted:
			return m.st.good.Render("completed")
		case train.StopFailed:
			return m.st.bad.Render("failed")
		case train.StopEarly:
			return m.st.warn.Render("stopped early")
		case train.StopCancelled:
			return m.st.warn.Render("cancelled")
		}
		return string(m.end.Reason)
	case m.done && m.fitErr != nil:
		return m.st.bad.Render("failed")
	case m.stopping:
		return m.st.warn.Render("stopping")
	case !m.started:
		return "starting"
	case m.endOfEpoch && m.seenValid:
		return "validating"
	case m.endOfEpoch:
		return "end of epoch"
	}
	return "training"
}

// View draws the dashboard, every line at most the window's width.
func (m *Model) View() string {
	w := m.width
	if w <= 0 {
		w = defaultWidth
	}
	w = max(w, minWidth)
	var lines []string
	add := func(s string) { lines = append(lines, s) }

	head := m.st.title.Render("Kiln") + " · " + m.title
	right := m.status() + "  " + duration(m.elapsed())
	if pad := w - lipgloss.Width(head) - lipgloss.Width(right); pad >= 2 {
		add(head + strings.Repeat(" ", pad) + right)
	} else {
		add(head + "  " + right)
	}

	fe, ft := m.progress()
	epochLabel := fmt.Sprintf("epoch %d/%d", m.epoch, m.epochs)
	if !m.started {
		epochLabel = "epoch -"
	}
	epochInfo := fmt.Sprintf(" %3.0f%%  %d/%d  ETA %s", 100*fe, m.batch, m.batches, duration(m.eta(m.etaEpoch)))
	if math.IsNaN(fe) {
		epochInfo = "  batches unknown"
	}
	totalInfo := fmt.Sprintf(" %3.0f%%  step %d  ETA %s", 100*ft, m.step, duration(m.eta(m.etaTotal)))
	// Both bars end in the same column.
	infoWidth := max(len([]rune(epochInfo)), len([]rune(totalInfo)))
	add(m.progressLine(epochLabel, fe, fmt.Sprintf("%-*s", infoWidth, epochInfo), w))
	add(m.progressLine("total", ft, fmt.Sprintf("%-*s", infoWidth, totalInfo), w))

	speed := fmt.Sprintf("speed %s samples/s  %s steps/s", rate(m.itemsPerSec), rate(m.stepsPerSec))
	if m.lr != 0 {
		speed += fmt.Sprintf("   lr %.4g", m.lr)
	}
	add(speed)
	add("")
	lines = append(lines, m.table()...)
	add("")
	lines = append(lines, m.lossChart(w)...)
	if len(m.notes) > 0 {
		add("")
		lines = append(lines, m.notes...)
	}
	add("")
	add(m.footer())

	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "")
	}
	return strings.Join(lines, "\n") + "\n"
}

// progressLine is "label  bar info" in width w, the bar taking what the
// label and info leave (at least 5 cells).
func (m *Model) progressLine(label string, f float64, info string, w int) string {
	const labelWidth = 12
	label = fmt.Sprintf("%-*s", labelWidth-1, label) + " "
	bw := max(5, w-labelWidth-len([]rune(info)))
	return label + m.st.bar.Render(bar(f, bw)) + info
}

// table is the metrics: a column per metric name (loss first), a row for
// the running means of the epoch in progress (from the latest step event),
// the last training epoch and the last validation.
func (m *Model) table() []string {
	names := map[string]bool{}
	for _, v := range []train.Values{m.running, m.trainVals, m.validVals} {
		for k := range v {
			names[k] = true
		}
	}
	if len(names) == 0 {
		return []string{m.st.faint.Render("(no metrics yet)")}
	}
	cols := make([]string, 0, len(names))
	for k := range names {
		if k != "loss" {
			cols = append(cols, k)
		}
	}
	sort.Strings(cols)
	if names["loss"] {
		cols = append([]string{"loss"}, cols...)
	}
	const labelWidth = 21
	row := func(label string, v train.Values) string {
		s := fmt.Sprintf("%-*s", labelWidth, label)
		for _, c := range cols {
			cell := ""
			if x, ok := v[c]; ok {
				cell = number(x)
			}
			s += fmt.Sprintf("%-*s", max(9, len(c)+2), cell)
		}
		return strings.TrimRight(s, " ")
	}
	header := fmt.Sprintf("%-*s", labelWidth, "")
	for _, c := range cols {
		header += fmt.Sprintf("%-*s", max(9, len(c)+2), c)
	}
	out := []string{m.st.faint.Render(strings.TrimRight(header, " "))}
	if m.running != nil {
		out = append(out, row(fmt.Sprintf("train epoch %d so far", m.runningEpoch), m.running))
	}
	if m.trainVals != nil {
		out = append(out, row(fmt.Sprintf("train epoch %d", m.trainEpoch), m.trainVals))
	}
	if m.validVals != nil {
		out = append(out, row(fmt.Sprintf("valid epoch %d", m.validEpoch), m.validVals))
	}
	return out
}

// lossChart is the chart of the step events' losses with its range on the
// left.
func (m *Model) lossChart(w int) []string {
	const labelWidth = 9
	if len(m.losses) == 0 {
		return []string{m.st.faint.Render("loss chart: waiting for the first step")}
	}
	ys, logScale := logIfWide(m.losses)
	rows, lo, hi := chart(ys, w-labelWidth, chartHeight)
	title := fmt.Sprintf("loss, running mean over the epoch, %d logged steps", len(m.losses))
	if logScale {
		title += ", log scale"
		lo, hi = math.Exp(lo), math.Exp(hi)
	}
	out := []string{m.st.faint.Render(title)}
	for i, r := range rows {
		label := ""
		switch i {
		case 0:
			label = number(hi)
		case len(rows) - 1:
			label = number(lo)
		}
		out = append(out, fmt.Sprintf("%*s ", labelWidth-1, label)+m.st.bar.Render(r))
	}
	return out
}

// footer is the key help while running, and the outcome at the end.
func (m *Model) footer() string {
	switch {
	case m.end != nil:
		s := fmt.Sprintf("%s after %d epochs, %d steps in %s", m.end.Reason, m.trainEpoch, m.step,
			duration(m.end.Elapsed))
		if m.end.Error != "" {
			s += ": " + m.end.Error
		}
		return s
	case m.done && m.fitErr != nil:
		return "failed: " + m.fitErr.Error()
	case m.stopping:
		return m.st.warn.Render("stopping after the current step… (ctrl+c again leaves now)")
	}
	return m.st.faint.Render("q: stop after the current step")
}

// logIfWide returns the logarithms of ys when its finite values are all
// positive and span a factor of 10 or more (a loss falling from 2.3 to
// 0.05 then uses the whole chart, not its bottom row), else ys.
func logIfWide(ys []float64) ([]float64, bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, y := range ys {
		if !math.IsNaN(y) && !math.IsInf(y, 0) {
			lo, hi = min(lo, y), max(hi, y)
		}
	}
	if !(lo > 0 && hi >= 10*lo) {
		return ys, false
	}
	out := make([]float64, len(ys))
	for i, y := range ys {
		out[i] = math.Log(y) // NaN and ±Inf stay non-finite, so they stay gaps
	}
	return out, true
}

package dashboard

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"sort"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/kiln-ml/kiln/train"
)

// Layout and history constants.
const (
	defaultWidth = 80 // columns before the terminal reports its size
	minWidth     = 20 // narrower terminals are drawn as if this wide, then cut
	maxPoints    = 4096
	tickEvery    = 500 * time.Millisecond
	// smoothing is the weight of the past in the exponential moving
	// average of the train loss drawn on the chart.
	smoothing = 0.6
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
// clock ticks; View draws it in the window's width and height. It quits
// the program when the run's end event arrives. Create it with NewModel.
type Model struct {
	title  string
	cancel func()
	width  int
	height int
	now    func() time.Time
	st     styles

	started     bool
	start       time.Time // the start event's time
	ranks       int       // data-parallel ranks, from the start event (0: one process)
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
	bestVals     train.Values // the valid epoch with the lowest loss
	trainEpoch   int
	validEpoch   int
	bestEpoch    int
	seenValid    bool

	// The loss chart: the train loss between step events, smoothed, and
	// the validation loss of each epoch, with the range of all the values
	// ever plotted (so that halving the history does not narrow it).
	trainPoints []point
	validPoints []point
	yLo, yHi    float64
	prev        struct {
		loss    float64 // the latest step event's running loss,
		samples int     // its samples
		epoch   int     // and epoch (0: none to difference with)
	}
	noDiff      int     // an epoch resumed part way: its running loss covers batches its Samples do not
	ema, emaSum float64 // the moving average's sums (emaSum: of its weights)

	// The status line: the latest checkpoint or other event, as a line
	// and a path at its end (cut from the left when the line is too long).
	note, notePath string

	endOfEpoch bool         // between a train epoch event and the next step
	stopping   bool         // stop was asked for
	end        *train.Event // the end event
	fitErr     error
	done       bool // Fit returned
}

// styles are the dashboard's colours, made for one output.
type styles struct {
	title, bar, faint, good, warn, bad, train, valid lipgloss.Style
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
		train: r.NewStyle().Foreground(lipgloss.Color("69")),
		valid: r.NewStyle().Foreground(lipgloss.Color("208")).Bold(true),
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
		yLo: math.Inf(1), yHi: math.Inf(-1),
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
		m.width, m.height = msg.Width, msg.Height
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
		m.readConfig(e.Config)
		m.batches = e.Batches
		m.ranks = e.WorldSize
		m.epoch, m.epochStart, m.startStep = 1, 0, 0
	case train.EventResume:
		m.started = true
		m.readConfig(e.Config)
		if p := e.Position; p != nil {
			m.step, m.batch = p.Step, p.Batch
			m.epoch = min(p.Epoch+1, max(m.epochs, 1))
			m.trainEpoch = p.Epoch
			if p.Batch > 0 {
				m.noDiff = p.Epoch + 1
			}
		}
		m.epochStart, m.startStep = e.Elapsed, m.step
		m.prev.epoch = 0
		m.noteEvent(e)
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
			m.addTrainLoss(e, loss)
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
			if loss, ok := e.Metrics["loss"]; ok && finite(loss) {
				if m.bestVals == nil || loss < m.bestVals["loss"] {
					m.bestVals, m.bestEpoch = maps.Clone(e.Metrics), e.Epoch
				}
				m.addPoint(&m.validPoints, point{float64(e.Epoch), loss})
			}
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
		m.noteEvent(e)
	}
	m.estimate()
}

// readConfig takes the number of epochs from a start or resume event's
// config.
func (m *Model) readConfig(config json.RawMessage) {
	var cfg struct {
		Epochs int `json:"epochs"`
	}
	if json.Unmarshal(config, &cfg) == nil && cfg.Epochs > 0 {
		m.epochs = cfg.Epochs
	}
}

// addTrainLoss adds a step event's loss to the chart. The event's loss is
// the running mean over its epoch, weighted by samples; the mean over the
// batches since the previous step event of the epoch is recovered from
// the two running means and their samples, so that the chart follows the
// loss step by step rather than an average that starts afresh each epoch.
// That is then smoothed by an exponential moving average (debiased, so
// that its start is not pulled towards zero).
func (m *Model) addTrainLoss(e train.Event, loss float64) {
	v := loss
	p := m.prev
	if p.epoch == e.Epoch && e.Epoch != m.noDiff && p.samples > 0 && e.Samples > p.samples {
		if d := (loss*float64(e.Samples) - p.loss*float64(p.samples)) / float64(e.Samples-p.samples); finite(d) {
			v = d
		}
	}
	m.prev.loss, m.prev.samples, m.prev.epoch = loss, e.Samples, e.Epoch
	if !finite(v) {
		m.addPoint(&m.trainPoints, point{m.x(e), math.NaN()}) // a gap
		return
	}
	m.ema = smoothing*m.ema + (1-smoothing)*v
	m.emaSum = smoothing*m.emaSum + (1 - smoothing)
	m.addPoint(&m.trainPoints, point{m.x(e), m.ema / m.emaSum})
}

// x is a step event's place on the chart, in epochs: the epochs before
// its own and the part of its own done (all of it when the batches per
// epoch are unknown).
func (m *Model) x(e train.Event) float64 {
	f := 1.0
	if e.Batches > 0 {
		f = min(1, float64(e.Batch)/float64(e.Batches))
	}
	return float64(max(e.Epoch, 1)-1) + f
}

// addPoint appends pt to *ps, halving the history when it is full, and
// widens the chart's range to pt.
func (m *Model) addPoint(ps *[]point, pt point) {
	if len(*ps) == maxPoints {
		*ps = halve(*ps)
	}
	*ps = append(*ps, pt)
	if finite(pt.y) {
		m.yLo, m.yHi = min(m.yLo, pt.y), max(m.yHi, pt.y)
	}
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

// noteEvent makes the status line of a checkpoint, resume or other event
// the dashboard does not draw otherwise. A checkpoint or resume says its
// position and path (whose metrics the table already shows); an event of
// a kind the dashboard does not know (one from a later version) says its
// kind, position and every field it has beyond the common ones.
func (m *Model) noteEvent(e train.Event) {
	switch e.Kind {
	case train.EventCheckpoint:
		step := e.Step
		if e.Position != nil {
			step = e.Position.Step
		}
		m.note, m.notePath = fmt.Sprintf("checkpoint  epoch %d step %d  ", e.Epoch, step), e.Path
		return
	case train.EventResume:
		m.note, m.notePath = fmt.Sprintf("resumed  epoch %d batch %d step %d  from ", m.epoch, m.batch, m.step), e.Path
		if e.Error != "" { // corrupt checkpoints skipped: worth more than the path
			m.note, m.notePath = m.note+e.Path+"  skipped "+e.Error, ""
		}
		return
	}
	line := fmt.Sprintf("%s  epoch %d step %d", e.Kind, e.Epoch, e.Step)
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
	m.note, m.notePath = line, ""
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

package dashboard

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/kiln-ml/kiln/train"
)

// Layout of the view, top to bottom: the header (title and state, the
// epoch and run progress bars, throughput), the metrics table, the loss
// chart, the status line and the footer, with a blank line between parts.
// Every part but the table and the chart has a fixed number of lines, so
// that nothing moves as the run goes on.
const (
	headerLines    = 4
	chartAxisLines = 3  // the legend above the plot, the x axis and its labels below
	fixedLines     = 10 // headerLines, chartAxisLines, the status line, the footer and 4 blank lines
	aboveLines     = 3  // lines a program may have printed above the dashboard, kept on the screen
	minChartRows   = 3
	maxChartRows   = 10
	defaultRows    = 8 // before the terminal reports its height
	tableGap       = 2 // spaces between the metric table's columns, at least
	wideTableGap   = 4 // when there is room
)

// View draws the dashboard, every line at most the window's width, and
// no more lines than its height has room for (as far as the chart can
// shrink).
func (m *Model) View() string {
	w := m.width
	if w <= 0 {
		w = defaultWidth
	}
	w = max(w, minWidth)
	var lines []string
	add := func(s ...string) { lines = append(lines, s...) }

	add(m.header(w)...)
	add("")
	table := m.table(w)
	add(table...)
	add("")
	add(m.lossChart(w, m.chartRows(len(table)))...)
	add("")
	add(m.statusLine(w))
	add(m.footer())

	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "")
	}
	return strings.Join(lines, "\n") + "\n"
}

// chartRows is the height of the plot: what the window's height leaves
// (keeping aboveLines for what was printed before the dashboard) between
// minChartRows and maxChartRows, or defaultRows when the height is not
// known.
func (m *Model) chartRows(tableLines int) int {
	if m.height <= 0 {
		return defaultRows
	}
	return max(minChartRows, min(maxChartRows, m.height-fixedLines-tableLines-aboveLines))
}

// header is the title and the run's state and time, the progress bars of
// the epoch and the run with their ETAs, and the throughput and learning
// rate.
func (m *Model) header(w int) []string {
	title := m.st.title.Render("Kiln") + " · " + m.title
	if m.ranks > 1 {
		title += fmt.Sprintf(" · ×%d ranks", m.ranks)
	}
	right := duration(m.elapsed())
	if s := m.state(); s != "" {
		right = s + "  " + right
	}
	first := title + "  " + right
	if pad := w - lipgloss.Width(title) - lipgloss.Width(right); pad >= 2 {
		first = title + strings.Repeat(" ", pad) + right
	} else if room := w - lipgloss.Width(right) - 2; room >= 8 {
		first = cut(title, room) + "  " + right
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

	speed := fmt.Sprintf("%s samples/s  %s steps/s", rate(m.itemsPerSec), rate(m.stepsPerSec))
	if m.lr != 0 {
		speed += "  lr " + number(m.lr)
	}
	return []string{
		first,
		m.progressLine(epochLabel, fe, fmt.Sprintf("%-*s", infoWidth, epochInfo), w),
		m.progressLine("total", ft, fmt.Sprintf("%-*s", infoWidth, totalInfo), w),
		m.st.faint.Render(speed),
	}
}

// state is the run's state in a word or two, styled; none at the end,
// which the footer tells.
func (m *Model) state() string {
	switch {
	case m.end != nil:
		return ""
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

// progressLine is "label  bar info" in width w, the bar taking what the
// label and info leave (at least 5 cells).
func (m *Model) progressLine(label string, f float64, info string, w int) string {
	const labelWidth = 12
	label = fmt.Sprintf("%-*s", labelWidth-1, label) + " "
	bw := max(5, w-labelWidth-len([]rune(info)))
	return label + m.st.bar.Render(bar(f, bw)) + info
}

// tableColumn is a column of the metrics table: its values and its
// header at three lengths, for the room there is.
type tableColumn struct {
	headers [3]string // long, medium, short
	values  train.Values
}

// table is the metrics: a row per metric name (loss first) and a column
// per set of values: the running means of the epoch in progress (from the
// latest step event), the last training epoch, the last validation and
// the validation with the lowest loss. Numbers are right-aligned under
// right-aligned headers, at least tableGap spaces apart. When the columns
// do not fit in w they get shorter headers, then the best and the last
// training columns are left out; long metric names are cut first, to
// minNameWidth.
func (m *Model) table(w int) []string {
	names := map[string]bool{}
	for _, v := range []train.Values{m.running, m.trainVals, m.validVals} {
		for k := range v {
			names[k] = true
		}
	}
	if len(names) == 0 {
		return []string{m.st.faint.Render("(no metrics yet)")}
	}
	rows := make([]string, 0, len(names))
	for k := range names {
		if k != "loss" {
			rows = append(rows, k)
		}
	}
	sort.Strings(rows)
	if names["loss"] {
		rows = append([]string{"loss"}, rows...)
	}

	var cols []tableColumn
	if m.running != nil {
		e := m.runningEpoch
		cols = append(cols, tableColumn{[3]string{fmt.Sprintf("train (epoch %d so far)", e),
			fmt.Sprintf("train ep %d so far", e), "so far"}, m.running})
	}
	lastTrain := -1
	if m.trainVals != nil {
		lastTrain = len(cols)
		e := m.trainEpoch
		cols = append(cols, tableColumn{[3]string{fmt.Sprintf("train (epoch %d)", e),
			fmt.Sprintf("train ep %d", e), "train"}, m.trainVals})
	}
	if m.validVals != nil {
		e := m.validEpoch
		cols = append(cols, tableColumn{[3]string{fmt.Sprintf("valid (epoch %d)", e),
			fmt.Sprintf("valid ep %d", e), "valid"}, m.validVals})
	}
	best := -1
	if m.bestVals != nil {
		best = len(cols)
		e := m.bestEpoch
		cols = append(cols, tableColumn{[3]string{fmt.Sprintf("best valid (epoch %d)", e),
			fmt.Sprintf("best ep %d", e), "best"}, m.bestVals})
	}

	cells := make([][]string, len(cols)) // by column, then row
	for c, col := range cols {
		cells[c] = make([]string, len(rows))
		for r, name := range rows {
			cells[c][r] = "-"
			if x, ok := col.values[name]; ok {
				cells[c][r] = number(x)
			}
		}
	}
	nameWidth := len("metric")
	for _, name := range rows {
		nameWidth = max(nameWidth, ansi.StringWidth(name))
	}

	// The layouts to try, roomiest first: header length, gap, columns.
	all := make([]int, len(cols))
	for i := range all {
		all[i] = i
	}
	without := func(drop ...int) []int {
		var keep []int
		for _, c := range all {
			if c != drop[0] && (len(drop) < 2 || c != drop[1]) {
				keep = append(keep, c)
			}
		}
		return keep
	}
	type layout struct {
		header, gap int
		cols        []int
	}
	layouts := []layout{{0, wideTableGap, all}, {0, tableGap, all}, {1, tableGap, all}, {2, tableGap, all}}
	if best >= 0 {
		layouts = append(layouts, layout{2, tableGap, without(best)})
	}
	if lastTrain >= 0 {
		layouts = append(layouts, layout{2, tableGap, without(best, lastTrain)})
	}
	widthOf := func(l layout) (total int, widths []int) {
		total = nameWidth
		for _, c := range l.cols {
			cw := ansi.StringWidth(cols[c].headers[l.header])
			for _, s := range cells[c] {
				cw = max(cw, len(s))
			}
			widths = append(widths, cw)
			total += l.gap + cw
		}
		return total, widths
	}
	// A layout fits when it does with the metric names cut to
	// minNameWidth: long names lose their ends before the headers their
	// epochs.
	const minNameWidth = 12
	chosen := layouts[len(layouts)-1]
	for _, l := range layouts {
		if total, _ := widthOf(l); total-nameWidth+min(nameWidth, minNameWidth) <= w {
			chosen = l
			break
		}
	}
	total, widths := widthOf(chosen)
	if total > w { // cut the metric names, down to a few cells
		nameWidth = max(4, nameWidth-(total-w))
	}

	line := func(name string, cell func(i, c int) string) string {
		var b strings.Builder
		b.WriteString(cut(name, nameWidth))
		b.WriteString(strings.Repeat(" ", nameWidth-ansi.StringWidth(cut(name, nameWidth))))
		for i, c := range chosen.cols {
			s := cell(i, c)
			b.WriteString(strings.Repeat(" ", chosen.gap+widths[i]-ansi.StringWidth(s)))
			b.WriteString(s)
		}
		return strings.TrimRight(b.String(), " ")
	}
	out := []string{m.st.faint.Render(line("metric", func(_, c int) string { return cols[c].headers[chosen.header] }))}
	for r, name := range rows {
		out = append(out, line(name, func(_, c int) string { return cells[c][r] }))
	}
	return out
}

// lossChart is the legend, the plot of the train and validation losses
// over the epochs, rows high, and its x axis.
func (m *Model) lossChart(w, rows int) []string {
	legend := m.st.faint.Render("loss by epoch   ") + m.st.train.Render("⠉⠒⠤") + " train (smoothed)   " +
		m.st.valid.Render(string(validMarker)) + " valid"
	// A run past its configured epochs (a config without them) widens the
	// axis rather than piling its points at the right edge.
	p := plot{train: m.trainPoints, valid: m.validPoints, xMax: xExtent(max(m.epochs, m.epoch), m.epoch)}
	if m.yLo <= m.yHi {
		p.y = yAxis(m.yLo, m.yHi, max(2, min(5, rows/2+1)))
	} else {
		legend = m.st.faint.Render("loss by epoch: waiting for the first step")
		p.y = axis{0, 1, 0} // no labels
	}
	style := func(s lipgloss.Style) func(string) string { return func(x string) string { return s.Render(x) } }
	return append([]string{legend}, p.draw(w, rows, style(m.st.train), style(m.st.valid))...)
}

// statusLine is the latest checkpoint or other event in one line cut to
// w, a path at its end cut from the left; empty before any.
func (m *Model) statusLine(w int) string {
	if m.notePath != "" {
		if room := w - ansi.StringWidth(m.note); room >= 12 {
			return m.note + cutLeft(m.notePath, room)
		}
	}
	return cut(m.note+m.notePath, w)
}

// footer is the key help while running, and the outcome at the end: the
// one line that says how the run ended.
func (m *Model) footer() string {
	switch {
	case m.end != nil:
		reason := string(m.end.Reason)
		switch m.end.Reason {
		case train.StopCompleted:
			reason = m.st.good.Render(reason)
		case train.StopFailed:
			reason = m.st.bad.Render(reason)
		case train.StopEarly:
			reason = m.st.warn.Render("stopped early")
		case train.StopCancelled:
			reason = m.st.warn.Render(reason)
		}
		s := fmt.Sprintf("%s after %d epochs, %d steps in %s", reason, m.trainEpoch, m.step, duration(m.end.Elapsed))
		if m.end.Error != "" {
			s += ": " + m.end.Error
		}
		return s
	case m.done && m.fitErr != nil:
		return m.st.bad.Render("failed") + ": " + m.fitErr.Error()
	case m.stopping:
		return m.st.warn.Render("stopping after the current step… (ctrl+c again leaves now)")
	}
	return m.st.faint.Render("q: stop after the current step")
}

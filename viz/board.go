package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Board is a set of charts shown together (the charts of a run, a live
// dashboard's state): its HTML lays them out side by side, wrapping; its
// SVG tiles them two to a row.
type Board struct {
	title  string
	charts []*Chart
}

// NewBoard returns a board with a title ("" for none) and charts.
func NewBoard(title string, charts ...*Chart) *Board {
	b := &Board{title: title}
	for _, c := range charts {
		b.Add(c)
	}
	return b
}

// Add appends a chart (nil is ignored) and returns the board.
func (b *Board) Add(c *Chart) *Board {
	if c != nil {
		b.charts = append(b.charts, c)
	}
	return b
}

// Title returns the board's title.
func (b *Board) Title() string { return b.title }

// Charts returns the board's charts, in order.
func (b *Board) Charts() []*Chart { return append([]*Chart(nil), b.charts...) }

// Chart returns the board's chart with the given key ("loss", "lr", …), or
// nil.
func (b *Board) Chart(key string) *Chart {
	for _, c := range b.charts {
		if c.key == key {
			return c
		}
	}
	return nil
}

// String lists the board's charts, one per line (its text/plain rendering).
func (b *Board) String() string {
	var s strings.Builder
	if b.title != "" {
		s.WriteString(b.title + "\n")
	}
	if len(b.charts) == 0 {
		s.WriteString("(no charts)")
	}
	for i, c := range b.charts {
		if i > 0 {
			s.WriteByte('\n')
		}
		s.WriteString(c.String())
	}
	return s.String()
}

// Option returns the charts' echarts options as a JSON array of
// {"key": …, "option": {…}} objects, in order.
func (b *Board) Option() ([]byte, error) {
	type keyed struct {
		Key    string         `json:"key"`
		Option map[string]any `json:"option"`
	}
	out := make([]keyed, len(b.charts))
	for i, c := range b.charts {
		out[i] = keyed{c.key, c.fig.option()}
	}
	j, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("viz: board %q: %w", b.title, err)
	}
	return j, nil
}

// SVG returns the charts' static renderings tiled two to a row, each at
// the size of the first chart.
func (b *Board) SVG() string {
	if len(b.charts) == 0 {
		return errorSVG(DefaultWidth, 40, fmt.Errorf("no charts"))
	}
	w, h := b.charts[0].width, b.charts[0].height
	cols := min(2, len(b.charts))
	rows := (len(b.charts) + cols - 1) / cols
	c := vgsvg.New(pxToPt(w*cols), pxToPt(h*rows))
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(4), PadY: vg.Points(4)}
	for i, ch := range b.charts {
		p, err := ch.fig.plot()
		if err == nil {
			err = drawPlot(p, tiles.At(dc, i%cols, i/cols))
		}
		if err != nil {
			return errorSVG(w, h, fmt.Errorf("chart %q: %w", ch.key, err))
		}
	}
	var out bytes.Buffer
	if _, err := c.WriteTo(&out); err != nil {
		return errorSVG(w, h, err)
	}
	return out.String()
}

// HTML returns the board as one self-contained HTML fragment (the chart
// library inline once).
func (b *Board) HTML() string { return NewSession().Fragment(b) }

// MIME returns the board's display bundle: text/html, image/svg+xml and
// text/plain.
func (b *Board) MIME() map[string]string { return NewSession().Render(b) }

// Bundle implements Visual.
func (b *Board) Bundle(s *Session) map[string]string {
	if s == nil {
		s = NewSession()
	}
	return map[string]string{mimeHTML: b.fragment(s), mimeSVG: b.SVG(), mimePlain: b.String()}
}

func (b *Board) fragment(s *Session) string {
	var out strings.Builder
	out.WriteString(`<div class="kiln-viz-board">`)
	if b.title != "" {
		fmt.Fprintf(&out, `<div style="font:bold 14px sans-serif;margin:4px">%s</div>`, html.EscapeString(b.title))
	}
	out.WriteString(`<div style="display:flex;flex-wrap:wrap;align-items:flex-start">`)
	for _, c := range b.charts {
		out.WriteString(c.fragment(s, c.SVG()))
	}
	out.WriteString("</div></div>\n")
	return out.String()
}

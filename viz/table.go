package viz

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/kiln-ml/kiln/tensor"
)

// Table is a table of text cells with a caption: devices, a tensor's
// values. It renders as HTML and as aligned plain text; it needs no chart
// library.
type Table struct {
	caption string
	header  []string
	rows    [][]string
	note    string
	// highlight marks rows drawn in bold (the default device).
	highlight map[int]bool
}

// NewTable returns a table with a caption ("" for none) and column names.
func NewTable(caption string, header ...string) *Table {
	return &Table{caption: caption, header: append([]string(nil), header...)}
}

// AddRow appends a row of cells (missing cells are blank, extra ones
// dropped) and returns the table.
func (t *Table) AddRow(cells ...string) *Table {
	row := make([]string, len(t.header))
	copy(row, cells)
	if len(t.header) == 0 {
		row = append([]string(nil), cells...)
	}
	t.rows = append(t.rows, row)
	return t
}

// Rows returns a copy of the table's rows.
func (t *Table) Rows() [][]string {
	out := make([][]string, len(t.rows))
	for i, r := range t.rows {
		out[i] = append([]string(nil), r...)
	}
	return out
}

// Header returns the column names.
func (t *Table) Header() []string { return append([]string(nil), t.header...) }

// String renders the table as aligned plain text.
func (t *Table) String() string {
	cols := len(t.header)
	for _, r := range t.rows {
		cols = max(cols, len(r))
	}
	width := make([]int, cols)
	measure := func(r []string) {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	measure(t.header)
	for _, r := range t.rows {
		measure(r)
	}
	var b strings.Builder
	if t.caption != "" {
		b.WriteString(t.caption + "\n")
	}
	line := func(r []string) {
		var parts []string
		for i := range cols {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			parts = append(parts, c+strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
		}
		b.WriteString(strings.TrimRight(strings.Join(parts, "  "), " ") + "\n")
	}
	if len(t.header) > 0 {
		line(t.header)
	}
	for _, r := range t.rows {
		line(r)
	}
	if t.note != "" {
		b.WriteString(t.note + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// HTML renders the table as an HTML fragment.
func (t *Table) HTML() string {
	var b strings.Builder
	b.WriteString(`<table class="kiln-viz-table" style="border-collapse:collapse;font:13px sans-serif">`)
	if t.caption != "" {
		fmt.Fprintf(&b, `<caption style="text-align:left;font-weight:bold;padding:4px 0">%s</caption>`, html.EscapeString(t.caption))
	}
	cell := `style="border-bottom:1px solid #ddd;padding:3px 10px;text-align:left"`
	if len(t.header) > 0 {
		b.WriteString("<thead><tr>")
		for _, h := range t.header {
			fmt.Fprintf(&b, `<th %s>%s</th>`, cell, html.EscapeString(h))
		}
		b.WriteString("</tr></thead>")
	}
	b.WriteString("<tbody>")
	for i, r := range t.rows {
		if t.highlight[i] {
			b.WriteString(`<tr style="font-weight:bold">`)
		} else {
			b.WriteString("<tr>")
		}
		for _, c := range r {
			fmt.Fprintf(&b, `<td %s>%s</td>`, cell, html.EscapeString(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table>")
	if t.note != "" {
		fmt.Fprintf(&b, `<div style="font:12px sans-serif;color:#555">%s</div>`, html.EscapeString(t.note))
	}
	return b.String()
}

// MIME returns the table's display bundle: text/html and text/plain.
func (t *Table) MIME() map[string]string {
	return map[string]string{mimeHTML: t.HTML(), mimePlain: t.String()}
}

// Bundle implements Visual (a table carries no chart library).
func (t *Table) Bundle(s *Session) map[string]string { return t.MIME() }

// Devices returns the table of the devices this process can use
// (tensor.Devices()).
func Devices() *Table { return DeviceTable(tensor.Devices()) }

// DeviceTable returns a table of devices: identifier, kind, name, memory,
// cores (CPU) or multiprocessors (GPU), details, and which one is the
// default and why (tensor.DefaultDeviceReason).
func DeviceTable(devs tensor.DeviceList) *Table {
	t := NewTable("Devices", "device", "kind", "name", "vendor", "memory", "cores / SMs", "detail", "default")
	t.highlight = map[int]bool{}
	for i, d := range devs {
		mem := "unknown"
		if d.MemoryBytes > 0 {
			mem = tensor.FormatBytes(d.MemoryBytes)
		}
		cores := "unknown"
		if d.Cores > 0 {
			unit := "cores"
			switch {
			case d.Kind == "cuda":
				unit = "SMs"
			case d.Kind != "cpu" && !d.Software:
				unit = "compute units"
			}
			cores = fmt.Sprintf("%d %s", d.Cores, unit)
		}
		def := ""
		if d.Default {
			def = "yes: " + tensor.DefaultDeviceReason()
			t.highlight[i] = true
		} else if d.NotDefault != "" {
			def = "no: " + d.NotDefault
		}
		vendor := d.Vendor
		if vendor == "" {
			vendor = "-"
		}
		t.AddRow(d.String(), d.Kind, d.Name, vendor, mem, cores, d.Detail, def)
	}
	if len(devs) == 0 {
		t.note = "No device detected."
	}
	return t
}

// TensorTable summarises a tensor as a table: a caption with its dtype, shape
// and device, and its values (a 0-, 1- or 2-D tensor's values in rows and
// columns, at most 20 of each with "…" for the rest; a tensor of more
// dimensions as its printed form). Reading the values waits for queued
// work; a released tensor panics with its own error.
func TensorTable(t *tensor.Tensor) *Table {
	shape := t.Shape()
	tab := NewTable(fmt.Sprintf("Tensor %s %v on %s", t.DType(), shape, t.Device()))
	const most = 20
	switch len(shape) {
	case 0:
		tab.AddRow(formatNumber(t.Item()))
	case 1, 2:
		rows, cols := 1, shape[0]
		if len(shape) == 2 {
			rows, cols = shape[0], shape[1]
		}
		vals := t.Float64s()
		tab.header = []string{""}
		for c := range min(cols, most) {
			tab.header = append(tab.header, fmt.Sprint(c))
		}
		if cols > most {
			tab.header = append(tab.header, "…")
		}
		for r := range min(rows, most) {
			row := []string{fmt.Sprint(r)}
			for c := range min(cols, most) {
				row = append(row, formatNumber(vals[r*cols+c]))
			}
			if cols > most {
				row = append(row, "…")
			}
			tab.rows = append(tab.rows, row)
		}
		if rows > most {
			tab.rows = append(tab.rows, []string{"…"})
		}
	default:
		tab.note = t.String()
	}
	return tab
}

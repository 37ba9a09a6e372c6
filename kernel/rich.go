package kernel

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/viz"
)

// Rich values: a cell's last value is shown through viz where viz has a
// picture for it (viz.For: charts, boards, graphs, device lists, run
// results, confusion matrices), and, beyond viz.For, tensors with their
// statistics (and a histogram above HistogramAbove elements), single
// devices as a table, and models (an nn.Module, or any struct holding
// parameters, cell-declared ones included) as a module tree with
// parameter counts. Charts are rendered with the session's viz.Session, so
// that the chart library goes to the page once.

// HistogramAbove is the number of elements above which a tensor shown as a
// cell's value gets a histogram of its values.
const HistogramAbove = 64

// richBundle returns the bundle showing v, or nil when v has no rich form
// here (display.Render then shows it).
func (s *Session) richBundle(v any) (d *display.Data) {
	defer func() {
		// A value whose picture cannot be made (a released tensor) is
		// shown as text instead.
		if recover() != nil {
			d = nil
		}
	}()
	v = display.Unwrap(v)
	var m map[string]string
	switch x := v.(type) {
	case *tensor.Tensor:
		if x == nil || x.Released() {
			return nil
		}
		m = s.tensorBundle(x)
	case tensor.Device:
		var list tensor.DeviceList
		for _, e := range tensor.Devices() {
			if e.String() == x.String() {
				list = append(list, e)
			}
		}
		if len(list) == 0 {
			return nil
		}
		m = s.charts.Render(viz.DeviceTable(list))
	default:
		if vis := viz.For(v); vis != nil {
			m = s.charts.Render(vis)
		} else if isModel(v) {
			m = viz.ModuleTree(v).MIME()
		} else {
			return nil
		}
	}
	out := bundle(m, "")
	// The value's own text form wins (a tensor.DeviceList prints its
	// table as before).
	if _, ok := m[display.MIMETypeText]; !ok || isStringer(v) {
		out.Data[display.MIMETypeText] = display.Text(v)
	}
	return &out
}

func isStringer(v any) bool {
	_, ok := v.(fmt.Stringer)
	return ok
}

// isModel reports whether v is a model to show as a module tree: an
// nn.Module (nn.Sequential included) or a struct (or pointer to one)
// holding parameters.
func isModel(v any) bool {
	if _, ok := v.(nn.Module); ok {
		return true
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	return rv.Kind() == reflect.Struct && nn.Summary(v).Total() > 0
}

// tensorBundle shows a tensor: its values as a table, its statistics, and
// a histogram when it has more than HistogramAbove elements.
func (s *Session) tensorBundle(t *tensor.Tensor) map[string]string {
	table := viz.TensorTable(t)
	vals := t.Float64s()
	st := statsOf(vals)
	stats := viz.NewTable("Statistics", "elements", "min", "max", "mean", "std", "NaN", "±Inf")
	stats.AddRow(fmt.Sprint(len(vals)), num(st.min), num(st.max), num(st.mean), num(st.std), fmt.Sprint(st.nan), fmt.Sprint(st.inf))
	var html strings.Builder
	html.WriteString(table.HTML())
	html.WriteString(stats.HTML())
	text := t.String() + "\n" + stats.String()
	if len(vals) > HistogramAbove {
		html.WriteString(s.charts.Fragment(viz.Histogram(t)))
	}
	return map[string]string{display.MIMETypeHTML: html.String(), display.MIMETypeText: text}
}

type stats struct {
	min, max, mean, std float64
	nan, inf            int
}

// statsOf summarises the finite values and counts the others.
func statsOf(vals []float64) stats {
	st := stats{min: math.NaN(), max: math.NaN(), mean: math.NaN(), std: math.NaN()}
	var sum, sq float64
	n := 0
	for _, v := range vals {
		switch {
		case math.IsNaN(v):
			st.nan++
			continue
		case math.IsInf(v, 0):
			st.inf++
			continue
		}
		if n == 0 || v < st.min {
			st.min = v
		}
		if n == 0 || v > st.max {
			st.max = v
		}
		sum += v
		n++
	}
	if n == 0 {
		return st
	}
	st.mean = sum / float64(n)
	for _, v := range vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			sq += (v - st.mean) * (v - st.mean)
		}
	}
	st.std = math.Sqrt(sq / float64(n))
	return st
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.6g", v)
}

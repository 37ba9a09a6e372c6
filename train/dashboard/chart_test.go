package dashboard

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func TestYAxis(t *testing.T) {
	cases := []struct {
		name           string
		lo, hi         float64
		ticks          int
		wantLo, wantHi float64 // the range exactly, when set
	}{
		{"a falling loss from 2.3 to 0.01 is linear from 0", 0.01, 2.3, 5, 0, 2.5},
		{"a loss near 0.3 keeps its detail", 0.31, 0.39, 5, 0.3, 0.4},
		{"a flat series gets a range around it", 5, 5, 3, 4.5, 5.5},
		{"zero alone", 0, 0, 3, 0, 1},
		{"negative values", -3, -1, 3, -4, 0},
		{"values of both signs", -0.5, 2, 4, -1, 3},
		{"tiny values", 1e-7, 3e-7, 3, 0, 4e-7},
		{"large values", 12000, 56000, 5, 0, 60000},
		{"few ticks", 0.2, 1.7, 2, 0, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := yAxis(c.lo, c.hi, c.ticks)
			if !(a.lo <= c.lo && a.hi >= c.hi && a.lo < a.hi) {
				t.Fatalf("yAxis(%v, %v) = %+v: does not cover the data", c.lo, c.hi, a)
			}
			if math.Abs(a.lo-c.wantLo) > 1e-9*math.Max(1, math.Abs(c.wantLo)) ||
				math.Abs(a.hi-c.wantHi) > 1e-9*math.Max(1, math.Abs(c.wantHi)) {
				t.Errorf("yAxis(%v, %v) = %v..%v, want %v..%v", c.lo, c.hi, a.lo, a.hi, c.wantLo, c.wantHi)
			}
			if n := (a.hi - a.lo) / a.step; math.Abs(n-math.Round(n)) > 1e-6 || n < 1 || n > 2*float64(c.ticks) {
				t.Errorf("yAxis(%v, %v) = %+v: %v steps for %d ticks", c.lo, c.hi, a, n, c.ticks)
			}
			if c.lo >= 0 && a.lo < 0 {
				t.Errorf("yAxis(%v, %v) goes below zero: %+v", c.lo, c.hi, a)
			}
		})
	}
}

// The axis of a loss falling by orders of magnitude stays linear through
// the whole run: every range drawn covers the data so far, with a margin
// of at least yMargin of its span where the data do not touch zero, and
// the drawn position of a value is linear in it.
func TestYAxisStaysLinearThroughARun(t *testing.T) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 1; i <= 2000; i++ {
		y := 2.3*math.Exp(-float64(i)/200) + 0.001
		lo, hi = min(lo, y), max(hi, y)
		a := yAxis(lo, hi, 5)
		span := hi - lo
		if a.hi < hi+yMargin*span*(1-1e-9) || a.lo > lo-yMargin*span*(1-1e-9) && a.lo != 0 {
			t.Fatalf("step %d: axis %+v for data %v..%v: margin under %v", i, a, lo, hi, yMargin)
		}
		p := plot{y: a, xMax: 1}
		rows := p.draw(40, 8, plain, plain)
		if len(rows) != 10 {
			t.Fatalf("step %d: %d lines", i, len(rows))
		}
		// Equal steps between labels: the labels are the ticks, a linear
		// sequence, top down.
		var labels []float64
		for _, r := range rows[:8] {
			if l, _, ok := strings.Cut(r, "┤"); ok {
				v, err := strconv.ParseFloat(strings.TrimSpace(l), 64)
				if err != nil {
					t.Fatalf("label %q: %v", l, err)
				}
				labels = append(labels, v)
			}
		}
		if top, _ := strconv.ParseFloat(tickLabel(a.hi, a.step), 64); len(labels) < 2 || labels[0] != top {
			t.Fatalf("step %d: labels %v for axis %+v", i, labels, a)
		}
		for j := 2; j < len(labels); j++ {
			d0, d1 := labels[j-1]-labels[j-2], labels[j]-labels[j-1]
			if math.Abs(d0-d1) > 1e-9*a.step {
				t.Fatalf("step %d: labels %v not evenly spaced", i, labels)
			}
		}
	}
}

func plain(s string) string { return s }

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{1, 1}, {1.01, 2}, {2, 2}, {3, 5}, {7, 10}, {0.03, 0.05}, {0.1, 0.1}, {450, 500}, {0, 1}, {math.NaN(), 1},
	} {
		if got := niceStep(c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("niceStep(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

func TestTickLabel(t *testing.T) {
	for _, c := range []struct {
		v, step float64
		want    string
	}{
		{2.5, 0.5, "2.5"}, {2, 0.5, "2.0"}, {0.30000000000000004, 0.05, "0.30"}, {-1e-17, 0.1, "0.0"},
		{3e-7, 1e-7, "3e-07"}, {40000, 10000, "40000"}, {2e6, 1e6, "2e+06"},
	} {
		if got := tickLabel(c.v, c.step); got != c.want {
			t.Errorf("tickLabel(%v, %v) = %q, want %q", c.v, c.step, got, c.want)
		}
	}
}

func TestXExtent(t *testing.T) {
	for _, c := range []struct {
		epochs, current int
		want            float64
	}{
		{1, 1, 1}, {2, 1, 2}, {8, 3, 8}, {100, 1, 8}, {100, 9, 16}, {100, 40, 64}, {100, 99, 100}, {0, 1, 1},
	} {
		if got := xExtent(c.epochs, c.current); got != c.want {
			t.Errorf("xExtent(%d, %d) = %v, want %v", c.epochs, c.current, got, c.want)
		}
	}
}

func TestPlotDraw(t *testing.T) {
	p := plot{
		train: []point{{0.25, 2}, {0.5, 1.5}, {1, 1}, {1.5, 0.6}, {2, 0.4}},
		valid: []point{{1, 1.2}, {2, 0.5}},
		y:     yAxis(0.4, 2, 5),
		xMax:  2,
	}
	lines := p.draw(40, 6, plain, plain)
	t.Logf("plot:\n%s", strings.Join(lines, "\n"))
	if len(lines) != 8 {
		t.Fatalf("%d lines, want 6 rows and 2 of axis", len(lines))
	}
	axisCol := strings.IndexAny(lines[0], "┤│")
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > 40 {
			t.Errorf("line %d is %d cells wide: %q", i, w, l)
		}
		if i < 6 {
			if c := strings.IndexAny(l, "┤│"); c != axisCol {
				t.Errorf("line %d: axis at byte %d, not %d: %q", i, c, axisCol, l)
			}
		}
	}
	if !strings.HasPrefix(lines[0], "2.5┤") || !strings.HasPrefix(lines[5], "0.0┤") {
		t.Errorf("top and bottom labels: %q, %q", lines[0], lines[5])
	}
	if n := strings.Count(strings.Join(lines, ""), string(validMarker)); n != 2 {
		t.Errorf("%d validation markers, want 2", n)
	}
	if !strings.ContainsAny(strings.Join(lines, ""), "⠁⠂⠄⡀⠈⠐⠠⢀") && !strings.ContainsFunc(strings.Join(lines, ""), isBraille) {
		t.Error("no train line")
	}
	if !strings.HasPrefix(lines[6], "   └┬") || !strings.Contains(lines[7], "0") || !strings.HasSuffix(lines[7], "2") {
		t.Errorf("x axis:\n%s\n%s", lines[6], lines[7])
	}
}

func isBraille(r rune) bool { return r > brailleBase && r <= brailleBase+0xff }

// A line is drawn between consecutive points, so a steep fall has no gap.
func TestPlotJoinsPoints(t *testing.T) {
	p := plot{train: []point{{0, 10}, {0.1, 0}}, y: axis{0, 10, 5}, xMax: 1}
	lines := p.draw(30, 4, plain, plain)
	for r := range 4 {
		if !strings.ContainsFunc(lines[r], isBraille) {
			t.Errorf("row %d has no dot of the line:\n%s", r, strings.Join(lines, "\n"))
		}
	}
}

func TestHalve(t *testing.T) {
	nan := math.NaN()
	got := halve([]point{{0, 1}, {1, 3}, {2, nan}, {3, 5}, {4, 7}})
	want := []point{{0.5, 2}, {3, 5}, {4, 7}}
	if len(got) != len(want) {
		t.Fatalf("halve = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("halve = %v, want %v", got, want)
		}
	}
}

func TestBar(t *testing.T) {
	cases := []struct {
		name  string
		f     float64
		width int
		want  string
	}{
		{"empty", 0, 4, "····"},
		{"full", 1, 4, "████"},
		{"half", 0.5, 4, "██··"},
		{"eighths of a cell", 0.5 + 1.0/32, 4, "██▏·"},
		{"over one is full", 1.7, 3, "███"},
		{"negative is empty", -1, 3, "···"},
		{"NaN is empty", math.NaN(), 3, "···"},
		{"no width", 0.5, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := bar(c.f, c.width)
			if got != c.want {
				t.Fatalf("bar(%v, %d) = %q, want %q", c.f, c.width, got, c.want)
			}
			if n := utf8.RuneCountInString(got); n != c.width {
				t.Fatalf("%d cells, want %d", n, c.width)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	cases := []struct {
		name    string
		seconds float64
		want    string
	}{
		{"zero", 0, "0:00"},
		{"seconds round", 9.6, "0:10"},
		{"minutes", 125, "2:05"},
		{"hours", 3*3600 + 61, "3:01:01"},
		{"negative is unknown", -1, "--:--"},
		{"NaN is unknown", math.NaN(), "--:--"},
		{"infinity is unknown", math.Inf(1), "--:--"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := duration(c.seconds); got != c.want {
				t.Fatalf("duration(%v) = %q, want %q", c.seconds, got, c.want)
			}
		})
	}
}

func TestNumberHasFourSignificantDigits(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{0.00054721, "0.0005472"}, {1, "1"}, {0.38941, "0.3894"}, {2.882e-05, "2.882e-05"}, {12345, "1.234e+04"},
		{math.NaN(), "nan"}, {math.Inf(-1), "-inf"},
	} {
		if got := number(c.x); got != c.want {
			t.Errorf("number(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		w    int
		left bool
		want string
	}{
		{"abcdef", 6, false, "abcdef"}, {"abcdef", 4, false, "abc…"}, {"abcdef", 4, true, "…def"},
		{"abcdef", 0, true, ""}, {"ab", 1, true, "…"},
	} {
		got := cut(c.s, c.w)
		if c.left {
			got = cutLeft(c.s, c.w)
		}
		if got != c.want {
			t.Errorf("cut(%q, %d, left %v) = %q, want %q", c.s, c.w, c.left, got, c.want)
		}
	}
}

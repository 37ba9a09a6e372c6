package dashboard

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

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

func TestChart(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name          string
		ys            []float64
		width, height int
		want          []string
		lo, hi        float64
	}{
		{"rising over two rows", []float64{0, 1, 2, 3}, 4, 2,
			[]string{"  ▃█", "▁▆██"}, 0, 3},
		{"falling, left-aligned in a wider chart", []float64{4, 2, 0}, 5, 1,
			[]string{"█▅▁  "}, 0, 4},
		{"flat series sits on the bottom", []float64{5, 5, 5}, 3, 2,
			[]string{"   ", "▁▁▁"}, 5, 5},
		{"non-finite values leave gaps", []float64{0, nan, math.Inf(1), 1}, 4, 1,
			[]string{"▁  █"}, 0, 1},
		{"nothing finite", []float64{nan}, 2, 1, []string{"  "}, nan, nan},
		{"more values than columns are averaged", []float64{0, 2, 4, 6, 8, 10}, 3, 1,
			[]string{"▁▅█"}, 1, 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, lo, hi := chart(c.ys, c.width, c.height)
			if strings.Join(rows, "|") != strings.Join(c.want, "|") {
				t.Fatalf("chart = %q, want %q", rows, c.want)
			}
			same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
			if !same(lo, c.lo) || !same(hi, c.hi) {
				t.Fatalf("range %v..%v, want %v..%v", lo, hi, c.lo, c.hi)
			}
		})
	}
}

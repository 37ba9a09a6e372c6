package dashboard

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// bar draws a progress bar of width cells, filled to fraction f (clamped
// to [0, 1]) with eighth-cell precision.
func bar(f float64, width int) string {
	if width <= 0 {
		return ""
	}
	if math.IsNaN(f) || f < 0 {
		f = 0
	}
	f = min(f, 1)
	eighths := int(math.Round(f * float64(width*8)))
	full, part := eighths/8, eighths%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	if part > 0 {
		b.WriteRune([]rune("▏▎▍▌▋▊▉")[part-1])
		full++
	}
	b.WriteString(strings.Repeat("·", width-full))
	return b.String()
}

// duration formats d as m:ss, or h:mm:ss from an hour on; a negative or
// unknown duration (NaN seconds) is "--:--".
func duration(seconds float64) string {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) || seconds < 0 {
		return "--:--"
	}
	d := time.Duration(math.Round(seconds)) * time.Second
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// number formats a metric value with at most 4 significant digits
// ("0.3894", "1.235e-05", "nan").
func number(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// rate formats a throughput: whole numbers from 100 on, else 3 digits.
func rate(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return "-"
	}
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// cut cuts s to w cells, ending it with an ellipsis when it was cut.
func cut(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// cutLeft cuts s to w cells from the left, starting it with an ellipsis
// when it was cut: for paths, whose end says the most. s has no escape
// sequences.
func cutLeft(s string, w int) string {
	switch {
	case ansi.StringWidth(s) <= w:
		return s
	case w <= 0:
		return ""
	}
	r := []rune(s)
	for len(r) > 0 && ansi.StringWidth(string(r)) > w-1 {
		r = r[1:]
	}
	return "…" + string(r)
}

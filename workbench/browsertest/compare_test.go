//go:build unix

package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserCompareColoursByRun checks the Runs compare view: every series
// of one run has that run's colour in every chart, runs differ, the legend
// is a table of the runs, and percentages and MiB are never on one axis.
func TestBrowserCompareColoursByRun(t *testing.T) {
	ctx, shots, w := browserSetup(t)
	for i, name := range []string{"alpha", "beta"} {
		dir := filepath.Join(w.runs, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		recs := []string{`{"version":1,"kind":"start","time":"2026-01-01T00:00:00Z","epoch":0,"step":0,"batches":4}`}
		for step := 1; step <= 4; step++ {
			recs = append(recs, fmt.Sprintf(`{"kind":"step","time":"2026-01-01T00:00:0%dZ","epoch":1,"step":%d,"batch":%d,"metrics":{"loss":%g},"lr":0.1,"system":{"cpu_percent":%d,"mem_percent":40,"process_rss_mib":%d}}`,
				step, step, step, 2.0/float64(step+i), 50+step, 100*(i+1)+step))
		}
		recs = append(recs,
			`{"kind":"epoch","time":"2026-01-01T00:00:05Z","epoch":1,"step":4,"split":"valid","metrics":{"loss":0.7}}`,
			`{"kind":"end","time":"2026-01-01T00:00:06Z","epoch":1,"step":4,"reason":"completed"}`)
		writeFile(t, filepath.Join(dir, "events.jsonl"), strings.Join(recs, "\n")+"\n")
	}

	p := &page{t: t, ctx: ctx, shot: shots}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(w.url)); err != nil {
		t.Fatal(err)
	}
	p.wait("the page to start", `document.body.dataset.ready === "true"`, 60*time.Second)
	p.tab("runs")
	p.wait("both runs listed", `document.querySelectorAll(".run-row .run-check").length === 2`, 30*time.Second)
	eval[bool](p, `document.querySelectorAll(".run-row .run-check").forEach(c => c.checked = true), document.querySelector("#runs-compare").click(), true`)
	p.wait("the comparison", `document.querySelector("#run-view").dataset.mode === "compare" && document.querySelectorAll("#run-legend .legend-run").length === 2 && document.querySelector('.run-chart[data-metric="system usage (MiB)"]')`, 30*time.Second)

	type series struct {
		Dir, Name, Color string
	}
	type chart struct {
		Metric string
		Legend bool
		Unit   string
		Series []series
	}
	charts := eval[[]chart](p, `Array.from(document.querySelectorAll(".run-chart")).map(box => {
		const o = echarts.getInstanceByDom(box).getOption();
		return {Metric: box.dataset.metric, Legend: o.legend.some(l => l.show !== false), Unit: o.yAxis[0].name || "",
			Series: o.series.map(s => ({Dir: s.id.split("\u0000")[0], Name: s.id.split("\u0000")[1], Color: (s.lineStyle && s.lineStyle.color) || ""}))};
	})`)
	if len(charts) < 3 {
		t.Fatalf("the comparison has %d charts, want loss and system usage: %+v", len(charts), charts)
	}
	if got := eval[string](p, `document.querySelector('.run-value[data-metric="learning rate"]').textContent`); !strings.Contains(got, "0.1") || !strings.Contains(got, "(constant)") {
		t.Errorf("learning rate card %q, want 0.1 (constant) for both runs", got)
	}
	legend := eval[map[string]string](p, `Object.fromEntries(Array.from(document.querySelectorAll("#run-legend .legend-run")).map(r => [r.dataset.dir, r.dataset.color]))`)
	if len(legend) != 2 {
		t.Fatalf("the legend table lists %d runs, want 2: %v", len(legend), legend)
	}
	runColor := map[string]string{}
	for _, c := range charts {
		if c.Legend {
			t.Errorf("chart %s: echarts' own legend is shown; the run table is the legend", c.Metric)
		}
		var percent, mib bool
		for _, s := range c.Series {
			percent = percent || strings.HasSuffix(s.Name, "_percent")
			mib = mib || strings.HasSuffix(s.Name, "_mib")
			if s.Color == "" {
				t.Errorf("chart %s: series %s of %s has no colour of its own", c.Metric, s.Name, s.Dir)
				continue
			}
			if want, ok := runColor[s.Dir]; ok && want != s.Color {
				t.Errorf("chart %s: series %s of %s is %s, another series of that run %s", c.Metric, s.Name, s.Dir, s.Color, want)
			}
			runColor[s.Dir] = s.Color
			if legend[s.Dir] != s.Color {
				t.Errorf("chart %s: series %s of %s is %s, the legend table says %s", c.Metric, s.Name, s.Dir, s.Color, legend[s.Dir])
			}
		}
		if percent && mib {
			t.Errorf("chart %s puts %% and MiB on one axis", c.Metric)
		}
		if percent && c.Unit != "%" || mib && c.Unit != "MiB" {
			t.Errorf("chart %s: y axis unit %q", c.Metric, c.Unit)
		}
	}
	if len(runColor) != 2 {
		t.Fatalf("series of %d runs found, want 2: %v", len(runColor), runColor)
	}
	var colors []string
	for _, c := range runColor {
		colors = append(colors, c)
	}
	if colors[0] == colors[1] {
		t.Errorf("both runs are drawn in %s", colors[0])
	}
	p.screenshot("runs-compare-colours")
}

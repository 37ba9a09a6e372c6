//go:build unix

package browsertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/train"
)

// shownStep is one look at a run's row in the Runs table: when (the
// page's clock, Unix milliseconds), the step and the status it showed.
type shownStep struct {
	At     int64  `json:"at"`
	Step   int    `json:"step"`
	Status string `json:"status"`
}

// watchRowJS starts recording, every 50 ms, when the Runs table first
// shows the row of a run directory and what its step and status cells
// say from then on, in window.kilnWatch; it never asks the engine itself.
func watchRowJS(dir string) string {
	return `(() => { const w = window.kilnWatch = {seen: 0, steps: []};
const sel = '.run-row[data-dir=' + JSON.stringify(` + js(dir) + `) + ']';
w.timer = setInterval(() => { const r = document.querySelector(sel); if (!r) return;
const now = Date.now(); if (!w.seen) w.seen = now;
w.steps.push({at: now, step: +r.querySelector(".run-step").textContent || 0, status: r.querySelector(".run-status").firstChild.textContent}); }, 50);
return true; })()`
}

// A run started from a kernel cell, with a RunDir outside the workbench's
// root and runs folder, shows in the Runs table within 2 s of its start
// record through the run registry, without a refresh; its step follows
// its event log within a second (median) while it runs, and its end status too; it
// can be stopped from the workbench, and its checkpoints show in the
// Checkpoints tab. Before it, the empty Runs view says what it watches.
func TestBrowserRegistryRun(t *testing.T) {
	ctx, shots, w := browserSetup(t)
	p := openPage(t, ctx, shots, w)

	// No run yet: the Runs view says which folder and which registry it
	// watches, and how to add a folder.
	p.tab("runs")
	p.wait("the empty Runs view's note", `!document.querySelector("#runs-empty").hidden`, 30*time.Second)
	note := eval[string](p, `document.querySelector("#runs-empty").innerText`)
	for _, want := range []string{w.runs, w.registry, "--runs DIR"} {
		if !strings.Contains(note, want) {
			t.Errorf("the empty Runs view does not mention %q: %q", want, note)
		}
	}
	p.screenshot("runs-empty")
	p.tab("checkpoints")
	p.wait("the empty Checkpoints view's note", `!document.querySelector("#ckpt-empty").hidden`, 30*time.Second)
	if note := eval[string](p, `document.querySelector("#ckpt-empty").innerText`); !strings.Contains(note, w.runs) || !strings.Contains(note, w.registry) {
		t.Errorf("the empty Checkpoints view does not say what it watches: %q", note)
	}

	// A run from a cell of a notebook, in a folder the workbench does not watch.
	eval[bool](p, `(s => (s.value = "notebooks/scratch.ipynb", document.querySelector("#nb-open").click(), true))(document.querySelector("#nb-select"))`)
	p.wait("the scratch notebook", `document.querySelector("#cells").dataset.path === "notebooks/scratch.ipynb"`, 30*time.Second)
	runDir := filepath.Join(t.TempDir(), "notebook-run")
	if strings.HasPrefix(runDir, w.root) {
		t.Fatalf("the run directory %s is under the workbench's root %s", runDir, w.root)
	}
	c := p.run(modelCell, 60*time.Second)
	if c.State != "ok" {
		t.Fatalf("the model cell failed: %s", c.Text)
	}
	// The kernel trains on one core and leaves the others to the browser,
	// as on a user's machine with more cores than this test's may have (on
	// two, a run on both starves the page, and the test would time the
	// machine, not the workbench).
	if c := p.run("runtime.GOMAXPROCS(1)", 60*time.Second); c.State != "ok" {
		t.Fatalf("limiting the kernel to one core: %s", c.Text)
	}
	id := eval[string](p, `workbench.notebook.addCell("code", undefined, `+js(mnistCell(runDir))+`).id`)
	cellSel := `document.querySelector('[data-cell-id=` + js(id) + `]')`
	p.tab("runs")
	eval[bool](p, watchRowJS(runDir))
	eval[bool](p, cellSel+`.querySelector(".cell-run").click(), true`)
	p.wait("the notebook's run in the Runs table", `window.kilnWatch.seen > 0`, 120*time.Second)
	events, err := train.ReadEvents(filepath.Join(runDir, train.EventsFile))
	if err != nil || len(events) == 0 || events[0].Kind != train.EventStart {
		t.Fatalf("the run's log: %v, %v", events, err)
	}
	// It started when it registered (just before its start record).
	started := events[0].Time
	if e := registryEntry(t, w.registry, runDir); e != nil && e.Started.Before(started) {
		started = e.Started
	}
	seen := time.UnixMilli(int64(eval[float64](p, `window.kilnWatch.seen`)))
	lag := seen.Sub(started)
	t.Logf("the run showed in the Runs table %v after it registered", lag.Round(time.Millisecond))
	if lag > 2*time.Second {
		t.Errorf("the run showed in the Runs table %v after it started, want within 2 s", lag)
	}
	row := `document.querySelector('.run-row[data-dir=` + js(runDir) + `]')`
	if where := eval[string](p, row+`.querySelector(".run-where") ? `+row+`.querySelector(".run-where").textContent : ""`); where != filepath.Dir(runDir) {
		t.Errorf("the registered run's row shows its folder as %q, want %s", where, filepath.Dir(runDir))
	}

	// While it trains, then stopped from its view.
	p.wait("a thousand steps", row+`.dataset.step >= 1000`, 120*time.Second)
	p.screenshot("runs-registry-live")
	eval[bool](p, row+`.querySelector(".run-open").click(), true`)
	p.wait("the run's view", `document.querySelector('.run-progress .run-stop')`, 30*time.Second)
	eval[bool](p, `document.querySelector('.run-progress .run-stop').click(), true`)
	p.wait("the run cancelled in the table", row+`.dataset.status === "cancelled"`, 120*time.Second)
	p.wait("the training cell to finish", cellSel+`.dataset.state !== "running"`, 120*time.Second)
	time.Sleep(300 * time.Millisecond) // a few more looks at the ended run
	eval[bool](p, `clearInterval(window.kilnWatch.timer), true`)
	p.screenshot("runs-registry-stopped")

	// The table followed the log. At each look, how far behind it was:
	// the time since the log first had a step beyond the one shown (0 when
	// it showed the last). The engine passes records on within
	// milliseconds (TestRegistryRunsAreListed); what is left is the page's
	// own time, which on a small machine a training kernel competes for:
	// on a 2-core one the page blocks now and then for a second or two
	// (drawing the run's charts, parsing the chart library a kernel sends,
	// saving the notebook when the cell ends), so the worst look is only
	// guarded against the old fault, a table tens of seconds behind.
	var looks []shownStep
	if err := json.Unmarshal([]byte(eval[string](p, `JSON.stringify(window.kilnWatch.steps)`)), &looks); err != nil {
		t.Fatal(err)
	}
	if events, err = train.ReadEvents(filepath.Join(runDir, train.EventsFile)); err != nil {
		t.Fatal(err)
	}
	end := events[len(events)-1]
	if end.Kind != train.EventEnd || end.Reason != train.StopCancelled {
		t.Fatalf("the run's last record: %+v, want its end, cancelled", end)
	}
	var behind []time.Duration
	for _, l := range looks {
		at := time.UnixMilli(l.At)
		var d time.Duration
		for _, e := range events {
			if e.Time.After(at) {
				break
			}
			if e.Step > l.Step || e.Kind == train.EventEnd && l.Status != string(end.Reason) {
				d = at.Sub(e.Time)
				break
			}
		}
		behind = append(behind, d)
	}
	if len(looks) < 20 {
		t.Fatalf("only %d looks at the row", len(looks))
	}
	sorted := slices.Clone(behind)
	slices.Sort(sorted)
	p90, worst := sorted[len(sorted)*9/10], sorted[len(sorted)-1]
	t.Logf("%d looks at the row over %d log records: the table was behind the log by %v at the median, %v at the 90th percentile, %v at worst",
		len(looks), len(events), sorted[len(sorted)/2].Round(time.Millisecond), p90.Round(time.Millisecond), worst.Round(time.Millisecond))
	// Within a second at the median, and never stuck: on a 2-core machine
	// that also runs other test packages the page stalls for a second or
	// two now and then (chart drawing, the notebook's autosave), so the
	// 90th percentile is reported, not held to a second.
	median := sorted[len(sorted)/2]
	if median > time.Second || worst > 5*time.Second {
		for i, l := range looks {
			if behind[i] > time.Second {
				t.Logf("at %s the table showed step %d, %s: %v behind the log", time.UnixMilli(l.At).Format("15:04:05.000"), l.Step, l.Status, behind[i].Round(time.Millisecond))
			}
		}
		t.Errorf("the Runs table fell behind the run's log: %v at the median (want within 1 s), %v at worst (want within 5 s)", median, worst)
	}

	// Its checkpoints, in the Checkpoints tab, without a refresh.
	p.tab("checkpoints")
	p.wait("the run among the checkpoints' runs", `Array.from(document.querySelectorAll("#ckpt-run option")).some(o => o.value === `+js(runDir)+`)`, 2*time.Second)
	eval[bool](p, `workbench.checkpoints.select(`+js(runDir)+`).then(() => true)`, chromedp.EvalAwaitPromise)
	p.wait("the run's checkpoints", `document.querySelector('.ckpt-row[data-damaged="false"]')`, 30*time.Second)
	if n := eval[int](p, `document.querySelectorAll(".ckpt-row").length`); n == 0 {
		t.Error("no checkpoint of the registered run is listed")
	}
	p.screenshot("checkpoints-registry")
}

// registryEntry reads the entry of run directory dir in the run registry
// reg, or returns nil.
func registryEntry(t *testing.T, reg, dir string) *train.RegisteredRun {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(reg, "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var e train.RegisteredRun
		if json.Unmarshal(b, &e) == nil && e.Dir == dir {
			return &e
		}
	}
	t.Errorf("no entry for %s in the run registry %s", dir, reg)
	return nil
}

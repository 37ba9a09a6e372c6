//go:build unix

package browsertest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestBrowserRunsTableFollowsLog: while a run in the workbench's runs
// folder logs a step every 50 ms, the Runs table's step for it is within
// a second of the event log at 9 looks in 10 (3 s at worst), and it shows
// the end's status. The run is written by the test itself, so the page
// competes with no training kernel for the CPU (TestBrowserRegistryRun
// checks a run trained in a kernel cell).
func TestBrowserRunsTableFollowsLog(t *testing.T) {
	ctx, shots, w := browserSetup(t)
	p := openPage(t, ctx, shots, w)
	runDir := filepath.Join(w.runs, "lag-run")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(runDir, "events.jsonl")
	writeFile(t, logPath, `{"version":1,"kind":"start","time":"2026-01-01T00:00:00Z","epoch":0,"step":0,"batches":1000}`+"\n")
	p.tab("runs")
	row := `document.querySelector('.run-row[data-dir=` + js(runDir) + `]')`
	p.wait("the run in the Runs table", row, 10*time.Second)
	eval[bool](p, watchRowJS(runDir))

	const steps = 160 // 8 s
	var mu sync.Mutex
	written := make([]time.Time, 0, steps+1) // written[i]: when step i+1 (or, last, the end) was logged
	appendLine := func(line string) {
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, line)
		f.Close()
		mu.Lock()
		written = append(written, time.Now())
		mu.Unlock()
	}
	for step := 1; step <= steps; step++ {
		appendLine(fmt.Sprintf(`{"kind":"step","time":"2026-01-01T00:00:01Z","epoch":1,"step":%d,"metrics":{"loss":%g}}`, step, 1/float64(step)))
		time.Sleep(50 * time.Millisecond)
	}
	appendLine(`{"kind":"end","time":"2026-01-01T00:00:09Z","epoch":1,"step":160,"reason":"completed"}`)
	p.wait("the end in the Runs table", row+`.dataset.status === "completed"`, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	eval[bool](p, `clearInterval(window.kilnWatch.timer), true`)

	var looks []shownStep
	if err := json.Unmarshal([]byte(eval[string](p, `JSON.stringify(window.kilnWatch.steps)`)), &looks); err != nil {
		t.Fatal(err)
	}
	first := written[0]
	var behind []time.Duration
	for _, l := range looks {
		at := time.UnixMilli(l.At)
		if at.Before(first) {
			continue
		}
		// Behind by the time since the log first held a record past what
		// the row shows (a later step, or the end while it says running).
		d := time.Duration(0)
		switch {
		case l.Step < steps && written[l.Step].Before(at):
			d = at.Sub(written[l.Step])
		case l.Status != "completed" && written[steps].Before(at):
			d = at.Sub(written[steps])
		}
		behind = append(behind, d)
	}
	if len(behind) < 20 {
		t.Fatalf("only %d looks at the row while the run logged", len(behind))
	}
	sorted := slices.Clone(behind)
	slices.Sort(sorted)
	p90, worst := sorted[len(sorted)*9/10], sorted[len(sorted)-1]
	t.Logf("%d looks at the row: the Runs table was behind the log by %v at the median, %v at the 90th percentile, %v at worst",
		len(sorted), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)*9/10].Round(time.Millisecond), worst.Round(time.Millisecond))
	// The second, for 9 looks in 10; a 2-core machine running
	// other test packages (go test runs two at once) stalls the page now
	// and then, so the worst look may be later, never past 3 s.
	if p90 > time.Second || worst > 3*time.Second {
		for i, l := range looks[len(looks)-len(behind):] {
			if behind[i] > time.Second {
				t.Logf("at %s the row showed step %d, %s: %v behind", time.UnixMilli(l.At).Format("15:04:05.000"), l.Step, l.Status, behind[i].Round(time.Millisecond))
			}
		}
		t.Errorf("the Runs table fell behind the run's log by %v at the 90th percentile (want within 1 s), %v at worst (want within 3 s)", p90, worst)
	}
}

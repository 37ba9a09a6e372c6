//go:build unix

package browsertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// hundredTensorsCell defines t00…t99, t<i> of shape [i+1, 3] filled with i,
// and a model.
func hundredTensorsCell() string {
	var b strings.Builder
	b.WriteString("dev := tensor.CPU()\n")
	for i := range 100 {
		fmt.Fprintf(&b, "t%02d := tensor.Full(dev, %d, %d, 3)\n", i, i, i+1)
	}
	b.WriteString("net := nn.NewLinear(dev, 4, 2)\nxs := []int{1, 2, 3}\n_, _ = net, xs\n")
	return b.String()
}

// openVariablesJS opens the Variables tab and resolves, once its table
// shows 100 tensor rows with shapes, to the milliseconds that took (or -1
// after 10 s).
const openVariablesJS = `new Promise(resolve => {
	const start = performance.now();
	document.querySelector('.tab[data-tab="variables"]').click();
	const ready = () => {
		const rows = Array.from(document.querySelectorAll('#variables-list tr.var-row[data-kind="tensor"]'));
		return rows.length === 100 && rows.every(r => /^\[\d+, 3\]$/.test(r.querySelector(".var-shape").textContent));
	};
	const poll = () => {
		const ms = performance.now() - start;
		if (ready()) return resolve(ms);
		if (ms > 10000) return resolve(-1);
		setTimeout(poll, 5);
	};
	poll();
})`

// TestBrowserVariablesWhileCellRuns checks that with 100 tensors defined
// and a long cell running, the Variables tab shows the 100 rows with their
// shapes within 500 ms of opening, marked as running, without raw Go
// dumps; that expanding a row says the kernel is busy; and that after the
// cell, rows expand into values and a module's parameter table.
func TestBrowserVariablesWhileCellRuns(t *testing.T) {
	ctx, shots, w := browserSetup(t)
	p := openPage(t, ctx, shots, w)
	p.tab("notebook")
	eval[bool](p, `(s => (s.value = "notebooks/scratch.ipynb", document.querySelector("#nb-open").click(), true))(document.querySelector("#nb-select"))`)
	p.wait("the scratch notebook", `document.querySelector("#cells").dataset.path === "notebooks/scratch.ipynb"`, 30*time.Second)
	if c := p.run(hundredTensorsCell(), 120*time.Second); c.State != "ok" {
		t.Fatalf("the tensors cell failed: %s", c.Text)
	}

	// A long cell, left running.
	id := eval[string](p, `workbench.notebook.addCell("code", undefined, "time.Sleep(60 * time.Second)").id`)
	sel := `document.querySelector('[data-cell-id=` + js(id) + `]')`
	eval[bool](p, sel+`.querySelector(".cell-run").click(), true`)
	p.wait("the long cell to run", sel+`.dataset.state === "running"`, 30*time.Second)
	p.wait("a busy kernel", `document.querySelector("#kernel-status").dataset.status === "busy"`, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // well inside the sleep

	// Best of three openings (the machine running the test may be loaded):
	// each from the Notebook tab with the table emptied.
	best := -1.0
	for try := 0; try < 3 && (best < 0 || best > 500); try++ {
		p.tab("notebook")
		eval[bool](p, `document.querySelector("#variables-list").replaceChildren(), true`)
		ms := eval[float64](p, openVariablesJS, chromedp.EvalAwaitPromise)
		if ms < 0 {
			t.Fatalf("the Variables tab did not show 100 tensors with shapes in 10 s; it shows %q", eval[string](p, `document.querySelector("#variables-list").innerText.slice(0, 500)`))
		}
		t.Logf("Variables tab: 100 tensor rows with shapes %.0f ms after opening, while a cell runs (variables.list answered in %s ms, rendered in %s ms)",
			ms, eval[string](p, `document.querySelector("#variables-list").dataset.ms`), eval[string](p, `document.querySelector("#variables-list").dataset.renderMs`))
		if best < 0 || ms < best {
			best = ms
		}
	}
	if best > 500 {
		t.Errorf("the Variables tab took %.0f ms (best of 3) to show 100 tensors while a cell runs, want under 500 ms", best)
	}
	p.wait("the running indicator", `document.querySelector("#variables-state").dataset.state === "stale"`, 5*time.Second)
	state := eval[string](p, `document.querySelector("#variables-state").textContent`)
	if !strings.Contains(state, "running cell") || !strings.Contains(state, "as of cell") {
		t.Errorf("the Variables state says %q, want running cell N… as of cell M", state)
	}
	text := eval[string](p, `document.querySelector("#variables-list").innerText`)
	if strings.Contains(text, "&{0x") || strings.Contains(text, "{0x") {
		t.Errorf("the Variables table shows a raw Go dump:\n%s", text)
	}
	row := eval[string](p, `document.querySelector('#variables-list tr.var-row[data-name="t42"]').innerText`)
	for _, want := range []string{"*tensor.Tensor", "[43, 3]", "float32", "cpu", "42, 42, 42"} {
		if !strings.Contains(row, want) {
			t.Errorf("t42's row %q lacks %q", row, want)
		}
	}
	if net := eval[string](p, `document.querySelector('#variables-list tr.var-row[data-name="net"] .var-params').textContent`); net != "10" {
		t.Errorf("net's parameters show %q, want 10", net)
	}
	// Expanding needs the interpreter: the panel says the kernel is busy.
	eval[bool](p, `document.querySelector('#variables-list tr.var-row[data-name="t42"]').click(), true`)
	p.wait("the busy note", `(d => d && /busy/.test(d.textContent))(document.querySelector('#variables-list tr.var-detail[data-name="t42"] .var-busy'))`, 5*time.Second)
	p.screenshot("variables-running")

	// After the cell (interrupted), the list is live and rows expand.
	eval[bool](p, `workbench.notebook.interrupt(), true`)
	p.wait("the long cell to end", sel+`.dataset.state !== "running"`, 30*time.Second)
	p.tab("notebook")
	p.tab("variables")
	p.wait("the live list", `document.querySelector("#variables-state").dataset.state === "live"`, 30*time.Second)
	p.wait("t42's values", `(d => d && d.textContent.includes("42."))(document.querySelector('#variables-list tr.var-detail[data-name="t42"] .var-values'))`, 30*time.Second)
	eval[bool](p, `document.querySelector('#variables-list tr.var-row[data-name="net"]').click(), true`)
	p.wait("net's parameter table", `document.querySelectorAll('#variables-list tr.var-detail[data-name="net"] tr.var-param').length === 2`, 30*time.Second)
	p.screenshot("variables")
}

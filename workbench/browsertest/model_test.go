//go:build unix

package browsertest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/frontend"
)

// TestBrowserModelPicker checks that the Model tab offers the session's
// modules (and nothing else) to pick, and that picking one shows its tree.
func TestBrowserModelPicker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test builds kiln and runs a kernel")
	}
	if !frontend.Built() {
		t.Skip("the workbench UI is not built (frontend/web/app missing: run make assets): browser test skipped")
	}
	ctx := newTab(t)
	shots := filepath.Join(repoRoot(t), "bin", "screenshots")
	if d := os.Getenv("KILN_SCREENSHOTS"); d != "" {
		shots = d
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	w := startWorkbench(t)
	p := &page{t: t, ctx: ctx, shot: shots}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(w.url)); err != nil {
		t.Fatal(err)
	}
	p.wait("the page to start", `document.body.dataset.ready === "true"`, 60*time.Second)
	p.wait("an idle kernel", `document.querySelector("#kernel-status").dataset.status === "idle"`, 120*time.Second)

	// Before any cell: no module to pick.
	p.tab("model")
	p.wait("the empty module list", `document.querySelector("#model-name").dataset.count === "0" && !document.querySelector("#model-none").hidden`, 60*time.Second)

	p.tab("notebook")
	eval[bool](p, `(s => (s.value = "notebooks/scratch.ipynb", document.querySelector("#nb-open").click(), true))(document.querySelector("#nb-select"))`)
	p.wait("the scratch notebook", `document.querySelector("#cells").dataset.path === "notebooks/scratch.ipynb"`, 30*time.Second)
	if c := p.run(modelCell+"\nanswer := 42\n_ = answer", 60*time.Second); c.State != "ok" {
		t.Fatalf("the model cell failed: %s", c.Text)
	}

	p.tab("model")
	p.wait("net offered", `document.querySelector('#model-name option[value="net"]')`, 60*time.Second)
	offered := eval[[]string](p, `Array.from(document.querySelectorAll("#model-name option.model-option")).map(o => o.value)`)
	if len(offered) != 1 || offered[0] != "net" {
		t.Errorf("the Model tab offers %q, want only the module net (not ad, answer)", offered)
	}
	eval[bool](p, `(s => (s.value = "net", s.dispatchEvent(new Event("change")), true))(document.querySelector("#model-name"))`)
	p.wait("net's module tree", `document.querySelector("#model-tree").dataset.name === "net" && document.querySelector("#model-tree").textContent.includes("Linear")`, 60*time.Second)
	p.screenshot("model-picker")
}

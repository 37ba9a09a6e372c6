//go:build unix

package browsertest

import (
	"testing"
	"time"
)

// TestBrowserModelPicker checks that the Model tab offers the session's
// modules (and nothing else) to pick, and that picking one shows its tree.
func TestBrowserModelPicker(t *testing.T) {
	ctx, shots, w := browserSetup(t)
	p := openPage(t, ctx, shots, w)

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

//go:build unix

package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserFileBrowser checks that the workbench opens on its root's
// file browser, and that a notebook and a run listed there open in their
// panels.
func TestBrowserFileBrowser(t *testing.T) {
	ctx, shots, w := browserSetup(t)
	writeFile(t, filepath.Join(w.root, "hello.ipynb"), `{"cells": [{"cell_type": "markdown", "id": "c1", "metadata": {}, "source": ["# hello from the file browser"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`)
	run := filepath.Join(w.runs, "browse-run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(run, "events.jsonl"), `{"version":1,"kind":"start","time":"2026-01-01T00:00:00Z","epoch":0,"step":0,"batches":10}`+"\n")
	writeFile(t, filepath.Join(w.root, "tiny.safetensors"), "\x08\x00\x00\x00\x00\x00\x00\x00{}      ")

	p := &page{t: t, ctx: ctx, shot: shots}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(w.url)); err != nil {
		t.Fatal(err)
	}
	p.wait("the page to start", `document.body.dataset.ready === "true"`, 60*time.Second)

	// The first page is the file browser of the root.
	if tab := eval[string](p, `document.body.dataset.tab`); tab != "files" {
		t.Fatalf("the workbench opens on %q, want the files tab", tab)
	}
	row := func(path string) string { return `document.querySelector('.file-row[data-path=` + js(path) + `]')` }
	// open clicks a row's open button once the row is listed, in one
	// evaluation: a refresh of the folder between a wait and a separate
	// click replaces the rows (seen under the race detector).
	open := func(what, path string) {
		p.wait(what, `(() => { const r = `+row(path)+`; if (!r) return false; r.querySelector(".file-open").click(); return true })()`, 30*time.Second)
	}
	p.wait("the root's files", row("hello.ipynb")+` && `+row("runs")+` && `+row("notebooks"), 30*time.Second)
	for path, kind := range map[string]string{"hello.ipynb": "notebook", "runs": "dir", "notebooks": "dir", "tiny.safetensors": "model"} {
		if got := eval[string](p, row(path)+`.dataset.kind`); got != kind {
			t.Errorf("%s is listed as %q, want %q", path, got, kind)
		}
	}
	if size := eval[string](p, row("tiny.safetensors")+`.querySelector(".file-size").textContent`); size != "16 B" {
		t.Errorf("tiny.safetensors size %q, want 16 B", size)
	}
	recent := eval[string](p, `document.querySelector("#files-recent").innerText`)
	if !strings.Contains(recent, "hello.ipynb") {
		t.Errorf("recent notebooks %q lack hello.ipynb", recent)
	}
	p.screenshot("files")

	// A folder opens in place; the run in it opens its run view.
	open("the runs folder listed", "runs")
	p.wait("the runs folder", row("runs/browse-run"), 30*time.Second)
	if got := eval[string](p, row("runs/browse-run")+`.dataset.kind`); got != "run" {
		t.Fatalf("runs/browse-run is listed as %q, want run", got)
	}
	open("the run listed", "runs/browse-run")
	p.wait("the run view", `document.body.dataset.tab === "runs" && document.querySelector("#run-view").dataset.dirs.endsWith("browse-run")`, 30*time.Second)

	// Back to the root by its breadcrumb; the notebook opens in the notebook tab.
	p.tab("files")
	eval[bool](p, `document.querySelector('.crumb[data-path=""]').click(), true`)
	open("the root again", "hello.ipynb")
	p.wait("the notebook", `document.body.dataset.tab === "notebook" && document.querySelector("#cells").dataset.path === "hello.ipynb"`, 30*time.Second)

	// A model file shows its details.
	p.tab("files")
	open("the root again", "tiny.safetensors")
	p.wait("the model file's details", `!document.querySelector("#files-detail").hidden && document.querySelector("#files-detail").innerText.includes("kiln inspect tiny.safetensors")`, 10*time.Second)
}

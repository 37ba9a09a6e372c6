//go:build unix

package frontend

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// exporterShimJS stands for the desktop app's Exporter binding: it records
// each ExportCheckpoint call and answers as the Go side does, "" when the
// save dialog is cancelled (window.cancelNext) and the engine's result
// otherwise.
const exporterShimJS = `window.go.main.Exporter = {ExportCheckpoint: async (path, format, ggufType) => {
  window.exportCalls = (window.exportCalls || []).concat([[path, format, ggufType]]);
  if (window.cancelNext) { window.cancelNext = false; return ""; }
  return JSON.stringify({out: "/home/u/saved." + format, bytes: 2048, format});
}};`

// TestUIDesktopExportUsesSaveDialog checks the run view's checkpoint export
// in the desktop app: the button asks the Exporter binding (the native
// save dialog) with the chosen format and GGUF type, says where the file
// went, says nothing was written when the dialog is cancelled, disables a
// damaged checkpoint, and marks ONNX unavailable for a run without a graph.
func TestUIDesktopExportUsesSaveDialog(t *testing.T) {
	ctx, _ := openDesktopPage(t, wailsShimJS+"\n"+exporterShimJS, "/")
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string]("String("+js+")", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	wait := func(what, js string) { t.Helper(); waitFor(t, ctx, what, js) }
	wait("the page", `document.body.dataset.ready === "true"`)
	if got := eval(`document.body.dataset.transport`); got != "wails" {
		t.Fatalf("transport %q, want wails", got)
	}
	eval(`(async () => { workbench.show("runs"); await workbench.runs.refresh(); await workbench.runs.show(["/runs/r1"]); return 1 })()`)
	wait("the run's checkpoints", `document.querySelectorAll("#run-checkpoints .run-ckpt").length === 2`)

	first := `document.querySelector('#run-checkpoints .run-ckpt[data-path="/runs/r1/checkpoints/epoch-0001-step-000020"]')`
	damaged := `document.querySelector('#run-checkpoints .run-ckpt[data-path="/runs/r1/checkpoints/epoch-0002-step-000040"]')`
	if got := eval(first + `.querySelector(".ckpt-download").textContent`); got != "Save as…" {
		t.Errorf("the desktop's export button reads %q, want Save as…", got)
	}
	if got := eval(damaged + `.querySelector(".ckpt-download").disabled`); got != "true" {
		t.Error("a damaged checkpoint can be exported")
	}
	if got := eval(first + `.querySelector('option[value="onnx"]').disabled`); got != "true" {
		t.Error("ONNX is offered for a run whose checkpoints list no graph")
	}
	if got := eval(first + `.querySelector('option[value="onnx"]').textContent`); !strings.Contains(got, "no graph recorded") {
		t.Errorf("the ONNX entry reads %q", got)
	}

	click := func(choice string) {
		t.Helper()
		eval(`(r => (r.querySelector(".ckpt-format").value = "` + choice + `", r.querySelector(".ckpt-download").click(), 1))(` + first + `)`)
	}
	note := first + `.querySelector(".ckpt-export-note")`
	click("gguf:q8_0")
	wait("the export", note+`.dataset.state === "done"`)
	if got := eval(note + `.textContent`); got != "exported 2.0 KiB to /home/u/saved.gguf" {
		t.Errorf("after saving: %q", got)
	}
	if got := eval(`JSON.stringify(window.exportCalls)`); got != `[["/runs/r1/checkpoints/epoch-0001-step-000020","gguf","q8_0"]]` {
		t.Errorf("Exporter.ExportCheckpoint got %s", got)
	}
	eval(`window.cancelNext = true`)
	click("safetensors")
	wait("the cancelled export", note+`.dataset.state === "cancelled"`)
	if got := eval(`window.exportCalls.length + " " + window.exportCalls[1][1]`); got != "2 safetensors" {
		t.Errorf("calls after the cancelled one: %s", got)
	}
	if got := eval(note + `.textContent`); got != "" {
		t.Errorf("a cancelled save says %q", got)
	}
}

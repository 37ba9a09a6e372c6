//go:build unix

package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kiln-ml/kiln/onnx"
)

// writeONNX writes a one-node model (x [1 4] → op → y) at path.
func writeONNX(t *testing.T, path, op string) {
	t.Helper()
	x := &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeFloat, HasShape: true,
		Shape: []onnx.Dim{{Value: 1, HasValue: true}, {Value: 4, HasValue: true}}}
	m := &onnx.ModelProto{IRVersion: 8, ProducerName: "kiln-test", OpsetImports: []onnx.OperatorSetID{{Version: 13}},
		Graph: &onnx.GraphProto{Name: "g",
			Nodes:   []*onnx.NodeProto{{OpType: op, Name: "n1", Inputs: []string{"x"}, Outputs: []string{"y"}}},
			Inputs:  []*onnx.ValueInfoProto{{Name: "x", Type: x}},
			Outputs: []*onnx.ValueInfoProto{{Name: "y"}}}}
	if err := os.WriteFile(path, onnx.Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserFileInspect checks that the workbench's first page lists the
// root's files, and that clicking a model file shows the report `kiln
// inspect` prints: for ONNX with onnx.Load's verdict (accepted, refused),
// for safetensors its tensors.
func TestBrowserFileInspect(t *testing.T) {
	ctx, shots, w := browserSetup(t)
	writeONNX(t, filepath.Join(w.root, "relu.onnx"), "Relu")
	writeONNX(t, filepath.Join(w.root, "mystery.onnx"), "NoSuchOperator")
	// One F32 tensor "fc.weight" of shape [2 1]: an 8-byte header length,
	// the JSON header padded to 8 bytes, then the 8 bytes of data.
	header := `{"fc.weight":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]}}`
	for len(header)%8 != 0 {
		header += " "
	}
	st := []byte{byte(len(header)), 0, 0, 0, 0, 0, 0, 0}
	st = append(append(st, header...), 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40) // 1, 2
	writeFile(t, filepath.Join(w.root, "weights.safetensors"), string(st))

	p := &page{t: t, ctx: ctx, shot: shots}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(w.url)); err != nil {
		t.Fatal(err)
	}
	p.wait("the page to start", `document.body.dataset.ready === "true"`, 60*time.Second)
	if tab := eval[string](p, `document.body.dataset.tab`); tab != "files" {
		t.Fatalf("the workbench opens on %q, want the files tab", tab)
	}
	row := func(path string) string { return `document.querySelector('.file-row[data-path=` + js(path) + `]')` }
	p.wait("the root's files", row("relu.onnx")+` && `+row("weights.safetensors")+` && `+row("runs")+` && `+row("notebooks"), 30*time.Second)
	listed := eval[string](p, `Array.from(document.querySelectorAll(".file-row")).map(r => r.dataset.path + "=" + r.dataset.kind).join(" ")`)
	for _, want := range []string{"notebooks=dir", "runs=dir", "relu.onnx=model", "mystery.onnx=model", "weights.safetensors=model"} {
		if !strings.Contains(" "+listed+" ", " "+want+" ") {
			t.Errorf("the first page lists %q, want %s among them", listed, want)
		}
	}

	detail := `document.querySelector("#files-detail")`
	open := func(path string) string {
		t.Helper()
		eval[bool](p, row(path)+`.querySelector(".file-open").click(), true`)
		p.wait("the report of "+path, detail+`.dataset.path === `+js(path)+` && `+detail+`.dataset.state === "report"`, 30*time.Second)
		return eval[string](p, `document.querySelector("#files-report").textContent`)
	}

	report := open("relu.onnx")
	for _, s := range []string{"relu.onnx: ONNX model", "opsets: ai.onnx 13", "x: FLOAT[1 4]", "Relu", "Load accepts it."} {
		if !strings.Contains(report, s) {
			t.Errorf("relu.onnx's report lacks %q:\n%s", s, report)
		}
	}
	if v := eval[string](p, `document.querySelector("#files-verdict").textContent`); v != "Load accepts it." || eval[string](p, detail+`.dataset.loads`) != "true" {
		t.Errorf("relu.onnx's verdict %q (loads %s), want Load accepts it.", v, eval[string](p, detail+`.dataset.loads`))
	}
	p.screenshot("files-onnx")

	report = open("mystery.onnx")
	v := eval[string](p, `document.querySelector("#files-verdict").textContent`)
	if !strings.HasPrefix(v, "Load refuses it: ") || !strings.Contains(v, "NoSuchOperator") || eval[string](p, detail+`.dataset.loads`) != "false" {
		t.Errorf("mystery.onnx's verdict %q, want Load's refusal naming NoSuchOperator", v)
	}
	if !strings.Contains(report, "(not supported by Kiln)") {
		t.Errorf("mystery.onnx's report does not mark its operator:\n%s", report)
	}

	report = open("weights.safetensors")
	for _, s := range []string{"file      weights.safetensors (80 B)", "tensors   1, 2 elements, 8 B of data", "fc.weight", "F32", "[2 1]"} {
		if !strings.Contains(report, s) {
			t.Errorf("weights.safetensors's report lacks %q:\n%s", s, report)
		}
	}
	if n := eval[int](p, `document.querySelectorAll("#files-verdict").length`); n != 0 {
		t.Errorf("a safetensors file shows a Load verdict")
	}
	p.screenshot("files-safetensors")
}

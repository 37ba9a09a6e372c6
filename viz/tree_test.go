package viz

import (
	"encoding/xml"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

func TestModuleTree(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		tr := ModuleTree(mnistCNN(dev))
		if tr.Total() != 16*9+16+32*16*9+32+8000+10 { // 12,810
			t.Errorf("total %d", tr.Total())
		}
		html := tr.HTML()
		// Well-formed (the fragment is XHTML-compatible), one <details> per
		// module with children or parameters, the leaves as plain rows.
		if err := xml.Unmarshal([]byte(html), new(struct{})); err != nil {
			t.Fatalf("HTML is not well-formed: %v\n%s", err, html)
		}
		if n := strings.Count(html, "<details"); n != 4 { // the model, two convs, the linear
			t.Errorf("%d <details>", n)
		}
		for _, want := range []string{"nn.Sequential", "<b>0</b>", "nn.Conv2d", "nn.MaxPool2d", "160 params", "no parameters",
			"weight", "[16 1 3 3]", "Total: 12,810"} {
			if !strings.Contains(html, want) {
				t.Errorf("HTML lacks %q", want)
			}
		}
		if strings.Contains(html, "<script") {
			t.Error("the tree has a script")
		}
		if !strings.Contains(tr.MIME()["text/plain"], "Total params: 12,810") {
			t.Errorf("text:\n%s", tr.MIME()["text/plain"])
		}
		if strings.Count(html, "<details open") != 4 { // depth 0 and 1 open by default
			t.Errorf("open: %d", strings.Count(html, "<details open"))
		}
		tr.Open = 1
		if n := strings.Count(tr.HTML(), "<details open"); n != 1 {
			t.Errorf("Open 1: %d open", n)
		}
	})
}

func TestModuleTreeWithOutputShapes(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		tr, err := ModuleTreeWith(mnistCNN(dev), tensor.Randn(dev, 2, 1, 28, 28))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]int{"": {2, 10}, "0": {2, 16, 26, 26}, "1": {2, 16, 26, 26}, "2": {2, 16, 13, 13},
			"3": {2, 32, 11, 11}, "5": {2, 32, 5, 5}, "6": {2, 800}, "7": {2, 10}}
		got := map[string][]int{"": tr.Root.OutputShape}
		for _, m := range tr.Root.Modules {
			got[m.Path] = m.OutputShape
		}
		for p, s := range want {
			if !slices.Equal(got[p], s) {
				t.Errorf("module %q: output %v, want %v", p, got[p], s)
			}
		}
		if !strings.Contains(tr.HTML(), "→ [2 16 13 13]") || !strings.Contains(tr.String(), "Output shape") {
			t.Error("output shapes not shown")
		}
		enc, err := ModuleTreeWith(encoder(dev), tensor.Randn(dev, 5, 2, 32))
		if err != nil {
			t.Fatal(err)
		}
		l0 := enc.Root.Modules[0].Modules[0] // layers.0
		if l0.Path != "layers.0" || !slices.Equal(l0.OutputShape, []int{5, 2, 32}) {
			t.Errorf("%s: %v", l0.Path, l0.OutputShape)
		}
		for _, m := range l0.Modules {
			want := []int{5, 2, 32}
			switch m.Name {
			case "self_attn":
			case "linear1":
				want = []int{5, 2, 64}
			case "out_proj":
				want = []int{2, 5, 32}
			case "dropout", "dropout1", "dropout2":
				want = nil // identities in evaluation mode: no op
			}
			if !slices.Equal(m.OutputShape, want) {
				t.Errorf("%s: %v, want %v", m.Path, m.OutputShape, want)
			}
		}
		if _, err := ModuleTreeWith(mnistCNN(dev), tensor.Randn(dev, 2, 3, 28, 28)); err == nil {
			t.Error("a bad input traced")
		}
	})
}

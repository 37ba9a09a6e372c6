package workbench

import (
	"testing"
)

// FuzzParseNotebook feeds arbitrary bytes to the notebook reader: it must
// return an error or a notebook, never panic, and a notebook it accepts
// must survive being written and read again with the same cells.
func FuzzParseNotebook(f *testing.F) {
	f.Add([]byte(`{"cells":[{"cell_type":"code","source":["x := 1\n","x"],"outputs":[]}],"metadata":{},"nbformat":4,"nbformat_minor":4}`))
	f.Add([]byte(`{"cells":[],"nbformat":4}`))
	f.Add([]byte(`{"cells":[{"cell_type":"markdown","source":"# hi"}],"nbformat":3}`))
	f.Add([]byte(`{"cells":[null],"nbformat":4}`))
	f.Add([]byte(`{"cells":[{"cell_type":"code","source":[1]}],"nbformat":4}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		top, cells, hadIDs, err := parseNotebook(b)
		if err != nil {
			return
		}
		nb := &notebook{top: top, cells: cells, hadIDs: hadIDs}
		out, err := nb.encode()
		if err != nil {
			t.Fatalf("encode of an accepted notebook: %v", err)
		}
		_, again, _, err := parseNotebook(out)
		if err != nil {
			t.Fatalf("re-reading the written notebook: %v\n%s", err, out)
		}
		if len(again) != len(cells) {
			t.Fatalf("%d cells written, %d read back", len(cells), len(again))
		}
		for i := range cells {
			a, _ := sourceText(cells[i]["source"])
			b, _ := sourceText(again[i]["source"])
			if a != b {
				t.Fatalf("cell %d source %q became %q", i, a, b)
			}
		}
	})
}

package display_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kiln-ml/kiln/kernel/display"
)

var pngHeader = []byte("\x89PNG\r\n\x1a\n0000")

func TestConstructors(t *testing.T) {
	tests := []struct {
		name string
		got  display.Data
		want display.MIMEMap
	}{
		{"HTML", display.HTML("<b>x</b>"), display.MIMEMap{"text/html": "<b>x</b>", "text/plain": "<b>x</b>"}},
		{"Markdown", display.Markdown("*x*"), display.MIMEMap{"text/markdown": "*x*", "text/plain": "*x*"}},
		{"SVG", display.SVG("<svg/>"), display.MIMEMap{"image/svg+xml": "<svg/>", "text/plain": "<svg/>"}},
		{"PNG keeps the bytes", display.PNG([]byte{1, 2}), display.MIMEMap{"image/png": []byte{1, 2}, "text/plain": "image/png (2 bytes)"}},
		{"JPEG", display.JPEG([]byte{1}), display.MIMEMap{"image/jpeg": []byte{1}, "text/plain": "image/jpeg (1 bytes)"}},
		{"PDF", display.PDF([]byte{1}), display.MIMEMap{"application/pdf": []byte{1}, "text/plain": "application/pdf (1 bytes)"}},
		{"JavaScript", display.JavaScript("f()"), display.MIMEMap{"application/javascript": "f()", "text/plain": "f()"}},
		{"Javascript spelling", display.Javascript("f()"), display.MIMEMap{"application/javascript": "f()", "text/plain": "f()"}},
		{"Latex is inline math", display.Latex("x^2"), display.MIMEMap{"text/latex": "$x^2$", "text/plain": "x^2"}},
		{"Latex strips given dollars", display.Latex("$x^2$"), display.MIMEMap{"text/latex": "$x^2$", "text/plain": "$x^2$"}},
		{"Math is display math", display.Math("x^2"), display.MIMEMap{"text/latex": "$$x^2$$", "text/plain": "x^2"}},
		{"MakeData3", display.MakeData3("text/csv", "a table", "a,b"), display.MIMEMap{"text/csv": "a,b", "text/plain": "a table"}},
		{"MakeData of text", display.MakeData("text/plain", "t"), display.MIMEMap{"text/plain": "t"}},
		{"Any with a MIME type", display.Any("text/csv", "a,b"), display.MIMEMap{"text/csv": "a,b", "text/plain": "a,b"}},
		{"Any detects PNG", display.Any("", pngHeader), display.MIMEMap{"image/png": pngHeader, "text/plain": "image/png (12 bytes)"}},
		{"Auto reads a reader", display.Auto(strings.NewReader("<html><body>hi</body></html>")), display.MIMEMap{"text/html": "<html><body>hi</body></html>", "text/plain": "<html><body>hi</body></html>"}},
		{"Any of a string without type is text", display.Any("", "plain"), display.MIMEMap{"text/plain": "plain"}},
		{"Any renders rich values", display.Any("", page{"t"}), display.MIMEMap{"text/html": "<h1>t</h1>", "text/plain": "{t}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got.Data, tc.want) {
				t.Errorf("data = %#v, want %#v", tc.got.Data, tc.want)
			}
		})
	}
	t.Run("MIME keeps data and metadata", func(t *testing.T) {
		d := display.MIME(display.MIMEMap{"text/html": "h"}, display.MIMEMap{"isolated": true})
		if d.Data["text/html"] != "h" || d.Metadata["isolated"] != true {
			t.Errorf("MIME = %#v", d)
		}
	})
	t.Run("Any panics on types it cannot render", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "cannot render int") {
				t.Errorf("recover() = %v, want a panic naming int", r)
			}
		}()
		display.Any("", 3)
	})
}

func TestJSON(t *testing.T) {
	obj := display.JSON(map[string]any{"a": 1})
	if _, ok := obj.Data["application/json"].(map[string]any); !ok {
		t.Errorf("JSON(map) keeps %T, want the map", obj.Data["application/json"])
	}
	if obj.Data["text/plain"] != "{\n  \"a\": 1\n}" {
		t.Errorf("text = %q", obj.Data["text/plain"])
	}
	text := display.JSON(`{"b": [1, 2]}`)
	raw, ok := text.Data["application/json"].(json.RawMessage)
	if !ok {
		t.Fatalf("JSON(string) gives %T, want json.RawMessage", text.Data["application/json"])
	}
	// Sent as a JSON object, not as a string.
	b, _ := json.Marshal(text.Data)
	if !bytes.Contains(b, []byte(`"application/json":{"b":[1,2]}`)) {
		t.Errorf("marshalled bundle %s embeds %s as a string", b, raw)
	}
	bad := display.JSON("{nope")
	if _, ok := bad.Data["application/json"]; ok || !strings.Contains(fmt.Sprint(bad.Data["text/plain"]), "invalid JSON") {
		t.Errorf("JSON of invalid text = %#v", bad.Data)
	}
	unmarshalable := display.JSON(map[string]any{"f": func() {}})
	if !strings.Contains(fmt.Sprint(unmarshalable.Data["text/plain"]), "display.JSON") {
		t.Errorf("JSON of a func = %#v", unmarshalable.Data)
	}
}

func TestImageAndFile(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.White)
	d := display.Image(img)
	b, ok := d.Data["image/png"].([]byte)
	if !ok || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("Image data = %T", d.Data["image/png"])
	}
	meta := d.Metadata["image/png"].(display.MIMEMap)
	if meta["width"] != 3 || meta["height"] != 2 {
		t.Errorf("metadata = %v", meta)
	}
	if r := display.Render(img); !bytes.Equal(r.Data["image/png"].([]byte), b) {
		t.Error("Render(image.Image) differs from Image")
	}

	path := filepath.Join(t.TempDir(), "x.png")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if f := display.File("", path); !bytes.Equal(f.Data["image/png"].([]byte), b) {
		t.Errorf("File = %#v", f.Data)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("File of a missing file did not panic")
		}
	}()
	display.File("", filepath.Join(t.TempDir(), "missing"))
}

type page struct{ title string }

func (p page) HTML() string { return "<h1>" + p.title + "</h1>" }

type chart struct{}

func (chart) MIME() map[string]string {
	return map[string]string{"image/svg+xml": "<svg/>", "text/plain": "a chart"}
}
func (chart) Markdown() string { return "**chart**" }

type named int

func (n named) String() string { return fmt.Sprintf("named(%d)", int(n)) }

type failure struct{}

func (failure) Error() string { return "it failed" }

type renderer struct{}

func (renderer) Render() display.Data {
	return display.Data{Data: display.MIMEMap{"text/html": "r"}, Metadata: display.MIMEMap{"k": "v"}}
}

// wrapper mimics the interface wrappers yaegi passes to compiled code.
type _wrapper struct {
	IValue any
	WHTML  func() string
}

func (w _wrapper) HTML() string { return w.WHTML() }

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want display.MIMEMap
	}{
		{"nil", nil, nil},
		{"plain value", 42, display.MIMEMap{"text/plain": "42"}},
		{"Stringer", named(3), display.MIMEMap{"text/plain": "named(3)"}},
		{"error", failure{}, display.MIMEMap{"text/plain": "it failed"}},
		{"HTMLer", page{"p"}, display.MIMEMap{"text/html": "<h1>p</h1>", "text/plain": "{p}"}},
		{"MIMEr with its own text and a second interface", chart{}, display.MIMEMap{"image/svg+xml": "<svg/>", "text/markdown": "**chart**", "text/plain": "a chart"}},
		{"Renderer", renderer{}, display.MIMEMap{"text/html": "r", "text/plain": "{}"}},
		{"Data", display.HTML("h"), display.MIMEMap{"text/html": "h", "text/plain": "h"}},
		{"Data without text", display.Data{Data: display.MIMEMap{"text/html": "h"}}, display.MIMEMap{"text/html": "h", "text/plain": ""}},
		{"interpreter wrapper prints its value", _wrapper{IValue: page{"w"}, WHTML: func() string { return "<i>w</i>" }}, display.MIMEMap{"text/html": "<i>w</i>", "text/plain": "{w}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := display.Render(tc.v)
			if !reflect.DeepEqual(got.Data, tc.want) {
				t.Errorf("Render(%#v) = %#v, want %#v", tc.v, got.Data, tc.want)
			}
		})
	}
	if r := display.Render(renderer{}); r.Metadata["k"] != "v" {
		t.Errorf("Render lost the Renderer's metadata: %#v", r)
	}
	if display.IsRich(42) || display.IsRich(nil) || !display.IsRich(page{}) || !display.IsRich(display.HTML("")) {
		t.Error("IsRich misclassifies")
	}
	// Render must not share maps with a Data it was given.
	d := display.HTML("h")
	r := display.Render(d)
	r.Data["x"] = 1
	if _, ok := d.Data["x"]; ok {
		t.Error("Render returned the caller's map")
	}
}

// collect is a sink that records messages.
type collect struct {
	mu   sync.Mutex
	msgs []display.Message
}

func (c *collect) Display(m display.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
}

func TestSink(t *testing.T) {
	prev := display.SetSink(nil)
	defer display.SetSink(prev)

	if err := display.Display(display.HTML("x")); !errors.Is(err, display.ErrNoSink) {
		t.Errorf("Display without a sink: %v", err)
	}
	if err := display.Clear(false); !errors.Is(err, display.ErrNoSink) {
		t.Errorf("Clear without a sink: %v", err)
	}
	if err := display.New(display.HTML("x")).Update(display.HTML("y")); !errors.Is(err, display.ErrNoSink) {
		t.Errorf("Update without a sink: %v", err)
	}

	var c collect
	if old := display.SetSink(&c); old != nil {
		t.Errorf("SetSink returned %v, want nil", old)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(display.Display(display.Data{Data: display.MIMEMap{"text/html": "no text"}}))
	h := display.New(display.Markdown("v1"))
	must(h.Update(display.Markdown("v2")))
	must(h.Display(display.Markdown("v2 again")))
	must(display.Clear(true))
	if len(c.msgs) != 5 {
		t.Fatalf("%d messages, want 5", len(c.msgs))
	}
	if c.msgs[0].Kind != display.DisplayData || c.msgs[0].Data.Data["text/plain"] != "" || c.msgs[0].DisplayID() != "" {
		t.Errorf("Display message = %#v (wants an empty text/plain and no id)", c.msgs[0])
	}
	id := h.ID()
	if len(id) != 32 || c.msgs[1].DisplayID() != id || c.msgs[2].DisplayID() != id || c.msgs[3].DisplayID() != id {
		t.Errorf("display ids %q %q %q, handle %q", c.msgs[1].DisplayID(), c.msgs[2].DisplayID(), c.msgs[3].DisplayID(), id)
	}
	if c.msgs[2].Kind != display.UpdateDisplayData || c.msgs[3].Kind != display.DisplayData {
		t.Errorf("kinds %v %v", c.msgs[2].Kind, c.msgs[3].Kind)
	}
	if c.msgs[4].Kind != display.ClearOutput || !c.msgs[4].Wait {
		t.Errorf("Clear message = %#v", c.msgs[4])
	}
	if display.New(display.HTML("a")).ID() == id {
		t.Error("two handles share a display_id")
	}
	if got := fmt.Sprint(display.DisplayData, display.UpdateDisplayData, display.ClearOutput); got != "display_data update_display_data clear_output" {
		t.Errorf("kind names = %s", got)
	}

	// Safe from many goroutines at once (go test -race).
	c.msgs = nil
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(2)
		go func() { defer wg.Done(); _ = display.Display(display.HTML(fmt.Sprint(i))) }()
		go func() { defer wg.Done(); display.SetSink(&c) }()
	}
	wg.Wait()
	if len(c.msgs) != 50 {
		t.Errorf("%d messages from 50 goroutines", len(c.msgs))
	}
}

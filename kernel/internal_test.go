package kernel

import (
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel/display"
)

func TestSplitCell(t *testing.T) {
	type want struct {
		decl      bool
		line, col int
		starts    string // the chunk's text begins with this
	}
	tests := []struct {
		name string
		code string
		want []want
	}{
		{"empty", "", nil},
		{"comments only", "// nothing\n/* here */", nil},
		{"one statement", "x := 1", []want{{false, 1, 1, "x := 1"}}},
		{"mixed runs", "import \"fmt\"\nfunc f() {}\nx := 1\nfmt.Println(x)\ntype T int\nconst c = 1\nvar v T\ny := 2",
			[]want{{true, 1, 1, "import"}, {false, 3, 1, "x := 1"}, {true, 5, 1, "type T"}, {false, 8, 1, "y := 2"}}},
		{"declaration keywords inside a body stay with it", "func f() {\n\tvar x int\n\ttype t int\n\t_ = x\n}\nf()",
			[]want{{true, 1, 1, "func f"}, {false, 6, 1, "f()"}}},
		{"function literal is a statement", "func() { println(1) }()", []want{{false, 1, 1, "func()"}}},
		{"method", "func (t *T) M() {}", []want{{true, 1, 1, "func (t *T)"}}},
		{"generic function", "func F[T any](x T) T { return x }", []want{{true, 1, 1, "func F"}}},
		{"function literal with a parenthesised result", "f := func(a int) (int, error) { return a, nil }", []want{{false, 1, 1, "f :="}}},
		{"import after other declarations starts a chunk", "import \"a\"\nimport \"b\"\nfunc f() {}\nimport \"c\"",
			[]want{{true, 1, 1, "import \"a\""}, {true, 4, 1, "import \"c\""}}},
		{"semicolons on one line", "x := 1; var y = 2; y++", []want{{false, 1, 1, "x := 1"}, {true, 1, 9, "var y"}, {false, 1, 20, "y++"}}},
		{"multi-line statement", "x := []int{\n\t1,\n}\nvar y = x", []want{{false, 1, 1, "x := "}, {true, 4, 1, "var y"}}},
		{"grouped declaration", "var (\n\ta = 1\n\tb = 2\n)\na + b", []want{{true, 1, 1, "var ("}, {false, 5, 1, "a + b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitCell(tc.code)
			if len(got) != len(tc.want) {
				t.Fatalf("%d chunks %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.decl != w.decl || g.line != w.line || g.col != w.col || !strings.HasPrefix(g.text, w.starts) {
					t.Errorf("chunk %d = %+v, want %+v", i, g, w)
				}
			}
			// The chunks cover the code from the first token on.
			var all strings.Builder
			for _, g := range got {
				all.WriteString(g.text)
			}
			if len(got) > 0 && !strings.HasSuffix(tc.code, all.String()) {
				t.Errorf("chunks %q do not cover the code", all.String())
			}
		})
	}
}

func TestPositions(t *testing.T) {
	tests := []struct{ in, want string }{
		{"cell3/_.go:4:5: undefined: x", "4:5: undefined: x"},
		{"cell2/_.go:1:12: in main.f", "cell[2]:1:12: in main.f"},
		{"cell3/_.go:7: msg", "7: msg"},
		{"no position", "no position"},
		{"cell3/_.go:1:1: a and cell12/_.go:2:2: b", "1:1: a and cell[12]:2:2: b"},
	}
	for _, tc := range tests {
		if got := positions(tc.in, 3); got != tc.want {
			t.Errorf("positions(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := excerpt("a\n\tbc := d\n", 2, 3); !reflect.DeepEqual(got, []string{"   2 | \tbc := d", "     | \t ^"}) {
		t.Errorf("excerpt = %q", got)
	}
}

// streams records what a router delivers, one entry per call.
type streams struct {
	mu    sync.Mutex
	calls []string
}

func (s *streams) WriteStream(st Stream, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, st.String()+":"+text)
}

func (s *streams) Display(display.Message) {}

func (s *streams) joined() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.calls, "|")
}

func TestRouterKeepsUTF8Whole(t *testing.T) {
	var out streams
	r := &router{}
	r.setOutput(&out)
	é := []byte("é")
	r.write(Stdout, append([]byte("h"), é[0]))
	r.write(Stdout, append(é[1:], []byte("llo")...))
	r.write(Stderr, []byte("err"))
	r.write(Stdout, []byte{0xff}) // invalid UTF-8 is not held forever
	r.flush()
	if got := out.joined(); got != "stdout:h|stdout:éllo|stderr:err|stdout:\xff" {
		t.Errorf("deliveries = %q", got)
	}
}

func TestCaptureReader(t *testing.T) {
	if got := partialSuffix([]byte("abc\x00\x1b[ki"), syncMarker); got != 5 {
		t.Errorf("partialSuffix = %d, want 5", got)
	}
	if got := partialSuffix([]byte("abc"), syncMarker); got != 0 {
		t.Errorf("partialSuffix = %d, want 0", got)
	}
	var out streams
	r := &router{}
	r.setOutput(&out)
	c := &fdCapture{r: r, notify: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.wg.Add(1)
	go c.read(Stdout, pr)
	split := len(syncMarker) / 2
	writes := [][]byte{
		[]byte("one "),
		append([]byte("two "), syncMarker[:split]...),
		append(append([]byte{}, syncMarker[split:]...), []byte("three\x00")...),
	}
	for _, w := range writes {
		if _, err := pw.Write(w); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // separate reads
	}
	pw.Close()
	c.wg.Wait()
	var text strings.Builder
	for _, call := range out.calls {
		text.WriteString(strings.TrimPrefix(call, "stdout:"))
	}
	if text.String() != "one two three\x00" {
		t.Errorf("delivered %q", text.String())
	}
	if c.seen[Stdout] != 1 {
		t.Errorf("saw %d markers, want 1", c.seen[Stdout])
	}
}

func TestLimitMemory(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	if got := limitMemory(1 << 40); got != 1<<40 || debug.SetMemoryLimit(-1) != 1<<40 {
		t.Errorf("limitMemory(1<<40) = %d", got)
	}
	if got := limitMemory(-1); got != 1<<40 {
		t.Errorf("limitMemory(-1) changed the limit to %d", got)
	}
	if os.Getenv("GOMEMLIMIT") == "" && physicalMemory() > 0 {
		want := int64(float64(physicalMemory()) * DefaultMemoryFraction)
		if got := limitMemory(0); got != want {
			t.Errorf("limitMemory(0) = %d, want %d", got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"1048576", 1 << 20, true}, {"64M", 64 << 20, true}, {"2g", 2 << 30, true},
		{"512K", 512 << 10, true}, {"-1", -1, true}, {"lots", 0, false}, {"9999999999G", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

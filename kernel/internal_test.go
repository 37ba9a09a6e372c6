package kernel

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"

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

// TestStreamPipeSync: once sync returns, everything written into the pipe
// before it has been delivered, whatever the reader was doing; with the
// crash monitor's settle delay too.
func TestStreamPipeSync(t *testing.T) {
	for _, settle := range []bool{false, true} {
		var out streams
		r := &router{}
		r.setOutput(&out)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := newStreamPipe(Stdout, r, pr)
		if err != nil {
			t.Fatal(err)
		}
		p.settle.Store(settle)
		delivered := func() string {
			out.mu.Lock()
			defer out.mu.Unlock()
			var b strings.Builder
			for _, call := range out.calls {
				b.WriteString(strings.TrimPrefix(call, "stdout:"))
			}
			return b.String()
		}
		var want strings.Builder
		for i, w := range []string{"one\n", "", "two\n", strings.Repeat("x", 200<<10) + "\n", "é"} {
			if w != "" {
				// A write larger than the pipe's buffer blocks until the
				// reader makes room: from another goroutine.
				done := make(chan error)
				go func() { _, err := pw.WriteString(w); done <- err }()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			want.WriteString(w)
			if !p.sync(time.Now().Add(10 * time.Second)) {
				t.Fatalf("settle %v, write %d: sync timed out", settle, i)
			}
			r.flush()
			if got := delivered(); got != want.String() {
				t.Fatalf("settle %v, after write %d and sync: delivered %d bytes, want %d", settle, i, len(got), want.Len())
			}
		}
		pw.Close()
		p.wait(10 * time.Second)
		if !p.sync(time.Now().Add(time.Second)) {
			t.Errorf("settle %v: sync after the pipe ended did not return true", settle)
		}
	}
}

// TestCellsDoNotWaitForTheSettleDelay: with a crash monitor, fd 2's
// reader holds data back for settleDelay; a cell's end cuts that short
// rather than waiting (once it waited settleDelay per cell), and the
// cell's fd 2 output is still the cell's. Waiting would make every cell
// that writes to fd 2 last settleDelay at least; the fastest of them
// (the figure a loaded machine disturbs least) must take less.
func TestCellsDoNotWaitForTheSettleDelay(t *testing.T) {
	s, err := New(Options{CaptureFDs: true, MemoryLimit: -1, MaxStack: -1,
		Symbols: []interp.Exports{{"kilntest/fd2/fd2": {
			"Say": reflect.ValueOf(func(msg string) { fmt.Fprintln(os.Stderr, msg) }),
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.capture.pipes[Stderr].settle.Store(true) // as when a crash monitor runs
	if _, err := s.Execute(context.Background(), "import \"kilntest/fd2\"", nil); err != nil {
		t.Fatal(err)
	}
	fastest := time.Hour
	for i := range 50 {
		code := "x := 1"
		want := ""
		if i%2 == 1 {
			code = fmt.Sprintf("fd2.Say(\"cell %d\")", i)
			want = fmt.Sprintf("stderr:cell %d\n", i)
		}
		var out streams
		start := time.Now()
		if _, err := s.Execute(context.Background(), code, &out); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); want != "" {
			fastest = min(fastest, took)
		}
		if got := out.joined(); got != want {
			t.Fatalf("cell %d: output %q, want %q", i, got, want)
		}
	}
	if fastest >= settleDelay {
		t.Errorf("the fastest cell writing to fd 2 took %v: no less than the settle delay (%v)", fastest, settleDelay)
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

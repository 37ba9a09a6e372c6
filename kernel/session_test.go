package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
)

// recorder is an Output that keeps everything it receives.
type recorder struct {
	mu       sync.Mutex
	stdout   strings.Builder
	stderr   strings.Builder
	messages []display.Message
}

func (r *recorder) WriteStream(s kernel.Stream, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s == kernel.Stderr {
		r.stderr.WriteString(text)
	} else {
		r.stdout.WriteString(text)
	}
}

func (r *recorder) Display(m display.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages = append(r.messages, m)
}

func (r *recorder) out() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stdout.String(), r.stderr.String()
}

func newSession(t *testing.T, opts kernel.Options) *kernel.Session {
	t.Helper()
	opts.MemoryLimit = -1 // leave the test process alone
	opts.MaxStack = -1
	s, err := kernel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// run executes cells in order and fails the test on any error; it returns
// the text/plain result of the last cell ("" when it shows nothing).
func run(t *testing.T, s *kernel.Session, cells ...string) string {
	t.Helper()
	var text string
	for _, c := range cells {
		res, err := s.Execute(context.Background(), c, nil)
		if err != nil {
			t.Fatalf("cell %q: %v", c, describe(err))
		}
		text = ""
		if res != nil {
			text = fmt.Sprint(res.Data[display.MIMETypeText])
		}
	}
	return text
}

func describe(err error) string {
	var e *kernel.Error
	if errors.As(err, &e) {
		return e.Name + ": " + e.Value + "\n" + strings.Join(e.Traceback, "\n")
	}
	return err.Error()
}

// fails executes a cell that must fail and returns its *kernel.Error.
func fails(t *testing.T, s *kernel.Session, code string) *kernel.Error {
	t.Helper()
	res, err := s.Execute(context.Background(), code, nil)
	if err == nil {
		t.Fatalf("cell %q succeeded (result %v), want an error", code, res)
	}
	var e *kernel.Error
	if !errors.As(err, &e) {
		t.Fatalf("cell %q: error %v is not a *kernel.Error", code, err)
	}
	return e
}

func TestCellsMixImportsDeclarationsAndStatements(t *testing.T) {
	s := newSession(t, kernel.Options{})
	got := run(t, s, `import "strings"
const greeting = "hello"
x := strings.ToUpper(greeting)
func shout(s string) string { return s + "!" }
type pair struct{ a, b int }
var p = pair{1, 2}
y := shout(x)
import "strconv"
y + strconv.Itoa(p.a+p.b)`)
	if got != "HELLO!3" {
		t.Errorf("result = %q, want HELLO!3", got)
	}
	// Everything persists into the next cell.
	if got := run(t, s, "shout(y) + greeting"); got != "HELLO!!hello" {
		t.Errorf("next cell = %q, want HELLO!!hello", got)
	}
}

func TestImports(t *testing.T) {
	s := newSession(t, kernel.Options{})
	tests := []struct {
		name, code, want string
	}{
		{"explicit import", "import \"math\"\nmath.Sqrt(16)", "4"},
		{"importing again is harmless", "import (\n\t\"math\"\n\t\"strings\"\n)\nstrings.Repeat(\"a\", int(math.Sqrt(9)))", "aaa"},
		{"automatic import of the standard library", "filepath.Base(\"/a/b.txt\")", "b.txt"},
		{"automatic import prefers math/rand", "rand.New(rand.NewSource(1)) != nil", "true"},
		{"explicit import of another package with the same name", "import crand \"crypto/rand\"\nb := make([]byte, 4)\n_, err := crand.Read(b)\nerr == nil", "true"},
		{"automatic import of Kiln", "backends.Float32.String()", "float32"},
		{"a variable shadows a package name", "strings := []string{\"x\"}\nlen(strings)", "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, s, tc.code); got != tc.want {
				t.Errorf("%q = %q, want %q", tc.code, got, tc.want)
			}
		})
	}
	t.Run("unknown package", func(t *testing.T) {
		e := fails(t, s, "import \"github.com/nope/nope\"")
		if e.Name != "ImportError" || !strings.Contains(e.Value, "1:8") {
			t.Errorf("error = %s: %s, want ImportError at 1:8", e.Name, e.Value)
		}
	})
	t.Run("name bound to another package", func(t *testing.T) {
		e := fails(t, s, "import \"crypto/rand\"")
		if e.Name != "ImportError" || !strings.Contains(e.Value, "math/rand") {
			t.Errorf("error = %s: %s, want ImportError naming math/rand", e.Name, e.Value)
		}
	})
}

func TestRangeOverInt(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, `func count(n int) int {
	c := 0
	for i := range n {
		c += i
	}
	return c
}`)
	tests := []struct {
		name, code, want string
	}{
		{"literal", "s := 0\nfor i := range 4 { s += i }\ns", "6"},
		{"variable", "n := 5\ns := 0\nfor i := range n { s += i }\ns", "10"},
		{"no index", "c := 0\nfor range 3 { c++ }\nc", "3"},
		{"blank index", "c := 0\nfor _ = range 3 { c++ }\nc", "3"},
		{"assign form keeps the last index", "var k int\nfor k = range 4 {}\nk", "3"},
		{"nested", "s := 0\nfor i := range 3 {\n\tfor j := range 4 {\n\t\ts += i * j\n\t}\n}\ns", "18"},
		{"break and continue", "s := 0\nfor i := range 10 {\n\tif i%2 == 0 { continue }\n\tif i > 6 { break }\n\ts += i\n}\ns", "9"},
		{"labeled continue from a nested loop", "s := 0\nouter:\nfor i := range 3 {\n\tfor j := range 3 {\n\t\tif j > i { continue outer }\n\t\ts += 10*i + j\n\t}\n}\ns", "84"},
		{"typed integer keeps its type", "var n int64 = 3\nvar last int64\nfor i := range n { last = i }\nfmt.Sprintf(\"%T %d\", last, last)", "int64 2"},
		{"expression evaluated once", "calls := 0\nf := func() int { calls++; return 3 }\nfor range f() {}\ncalls", "1"},
		{"len", "xs := []string{\"a\", \"b\"}\nc := 0\nfor i := range len(xs) { c += i + 1 }\nc", "3"},
		{"inside a function declared in a cell", "count(5)", "10"},
		{"inside a function literal", "g := func(n int) int { s := 0; for i := range n { s += i }; return s }\ng(4)", "6"},
		{"range over a slice is left alone", "s := 0\nfor i := range []int{7, 8, 9} { s += i }\ns", "3"},
		{"range over a map is left alone", "c := 0\nfor k := range map[string]int{\"a\": 1, \"b\": 2} { c += len(k) }\nc", "2"},
		{"range over a string is left alone", "c := 0\nfor i := range \"hello\" { c += i }\nc", "10"},
		{"method result (from the symbol tables)", "x := tensor.Zeros(tensor.CPU(), 2, 3)\nc := 0\nfor range x.Dim(1) { c++ }\nc", "3"},
		{"integer the kernel cannot type is retried", "type box struct{ n int }\nb := box{4}\nc := 0\nfor range b.n { c++ }\nc", "4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, s, tc.code); got != tc.want {
				t.Errorf("%q = %q, want %q", tc.code, got, tc.want)
			}
		})
	}
}

func TestErrorPositions(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "func boom(m map[string]int) {\n\tm[\"x\"] = 1\n}")
	tests := []struct {
		name, code, kind, want string
		line                   string // the source line the traceback quotes
	}{
		{"syntax error on line 3", "a := 1\nb := 2\nc := ]\nd := 4", "SyntaxError", "3:6: expected operand", "   3 | c := ]"},
		{"cell ending inside a statement", "func f() {}\n\nx := (1 +\n", "SyntaxError", "3:10: unexpected end of cell", ""},
		{"compile error in statements", "x := 1\n\ny := undefinedThing + x", "CompileError", "3:6: undefined: undefinedThing", "   3 | y := undefinedThing + x"},
		{"compile error in a declaration", "import \"fmt\"\n\nfunc f() int {\n\treturn nope\n}", "CompileError", "4:9: undefined: nope", "   4 | \treturn nope"},
		{"yaegi's 'constant definition loop' names the undefined name", "a := 1\nb := 2 +\n  undefinedThing", "CompileError", "3:3: undefined: undefinedThing", ""},
		{"panic in the cell", "x := []int{}\n_ = x\npanic(\"boom\")", "panic", "boom", "panic: boom"},
		{"panic in a function literal", "z := 0\nfunc() {\n\tpanic(\"lit\")\n}()", "panic", "lit", "   3 | \tpanic(\"lit\")"},
		{"panic in a function of an earlier cell", "var m map[string]int\nboom(m)", "panic", "assignment to entry in nil map", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := fails(t, s, tc.code)
			if e.Name != tc.kind || !strings.Contains(e.Value, tc.want) {
				t.Fatalf("error = %s: %s, want %s containing %q", e.Name, e.Value, tc.kind, tc.want)
			}
			if tc.line != "" && !contains(e.Traceback, tc.line) {
				t.Errorf("traceback %q does not quote %q", e.Traceback, tc.line)
			}
		})
	}
	t.Run("panic traceback names the earlier cell", func(t *testing.T) {
		e := fails(t, s, "var m map[string]int\nboom(m)")
		found := false
		for _, l := range e.Traceback {
			if strings.HasPrefix(l, "    cell[1]:2:") && strings.HasSuffix(l, "in boom") {
				found = true
			}
		}
		if !found {
			t.Errorf("traceback %q has no frame at cell[1]:2 in boom", e.Traceback)
		}
	})
	t.Run("a failing cell runs nothing when it has a syntax error", func(t *testing.T) {
		fails(t, s, "ran := true\nx := ]")
		e := fails(t, s, "ran")
		if e.Name != "CompileError" {
			t.Errorf("ran is defined after a cell with a syntax error: %s: %s", e.Name, e.Value)
		}
	})
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func TestInternalPanicRecovered(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "before := 40")
	// yaegi v0.16.1 panics ("nil type") compiling a type assertion to an
	// anonymous interface.
	e := fails(t, s, "var a interface{} = 3\n_, ok := a.(interface{ HTML() string })")
	if e.Name != "InternalError" || !strings.Contains(e.Value, "nil type") {
		t.Errorf("error = %s: %s, want InternalError about nil type", e.Name, e.Value)
	}
	if got := run(t, s, "after := before + 2\nafter"); got != "42" {
		t.Errorf("session after an internal panic: %q, want 42", got)
	}
}

func TestRedefinition(t *testing.T) {
	s := newSession(t, kernel.Options{})
	tests := []struct {
		name  string
		cells []string
		want  string
	}{
		{"function", []string{"func f() int { return 1 }", "func f() string { return \"two\" }", "f()"}, "two"},
		{"variable with another type", []string{"v := 1", "v := \"s\"", "v + v"}, "ss"},
		{"var declaration with another type", []string{"var w int = 3", "var w string = \"w\"", "w"}, "w"},
		{"struct type with other fields", []string{"type T struct{ A int }", "T{1}.A", "type T struct{ B string }", "T{B: \"b\"}.B"}, "b"},
		{"type with another underlying type", []string{"type U int", "type U string", "U(\"u\")"}, "u"},
		{"recursive type", []string{"type N struct{ V int; Next *N }", "type N struct{ S string; Next *N }", "n := &N{S: \"a\", Next: &N{S: \"b\"}}\nn.Next.S"}, "b"},
		{"type and its methods in one cell, twice", []string{
			"type C struct{ n int }\nfunc (c C) Get() int { return c.n }",
			"type C struct{ n, m int }\nfunc (c C) Get() int { return c.n + c.m }",
			"C{1, 2}.Get()"}, "3"},
		{"method", []string{
			"type M struct{}\nfunc (M) A() string { return \"a1\" }\nfunc (M) B() string { return \"b1\" }",
			"func (M) A() string { return \"a2\" }",
			"M{}.A() + M{}.B()"}, "a2b1"},
		{"pointer method, twice", []string{
			"type P struct{ n int }\nfunc (p *P) Inc() { p.n++ }\nfunc (p *P) Get() int { return p.n }",
			"func (p *P) Inc() { p.n += 10 }",
			"func (p *P) Inc() { p.n += 100 }",
			"p := &P{}\np.Inc()\np.Get()"}, "100"},
		{"new method on an earlier type", []string{"type Q struct{}", "func (Q) Hi() string { return \"hi\" }", "Q{}.Hi()"}, "hi"},
		{"callers of a redefined function call the new one", []string{
			"func base() int { return 1 }\nfunc mid() int { return base() * 10 }",
			"func top() int { return mid() + 1 }",
			"func base() int { return 2 }",
			"top()"}, "21"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, s, tc.cells...); got != tc.want {
				t.Errorf("%q = %q, want %q", tc.cells, got, tc.want)
			}
		})
	}
}

func TestRedefinitionBreakingCallers(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "func p() int { return 1 }\nfunc q() int { return p() + 1 }")
	var rec recorder
	if _, err := s.Execute(context.Background(), "func p() string { return \"x\" }", &rec); err != nil {
		t.Fatal(describe(err))
	}
	if _, stderr := rec.out(); !strings.Contains(stderr, "still calling the earlier p: q: cell[1]:2:") {
		t.Errorf("stderr = %q, want a note that q keeps the old p", stderr)
	}
	if got := run(t, s, "q()"); got != "2" {
		t.Errorf("q() = %q, want 2 (the old p)", got)
	}
	if got := run(t, s, "p()"); got != "x" {
		t.Errorf("p() = %q, want x", got)
	}
}

func TestInterrupt(t *testing.T) {
	// block.Sleep is a compiled call that ignores interrupts (time.Sleep
	// in cells does not: the session replaces it).
	s := newSession(t, kernel.Options{Symbols: []interp.Exports{{"kilntest/block/block": {
		"Sleep": reflect.ValueOf(time.Sleep),
	}}}})
	run(t, s, "kept := 7")

	interrupt := func(code string) (time.Duration, error) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := s.Execute(context.Background(), code, nil)
			done <- err
		}()
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		s.Interrupt()
		select {
		case err := <-done:
			return time.Since(start), err
		case <-time.After(5 * time.Second):
			t.Fatalf("cell %q still runs 5 s after Interrupt", code)
		}
		return 0, nil
	}

	t.Run("infinite interpreted loop", func(t *testing.T) {
		took, err := interrupt("n := 0\nfor {\n\tn++\n}")
		if took > 2*time.Second {
			t.Errorf("interrupt took %v, want under 2 s", took)
		}
		var e *kernel.Error
		if !errors.Is(err, kernel.ErrInterrupted) || !errors.As(err, &e) || e.Name != "Interrupted" {
			t.Errorf("error = %v, want an Interrupted *kernel.Error wrapping ErrInterrupted", err)
		}
		if got := run(t, s, "kept"); got != "7" {
			t.Errorf("after the interrupt kept = %q, want 7", got)
		}
		if got := run(t, s, "n > 0"); got != "true" {
			t.Errorf("after the interrupt n > 0 = %q, want true", got)
		}
	})
	t.Run("time.Sleep", func(t *testing.T) {
		run(t, s, "slept := 0")
		took, err := interrupt("time.Sleep(time.Hour)\nslept++")
		if took > time.Second || !errors.Is(err, kernel.ErrInterrupted) {
			t.Errorf("interrupting time.Sleep: %v after %v", err, took)
		}
		// The next cell runs at once; the rest of the interrupted one never.
		var rec recorder
		start := time.Now()
		res, err := s.Execute(context.Background(), "slept", &rec)
		if err != nil || res == nil || fmt.Sprint(res.Data["text/plain"]) != "0" {
			t.Errorf("slept after the interrupted cell = %v, %v; want 0", res, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the next cell took %v", d)
		}
		if _, stderr := rec.out(); stderr != "" {
			t.Errorf("stderr of the next cell = %q", stderr)
		}
		// Sleeping goroutines of earlier cells wake up when interrupted
		// between cells, and stop.
		run(t, s, "woke := 0\ngo func() {\n\ttime.Sleep(time.Hour)\n\twoke++\n}()")
		time.Sleep(50 * time.Millisecond)
		s.Interrupt()
		time.Sleep(50 * time.Millisecond)
		if got := run(t, s, "woke"); got != "0" {
			t.Errorf("woke = %s: the goroutine went on after its interrupted sleep", got)
		}
		if got := run(t, s, "time.Sleep(time.Millisecond)\n1"); got != "1" {
			t.Errorf("a short sleep: %q", got)
		}
	})
	t.Run("blocking compiled call", func(t *testing.T) {
		run(t, s, "hits := 0")
		took, err := interrupt("import \"kilntest/block\"\nblock.Sleep(1500 * time.Millisecond)\nhits++")
		if took > time.Second || !errors.Is(err, kernel.ErrInterrupted) {
			t.Errorf("interrupting block.Sleep: %v after %v", err, took)
		}
		// The next cell waits for the sleep to end; the rest of the
		// interrupted cell never runs.
		var rec recorder
		res, err := s.Execute(context.Background(), "hits", &rec)
		if err != nil || res == nil || fmt.Sprint(res.Data["text/plain"]) != "0" {
			t.Errorf("hits after the interrupted cell = %v, %v; want 0", res, err)
		}
		if _, stderr := rec.out(); !strings.Contains(stderr, "waiting for the interrupted cell") {
			t.Errorf("stderr of the waiting cell = %q", stderr)
		}
	})
	t.Run("ctx is cancelled", func(t *testing.T) {
		_, err := interrupt("<-ctx.Done()")
		if !errors.Is(err, kernel.ErrInterrupted) {
			t.Errorf("error = %v, want interrupted", err)
		}
		run(t, s, "c := ctx")
		if got := run(t, s, "ctx.Err() == nil"); got != "true" {
			t.Errorf("the next cell's ctx is already cancelled")
		}
	})
	t.Run("caller's context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := s.Execute(ctx, "for {}", nil)
		if !errors.Is(err, kernel.ErrInterrupted) || time.Since(start) > 2*time.Second {
			t.Errorf("cancelling Execute's context: %v after %v", err, time.Since(start))
		}
	})
	t.Run("goroutines of earlier cells", func(t *testing.T) {
		run(t, s, "var ticks atomic.Int64\ngo func() {\n\tfor {\n\t\tticks.Add(1)\n\t\ttime.Sleep(time.Millisecond)\n\t}\n}()")
		time.Sleep(50 * time.Millisecond)
		s.Interrupt() // no cell runs: stops the goroutine
		a := run(t, s, "ticks.Load()")
		time.Sleep(50 * time.Millisecond)
		b := run(t, s, "ticks.Load()")
		if a == "0" || a != b {
			t.Errorf("ticks %s then %s: the goroutine did not run, or still runs after Interrupt", a, b)
		}
	})
}

// TestInterruptBlockedChannel interrupts cells blocked in interpreted
// channel operations: they return at once, and the next cell runs without
// waiting for them.
func TestInterruptBlockedChannel(t *testing.T) {
	s := newSession(t, kernel.Options{})
	for _, code := range []string{"<-make(chan int)", "select {}", "ch := make(chan int)\nch <- 1"} {
		t.Run(code, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := s.Execute(context.Background(), code, nil)
				done <- err
			}()
			time.Sleep(200 * time.Millisecond)
			s.Interrupt()
			select {
			case err := <-done:
				if !errors.Is(err, kernel.ErrInterrupted) {
					t.Errorf("error = %v, want interrupted", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the cell still runs 5 s after Interrupt")
			}
			var rec recorder
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if res, err := s.Execute(ctx, "1 + 1", &rec); err != nil || res == nil {
				t.Errorf("the next cell: %v, %v", res, err)
			}
			if _, stderr := rec.out(); stderr != "" {
				t.Errorf("the next cell waited: %q", stderr)
			}
		})
	}
}

// TestCompleteWhileRunning completes and inspects while a cell changes the
// variables and while an interrupted cell lingers in a compiled call: the
// answers come from the variables' types, and nothing races (go test -race).
func TestCompleteWhileRunning(t *testing.T) {
	s := newSession(t, kernel.Options{Symbols: []interp.Exports{{"kilntest/block/block": {
		"Sleep": reflect.ValueOf(time.Sleep),
	}}}})
	run(t, s, "count := 0\nname := \"kiln\"")
	check := func(t *testing.T) {
		t.Helper()
		if got := s.Complete("cou", 3); len(got.Matches) != 1 || got.Matches[0] != "count" {
			t.Errorf("Complete(cou) = %v, want [count]", got.Matches)
		}
		if got := s.Complete("name.", 5); len(got.Matches) != 0 {
			t.Errorf("Complete(name.) = %v, want nothing (a string)", got.Matches)
		}
		if got, ok := s.Inspect("count", 5); !ok || !strings.Contains(got, "var count int") ||
			!strings.Contains(got, "value not shown while a cell runs") {
			t.Errorf("Inspect(count) = %q, %v; want its type and no value", got, ok)
		}
	}
	t.Run("running cell", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := s.Execute(context.Background(), "for {\n\tcount++\n\tname = \"x\"\n}", nil)
			done <- err
		}()
		time.Sleep(200 * time.Millisecond)
		check(t)
		s.Interrupt()
		<-done
	})
	t.Run("lingering cell", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := s.Execute(context.Background(), "import \"kilntest/block\"\nblock.Sleep(time.Second)\ncount++", nil)
			done <- err
		}()
		time.Sleep(200 * time.Millisecond)
		s.Interrupt()
		<-done
		check(t)
		// Once it has returned, values are shown again.
		run(t, s, "1")
		if got, ok := s.Inspect("count", 5); !ok || !strings.Contains(got, "var count int = ") {
			t.Errorf("Inspect(count) = %q, %v after the cell ended; want its value", got, ok)
		}
	})
}

func TestOutputStreams(t *testing.T) {
	s := newSession(t, kernel.Options{})
	var rec recorder
	_, err := s.Execute(context.Background(), `fmt.Println("out 1")
fmt.Fprintln(os.Stderr, "err 1")
fmt.Fprintf(os.Stdout, "out %d\n", 2)
log.SetFlags(0)
log.Print("err 2")
fmt.Print("héllo wörld\n")`, &rec)
	if err != nil {
		t.Fatal(describe(err))
	}
	stdout, stderr := rec.out()
	if stdout != "out 1\nout 2\nhéllo wörld\n" {
		t.Errorf("stdout = %q", stdout)
	}
	if stderr != "err 1\nerr 2\n" {
		t.Errorf("stderr = %q", stderr)
	}
	t.Run("a panic's frames are not stderr output", func(t *testing.T) {
		var rec recorder
		_, err := s.Execute(context.Background(), "func deep() { panic(\"x\") }\ndeep()", &rec)
		if err == nil {
			t.Fatal("no error")
		}
		if _, stderr := rec.out(); stderr != "" {
			t.Errorf("stderr = %q, want nothing", stderr)
		}
	})
}

func TestCompiledOutputCaptured(t *testing.T) {
	s := newSession(t, kernel.Options{
		CaptureFDs: true,
		Symbols: []interp.Exports{{"kilntest/probe/probe": {
			"Say": reflect.ValueOf(func(msg string) {
				fmt.Println("compiled stdout:", msg)
				fmt.Fprintln(os.Stderr, "compiled stderr:", msg)
			}),
		}}},
	})
	if _, err := kernel.New(kernel.Options{CaptureFDs: true, MemoryLimit: -1}); err == nil {
		t.Error("a second session captured the file descriptors too")
	}
	var rec recorder
	_, err := s.Execute(context.Background(), "import \"kilntest/probe\"\nprobe.Say(\"hi\")\nfmt.Println(\"interpreted\")", &rec)
	if err != nil {
		t.Fatal(describe(err))
	}
	stdout, stderr := rec.out()
	if !strings.Contains(stdout, "compiled stdout: hi\n") || !strings.Contains(stdout, "interpreted\n") {
		t.Errorf("stdout = %q", stdout)
	}
	if stderr != "compiled stderr: hi\n" {
		t.Errorf("stderr = %q", stderr)
	}
	if s.OriginalStdout() == os.Stdout {
		t.Error("OriginalStdout is the captured os.Stdout")
	}
	s.Close()
	if _, err := fmt.Fprint(os.Stdout, ""); err != nil {
		t.Errorf("stdout after Close: %v", err)
	}
}

func TestTensorCell(t *testing.T) {
	s := newSession(t, kernel.Options{})
	if got := run(t, s, "x := tensor.Ones(tensor.CPU(), 2, 2); x.Add(x).Sum().Item()"); got != "8" {
		t.Errorf("result = %q, want 8", got)
	}
	e := fails(t, s, "tensor.Ones(tensor.CPU(), 2, 3).Matmul(tensor.Ones(tensor.CPU(), 2, 3))")
	if e.Name != "panic" || !strings.Contains(e.Value, "Matmul") {
		t.Errorf("shape error = %s: %s, want a panic naming Matmul", e.Name, e.Value)
	}
}

func TestResults(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, `func nothing() {}
func two() (int, error) { return 5, nil }
func pairs() (int, string) { return 1, "a" }
type page struct{ title string }
func (p page) HTML() string { return "<h1>" + p.title + "</h1>" }
type chart struct{}
func (chart) MIME() map[string]string { return map[string]string{"image/svg+xml": "<svg/>", "text/plain": "a chart"} }
type named struct{ n int }
func (v named) String() string { return fmt.Sprintf("named(%d)", v.n) }
type both struct{ n int }
func (both) HTML() string { return "<b>both</b>" }
func (v both) String() string { return fmt.Sprint("both ", v.n) }
x := 21`)
	tests := []struct {
		name, code string
		want       map[string]string // nil: nothing shown
	}{
		{"assignment shows nothing", "y := 21", nil},
		{"variable", "x", map[string]string{"text/plain": "21"}},
		{"expression", "x * 2", map[string]string{"text/plain": "42"}},
		{"call returning nothing", "nothing()", nil},
		{"fmt.Println shows nothing", "fmt.Println()", nil},
		{"two values", "pairs()", map[string]string{"text/plain": "1 a"}},
		{"value and nil error", "two()", map[string]string{"text/plain": "5 <nil>"}},
		{"nil error alone", "error(nil)", nil},
		{"statement", "if x > 0 { x++ }", nil},
		{"HTML method", "page{\"hi\"}", map[string]string{"text/html": "<h1>hi</h1>", "text/plain": "{hi}"}},
		{"MIME method", "chart{}", map[string]string{"image/svg+xml": "<svg/>", "text/plain": "a chart"}},
		{"String method", "named{3}", map[string]string{"text/plain": "named(3)"}},
		{"HTML and String methods", "both{4}", map[string]string{"text/html": "<b>both</b>", "text/plain": "both 4"}},
		{"returned by a function", "func mk() page { return page{\"f\"} }\nmk()", map[string]string{"text/html": "<h1>f</h1>", "text/plain": "{f}"}},
		{"display bundle", "display.HTML(\"<i>i</i>\")", map[string]string{"text/html": "<i>i</i>", "text/plain": "<i>i</i>"}},
		{"compiled Stringer", "tensor.Zeros(tensor.CPU(), 2).Shape()", map[string]string{"text/plain": "[2]"}},
		{"gophernotes Markdown bundle", "display.Markdown(\"*m*\")", map[string]string{"text/markdown": "*m*", "text/plain": "*m*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Execute(context.Background(), tc.code, nil)
			if err != nil {
				t.Fatal(describe(err))
			}
			if tc.want == nil {
				if res != nil {
					t.Errorf("%q shows %v, want nothing", tc.code, res.Data)
				}
				return
			}
			if res == nil {
				t.Fatalf("%q shows nothing, want %v", tc.code, tc.want)
			}
			got := map[string]string{}
			for k, v := range res.Data {
				got[k] = fmt.Sprint(v)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%q shows %v, want %v", tc.code, got, tc.want)
			}
		})
	}
}

func TestDisplayRouted(t *testing.T) {
	s := newSession(t, kernel.Options{})
	var rec recorder
	_, err := s.Execute(context.Background(), `Display(display.Markdown("*first*"))
h := display.New(display.HTML("v1"))
h.Update(display.HTML("v2"))
display.Clear(true)
for i := 0; i < 2; i++ {
	display.Display(display.SVG(fmt.Sprintf("<svg id=\"%d\"/>", i)))
}`, &rec)
	if err != nil {
		t.Fatal(describe(err))
	}
	if len(rec.messages) != 6 {
		t.Fatalf("got %d display messages, want 6: %v", len(rec.messages), rec.messages)
	}
	want := []struct {
		kind display.Kind
		mime string
		data string
	}{
		{display.DisplayData, "text/markdown", "*first*"},
		{display.DisplayData, "text/html", "v1"},
		{display.UpdateDisplayData, "text/html", "v2"},
		{display.ClearOutput, "", ""},
		{display.DisplayData, "image/svg+xml", "<svg id=\"0\"/>"},
		{display.DisplayData, "image/svg+xml", "<svg id=\"1\"/>"},
	}
	for i, w := range want {
		m := rec.messages[i]
		if m.Kind != w.kind || (w.mime != "" && fmt.Sprint(m.Data.Data[w.mime]) != w.data) {
			t.Errorf("message %d = %v %v, want %v %s=%s", i, m.Kind, m.Data.Data, w.kind, w.mime, w.data)
		}
	}
	if id := rec.messages[1].DisplayID(); id == "" || rec.messages[2].DisplayID() != id {
		t.Errorf("display ids %q and %q: the update must name the displayed id", id, rec.messages[2].DisplayID())
	}
	if !rec.messages[3].Wait {
		t.Error("Clear(true) lost wait")
	}

	// Output of a goroutine after its cell finished goes to the last cell.
	// The goroutine gets its channel as an argument: reading the global
	// done would race with the later cells, which grow yaegi's global
	// frame unsynchronised with such reads (inside yaegi, beyond Kiln's
	// reach).
	var later recorder
	run(t, s, "done := make(chan bool)\ngo func(done chan bool) { <-done; fmt.Println(\"late\"); display.Display(display.HTML(\"late\")); done <- true }(done)")
	if _, err := s.Execute(context.Background(), "x := 1", &later); err != nil {
		t.Fatal(err)
	}
	run(t, s, "done <- true\n<-done")
	// The goroutine's output arrived while the last cell (run's, with a
	// nil Output) was current, not in `later`.
	if stdout, _ := later.out(); stdout != "" || len(later.messages) != 0 {
		t.Errorf("output of a goroutine reached a cell that had finished: %q %v", stdout, later.messages)
	}
}

func TestComplete(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "myVariable := 1\nfunc myFunction() {}\ntype myType struct{}\nweights := tensor.Zeros(tensor.CPU(), 2)")
	tests := []struct {
		name, code string
		cursor     int // -1: at the end
		want       []string
		start      int
	}{
		{"package members", "tensor.Ze", -1, []string{"Zeros", "ZerosLike", "ZerosOf"}, 7},
		{"package not imported yet, mid-line", "x := display.HT", -1, []string{"HTML", "HTMLer"}, 13},
		{"globals, functions and types", "my", -1, []string{"myFunction", "myType", "myVariable"}, 0},
		{"keywords", "fallt", -1, []string{"fallthrough"}, 0},
		{"methods of a global", "weights.Su", -1, []string{"Sub", "SubScalar", "Sum", "SumKeep"}, 8},
		{"methods of a variable declared earlier in the cell", "v := tensor.Ones(tensor.CPU(), 3)\nv.Resh", -1, []string{"Reshape"}, 36},
		{"methods of a call result", "weights.T().Dim", -1, []string{"Dim", "Dims"}, 12},
		{"cursor inside the code", "tensor.Ze + 1", 9, []string{"Zeros", "ZerosLike", "ZerosOf"}, 7},
		{"unicode before the cursor counts code points", "é := 1\ntensor.On", -1, []string{"Ones", "OnesLike", "OnesOf"}, 14},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cursor := tc.cursor
			if cursor < 0 {
				cursor = len([]rune(tc.code))
			}
			c := s.Complete(tc.code, cursor)
			if !reflect.DeepEqual(c.Matches, tc.want) {
				t.Errorf("matches = %v, want %v", c.Matches, tc.want)
			}
			if c.Start != tc.start || c.End != cursor {
				t.Errorf("range = [%d, %d), want [%d, %d)", c.Start, c.End, tc.start, cursor)
			}
		})
	}
}

func TestInspect(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "func scale(x float64, by int) float64 { return x * float64(by) }\ncount := 3\nw := tensor.Zeros(tensor.CPU(), 2)")
	tests := []struct {
		name, code string
		cursor     int
		want       string
	}{
		{"package function", "tensor.Zeros", 9, "func tensor.Zeros(tensor.Device, ...int) *tensor.Tensor"},
		{"cursor after the call's parenthesis", "tensor.Zeros(", 13, "func tensor.Zeros(tensor.Device, ...int) *tensor.Tensor"},
		{"package type", "tensor.Tensor", 8, "func (*tensor.Tensor) Matmul(*tensor.Tensor) *tensor.Tensor"},
		{"method of a variable", "w.Sum()", 3, "func (*tensor.Tensor) Sum(...int) *tensor.Tensor"},
		{"function of a cell", "scale(1, 2)", 2, "func scale(x float64, by int) float64"},
		{"variable", "count", 0, "var count int = 3"},
		{"constant of a package", "display.MIMETypeHTML", 10, `const display.MIMETypeHTML = "text/html"`},
		{"package", "display", 3, "package display"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := s.Inspect(tc.code, tc.cursor)
			if !ok || !strings.Contains(got, tc.want) {
				t.Errorf("Inspect(%q, %d) = %q, %v; want it to contain %q", tc.code, tc.cursor, got, ok, tc.want)
			}
		})
	}
	if got, ok := s.Inspect("  ", 1); ok {
		t.Errorf("Inspect of blanks = %q", got)
	}
}

func TestIsComplete(t *testing.T) {
	tests := []struct {
		code, status string
	}{
		{"", "complete"},
		{"%help", "complete"},
		{"1", "complete"},
		{`fmt.Println("x")`, "complete"},
		{"func f() {\n}", "complete"},
		{"x := 1 // a comment", "complete"},
		{"func f() {", "incomplete"},
		{"x := []int{1,", "incomplete"},
		{"f(1,\n2", "incomplete"},
		{"x := 1 +", "incomplete"},
		{"x.", "incomplete"},
		{"s := `raw\nstring", "incomplete"},
		{"/* open comment", "incomplete"},
		{"}", "invalid"},
		{"x := (1))", "invalid"},
		{`s := "unterminated`, "invalid"},
		{"x := := 1", "invalid"},
	}
	for _, tc := range tests {
		status, indent := kernel.IsComplete(tc.code)
		if status != tc.status {
			t.Errorf("IsComplete(%q) = %s, want %s", tc.code, status, tc.status)
		}
		if status == "incomplete" && strings.Count(tc.code, "{")+strings.Count(tc.code, "(") > 0 && indent == "" {
			t.Errorf("IsComplete(%q): no indent for an open bracket", tc.code)
		}
	}
}

func TestMagics(t *testing.T) {
	s := newSession(t, kernel.Options{})
	res, err := s.Execute(context.Background(), "%help", nil)
	if err != nil || res == nil || !strings.Contains(fmt.Sprint(res.Data["text/markdown"]), "loop variable") {
		t.Errorf("%%help = %v, %v", res, err)
	}
	e := fails(t, s, "%cd /tmp")
	if e.Name != "UsageError" {
		t.Errorf("unknown magic: %s: %s", e.Name, e.Value)
	}
}

func TestClosedSession(t *testing.T) {
	s := newSession(t, kernel.Options{})
	s.Close()
	if _, err := s.Execute(context.Background(), "1", nil); !errors.Is(err, kernel.ErrClosed) {
		t.Errorf("Execute after Close: %v", err)
	}
	s.Interrupt()
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

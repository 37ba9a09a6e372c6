package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel"
)

// TestGoroutinePanic: a panic in a goroutine a cell started is recovered
// and reported on that cell's stderr with the panic value and the frames
// it unwound; the session and its variables survive.
func TestGoroutinePanic(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "x := 41\nfunc index(i int) int {\n\tvar a []int\n\treturn a[i]\n}")

	t.Run("while the cell runs", func(t *testing.T) {
		var rec recorder
		_, err := s.Execute(context.Background(), "done := make(chan bool)\ngo func() {\n\tdefer close(done)\n\tpanic(\"boom\")\n}()\n<-done", &rec)
		if err != nil {
			t.Fatalf("the cell failed: %v", describe(err))
		}
		// The goroutine's deferred close lets the cell end before the
		// guard has recovered the panic: the report may come just after.
		stderr := awaitStderr(&rec, "The goroutine ended")
		// (yaegi's position for a frame is not always the panicking line.)
		for _, want := range []string{"panic: boom [recovered by the kernel: in a goroutine started by cell ", " at 2:1]\n",
			"    2:1: the go statement\n   2 | go func() {\n", "The goroutine ended"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
	})

	t.Run("in a function, after the cell ended", func(t *testing.T) {
		// The goroutine waits for the next cell, then panics in index;
		// the report goes to the cell that started it.
		var first, second recorder
		if _, err := s.Execute(context.Background(), "release := make(chan bool)\ngo func(c chan bool) {\n\t<-c\n\tindex(5)\n}(release)", &first); err != nil {
			t.Fatal(describe(err))
		}
		if _, err := s.Execute(context.Background(), "release <- true", &second); err != nil {
			t.Fatal(describe(err))
		}
		stderr := awaitStderr(&first, "The goroutine ended")
		for _, want := range []string{"panic: ", "index out of range", "    cell[1]:", ": in index\n", "2:1: the go statement\n"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the starting cell's stderr lacks %q:\n%s", want, stderr)
			}
		}
		if out, err := second.out(); out != "" || err != "" {
			t.Errorf("the report reached the running cell: stdout %q, stderr %q", out, err)
		}
	})

	if got := run(t, s, "x + 1"); got != "42" {
		t.Errorf("after the panics x + 1 = %q, want 42", got)
	}
}

// awaitStderr returns rec's stderr once it contains want, or after 10 s.
// (Another cell compiling while an interpreted goroutine panics races
// inside yaegi, which reads the compiler's scopes to name the frames: the
// tests let the report arrive before they run the next cell.)
func awaitStderr(rec *recorder, want string) string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, stderr := rec.out()
		if strings.Contains(stderr, want) || time.Now().After(deadline) {
			return stderr
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGoStatement: go statements keep Go's semantics under the rewrite
// that guards them: the function value and arguments are evaluated by the
// go statement, constants take the parameter's type, and what the rewrite
// cannot express runs as written.
func TestGoStatement(t *testing.T) {
	s := newSession(t, kernel.Options{})
	for _, tc := range []struct{ name, code, want string }{
		{"arguments are evaluated at the go statement",
			"res := make(chan int, 3)\nf := func(i int) { res <- i }\nfor i := 0; i < 3; i++ {\n\tgo f(i * 10)\n}\n<-res + <-res + <-res", "30"},
		{"the function value is evaluated at the go statement",
			"out := make(chan string, 1)\nstart := make(chan bool)\ng := func() { <-start; out <- \"first\" }\ngo g()\ng = func() { <-start; out <- \"second\" }\nclose(start)\n<-out", "first"},
		{"a method value",
			"type counter struct {\n\tn   int\n\tout chan int\n}\nfunc (c *counter) report(k int) { c.out <- c.n * k }\nc := &counter{2, make(chan int, 1)}\ngo c.report(3)\n<-c.out", "6"},
		{"an untyped constant takes the parameter's type",
			"half := make(chan float64, 1)\ngo func(x float64) { half <- x / 2 }(1)\n<-half", "0.5"},
		{"variadic arguments",
			"sum := make(chan int, 2)\nadd := func(xs ...int) {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\tsum <- t\n}\nxs := []int{1, 2, 3}\ngo add(xs...)\ngo add(4, 5)\n<-sum + <-sum", "15"},
		{"a builtin", "closed := make(chan bool)\ngo close(closed)\n<-closed\n7", "7"},
		{"a call's results as the arguments",
			"pair := func() (int, int) { return 3, 4 }\ngot := make(chan int, 1)\ngo func(a, b int) { got <- a * b }(pair())\n<-got", "12"},
		{"in a declared function", "func spawn(ch chan int) {\n\tgo func() { ch <- 7 }()\n}\nch := make(chan int)\nspawn(ch)\n<-ch", "7"},
		{"a generic function", "func send[T any](x T, ch chan T) { ch <- x }\ngch := make(chan int, 1)\ngo send(5, gch)\n<-gch", "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, s, tc.code); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("a compile error names the code as written", func(t *testing.T) {
		_, err := s.Execute(context.Background(), "go undefinedFunction(1)", nil)
		var e *kernel.Error
		if !errors.As(err, &e) || !strings.Contains(e.Value, "undefined: undefinedFunction") || strings.Contains(e.Error(), "__kiln") {
			t.Errorf("got %v, want a compile error naming undefinedFunction", err)
		}
	})
}

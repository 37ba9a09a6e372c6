package kernel_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib/syscall"
	"github.com/traefik/yaegi/stdlib/unrestricted"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
)

// sequence is an Output that keeps the order of writes across streams, as
// lines "stdout: text" and "stderr: text".
type sequence struct {
	mu    sync.Mutex
	lines []string
	open  [3]string // a line not yet ended, per stream
}

func (q *sequence) WriteStream(s kernel.Stream, text string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	text = q.open[s] + text
	for {
		line, rest, ok := strings.Cut(text, "\n")
		if !ok {
			break
		}
		q.lines = append(q.lines, s.String()+": "+line)
		text = rest
	}
	q.open[s] = text
}

func (q *sequence) Display(display.Message) {}

func (q *sequence) String() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return strings.Join(q.lines, "\n")
}

// TestCellStdio: in cells os.Stdout and os.Stderr are *os.File, as in Go,
// and what is written to them reaches the cell's streams in the order it
// was written, also relative to fmt.Print*, log and println.
func TestCellStdio(t *testing.T) {
	s := newSession(t, kernel.Options{})
	for _, tc := range []struct{ name, code, want string }{
		{"they are files", `fmt.Sprintf("%T %T %v", os.Stdout, os.Stderr, os.Stdout.Fd() > 2)`, `*os.File *os.File true`},
	} {
		if got := run(t, s, tc.code); got != tc.want {
			t.Errorf("%s: %q shows %q, want %q", tc.name, tc.code, got, tc.want)
		}
	}
	for _, tc := range []struct{ name, code, want string }{
		{"WriteString", `os.Stdout.WriteString("hi\n")`, "stdout: hi"},
		{"Fprintln to os.Stderr", `fmt.Fprintln(os.Stderr, "oops")`, "stderr: oops"},
		// A write to os.Stdout and one to os.Stderr right after it travel
		// through separate pipes, as fd 1 and 2 do: every other pair keeps
		// its order.
		{"order across streams and ways of writing",
			"fmt.Println(\"1 fmt\")\nos.Stdout.WriteString(\"2 file\\n\")\nlog.SetFlags(0)\nlog.Print(\"3 log\")\n" +
				"os.Stderr.WriteString(\"4 file\\n\")\nfmt.Print(\"5 fmt\\n\")\nfmt.Fprintf(os.Stdout, \"6 %s\\n\", \"file\")\n" +
				"log.Print(\"7 log\")\nos.Stdout.WriteString(\"8 file\\n\")",
			"stdout: 1 fmt\nstdout: 2 file\nstderr: 3 log\nstderr: 4 file\nstdout: 5 fmt\nstdout: 6 file\nstderr: 7 log\nstdout: 8 file"},
		{"a goroutine writing after its cell ended",
			"release := make(chan bool)\ngo func(c chan bool) {\n\t<-c\n\tos.Stdout.WriteString(\"late\\n\")\n\tc <- true\n}(release)", ""},
		// The goroutine writes while this cell runs: its output is this
		// cell's, delivered before the cell ends.
		{"... arrives", "release <- true\n<-release", "stdout: late"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q sequence
			if _, err := s.Execute(context.Background(), tc.code, &q); err != nil {
				t.Fatal(describe(err))
			}
			if got := q.String(); got != tc.want {
				t.Errorf("output\n%s\nwant\n%s", got, tc.want)
			}
		})
	}

	t.Run("a write to the descriptor", func(t *testing.T) {
		s := newSession(t, kernel.Options{Symbols: []interp.Exports{syscall.Symbols}})
		var q sequence
		if _, err := s.Execute(context.Background(), "import \"syscall\"\nsyscall.Write(int(os.Stdout.Fd()), []byte(\"raw\\n\"))", &q); err != nil {
			t.Fatal(describe(err))
		}
		if got := q.String(); got != "stdout: raw" {
			t.Errorf("output %q, want \"stdout: raw\"", got)
		}
	})

	t.Run("a child process's output", func(t *testing.T) {
		s := newSession(t, kernel.Options{Unrestricted: true, Symbols: []interp.Exports{unrestricted.Symbols}})
		var q sequence
		code := "import \"os/exec\"\ncmd := exec.Command(\"sh\", \"-c\", \"echo child out; echo child err >&2\")\ncmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr\nerr := cmd.Run()\nfmt.Println(\"after\", err)"
		if _, err := s.Execute(context.Background(), code, &q); err != nil {
			t.Fatal(describe(err))
		}
		got := q.String()
		for _, want := range []string{"stdout: child out", "stderr: child err", "stdout: after <nil>"} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
		if !strings.HasSuffix(got, "stdout: after <nil>") {
			t.Errorf("the cell's own line is not last:\n%s", got)
		}
	})
}

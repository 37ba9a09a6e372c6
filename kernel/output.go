package kernel

import (
	"bytes"
	"regexp"
	"sync"
	"unicode/utf8"

	"github.com/kiln-ml/kiln/kernel/display"
)

// Stream names an output stream of a cell.
type Stream int

const (
	// Stdout is the standard output stream ("stdout" in Jupyter).
	Stdout Stream = 1
	// Stderr is the standard error stream ("stderr" in Jupyter).
	Stderr Stream = 2
)

// String returns the Jupyter stream name: "stdout" or "stderr".
func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Output receives what a cell produces while it runs. The session calls it
// from several goroutines but never concurrently, so implementations need no
// locking; calls should return quickly (buffer, coalesce and send
// elsewhere), as they hold up the writer.
//
// WriteStream gets text written to stdout or stderr, in order within each
// stream, as it is written: by fmt.Print* and log.* in interpreted code, by
// os.Stdout/os.Stderr used in interpreted code, and, when the session
// captures the process's file descriptors, by compiled code writing to fd 1
// and 2. Text never ends inside a UTF-8 sequence.
//
// Display gets display_data, update_display_data and clear_output requests
// (display.Display, display.New, Handle.Update, display.Clear).
//
// Output that arrives while no cell runs (goroutines started by an earlier
// cell) goes to the Output of the last cell that ran, as ipykernel does.
type Output interface {
	WriteStream(s Stream, text string)
	Display(m display.Message)
}

// OutputFuncs adapts two functions to an Output; a nil function drops what
// it would receive.
type OutputFuncs struct {
	OnStream  func(s Stream, text string)
	OnDisplay func(m display.Message)
}

// WriteStream calls o.OnStream if set.
func (o OutputFuncs) WriteStream(s Stream, text string) {
	if o.OnStream != nil {
		o.OnStream(s, text)
	}
}

// Display calls o.OnDisplay if set.
func (o OutputFuncs) Display(m display.Message) {
	if o.OnDisplay != nil {
		o.OnDisplay(m)
	}
}

// router sends output from every source to the running cell's Output (or
// the last one), one call at a time, holding back incomplete UTF-8
// sequences until the rest arrives.
type router struct {
	mu      sync.Mutex
	current Output // the running cell's, or the last one's, or nil
	pending [3][]byte
	// panicLines collects yaegi's "pos: panic: f(...)" stderr lines of the
	// running cell: they are the cell's traceback, not its output.
	panicLines []string
}

func (r *router) setOutput(out Output) {
	r.mu.Lock()
	r.flushLocked()
	r.current = out
	r.panicLines = nil
	r.mu.Unlock()
}

// write delivers p to stream s.
func (r *router) write(s Stream, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	buf := append(r.pending[s], p...)
	// Deliver up to the last complete UTF-8 sequence.
	n := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				n = i
			}
			break
		}
	}
	if n > 0 && r.current != nil {
		r.current.WriteStream(s, string(buf[:n]))
	}
	r.pending[s] = append(r.pending[s][:0], buf[n:]...)
}

// flushLocked delivers what write held back (invalid UTF-8 then goes out as
// it is; JSON encoding replaces it).
func (r *router) flushLocked() {
	for _, s := range []Stream{Stdout, Stderr} {
		if len(r.pending[s]) > 0 && r.current != nil {
			r.current.WriteStream(s, string(r.pending[s]))
		}
		r.pending[s] = r.pending[s][:0]
	}
}

func (r *router) flush() {
	r.mu.Lock()
	r.flushLocked()
	r.mu.Unlock()
}

func (r *router) display(m display.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
	if r.current != nil {
		r.current.Display(m)
	}
}

// takePanicLines returns and forgets the collected panic lines.
func (r *router) takePanicLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.panicLines
	r.panicLines = nil
	return l
}

// panicLine matches the line yaegi prints to the interpreter's stderr for
// each frame a panic unwinds ("cell3/_.go:2:7: panic: main.f(...)").
var panicLine = regexp.MustCompile(`^(\S*:)?\d+:\d+: panic: \S*\(\.\.\.\)\n$`)

// streamWriter is the io.Writer given to yaegi for one stream.
type streamWriter struct {
	r *router
	s Stream
}

func (w streamWriter) Write(p []byte) (int, error) {
	if w.s == Stderr && bytes.HasSuffix(p, []byte("(...)\n")) && panicLine.Match(p) {
		w.r.mu.Lock()
		w.r.panicLines = append(w.r.panicLines, string(bytes.TrimSuffix(p, []byte("\n"))))
		w.r.mu.Unlock()
		return len(p), nil
	}
	w.r.write(w.s, p)
	return len(p), nil
}

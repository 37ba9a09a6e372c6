package kernel

import (
	"bytes"
	"regexp"
	"sync"
	"time"
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
	// pipes carry output written to files (cells' os.Stdout and
	// os.Stderr, fd 1 and 2): see catchUp. Set before any cell runs.
	pipes []*streamPipe

	mu      sync.Mutex
	current Output // the running cell's, or the last one's, or nil
	gen     uint64 // counts setOutput calls: which Output current is
	pending [3][]byte
	// panicLines collects yaegi's "pos: panic: f(...)" stderr lines, with
	// the goroutine that printed them: they are the traceback of a panic
	// that goroutine is unwinding (the running cell's, or that of a
	// goroutine a cell started, see goroutine.go), not output.
	panicLines []panicLine
}

type panicLine struct {
	goroutine uint64
	text      string
}

// maxPanicLines bounds the panic lines nobody claims (a goroutine whose
// panic some compiled code recovered).
const maxPanicLines = 1000

func (r *router) setOutput(out Output) {
	r.mu.Lock()
	r.flushLocked()
	r.current = out
	r.gen++
	r.mu.Unlock()
}

// catchUp returns once the output written into the pipes so far has been
// delivered (or after a second, should a reader be stuck), so that what
// is delivered next comes after it. Callers do not hold r.mu.
func (r *router) catchUp() {
	var deadline time.Time
	for _, p := range r.pipes {
		if deadline.IsZero() {
			deadline = time.Now().Add(time.Second)
		}
		p.sync(deadline)
	}
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

// writeTo delivers text to stream s of out, an Output that was current at
// generation gen: to the current one, after what is pending, if it still
// is.
func (r *router) writeTo(out Output, gen uint64, s Stream, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen == r.gen {
		r.flushLocked()
		out = r.current
	}
	if out != nil {
		out.WriteStream(s, text)
	}
}

// currentOutput returns the current Output and its generation.
func (r *router) currentOutput() (Output, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current, r.gen
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
	r.catchUp()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
	if r.current != nil {
		r.current.Display(m)
	}
}

// takePanicLines returns and forgets the panic lines goroutine g printed.
func (r *router) takePanicLines(g uint64) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var mine []string
	keep := r.panicLines[:0]
	for _, l := range r.panicLines {
		if l.goroutine == g {
			mine = append(mine, l.text)
		} else {
			keep = append(keep, l)
		}
	}
	clear(r.panicLines[len(keep):])
	r.panicLines = keep
	return mine
}

// hasPanicLines reports whether any goroutine printed panic lines.
func (r *router) hasPanicLines() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.panicLines) > 0
}

// panicLineRE matches the line yaegi prints to the interpreter's stderr for
// each frame a panic unwinds ("cell3/_.go:2:7: panic: main.f(...)").
var panicLineRE = regexp.MustCompile(`^(\S*:)?\d+:\d+: panic: \S*\(\.\.\.\)\n$`)

// streamWriter is the io.Writer given to yaegi for one stream.
type streamWriter struct {
	r *router
	s Stream
}

func (w streamWriter) Write(p []byte) (int, error) {
	if w.s == Stderr && bytes.HasSuffix(p, []byte("(...)\n")) && panicLineRE.Match(p) {
		l := panicLine{goroutine: goroutineID(), text: string(bytes.TrimSuffix(p, []byte("\n")))}
		w.r.mu.Lock()
		if len(w.r.panicLines) >= maxPanicLines {
			w.r.panicLines = append(w.r.panicLines[:0], w.r.panicLines[1:]...)
		}
		w.r.panicLines = append(w.r.panicLines, l)
		w.r.mu.Unlock()
		return len(p), nil
	}
	w.r.catchUp()
	w.r.write(w.s, p)
	return len(p), nil
}

package kernel

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// Goroutines that cells start.
//
// In compiled Go a panic that no deferred recover stops ends the program;
// in the kernel it would end the kernel, losing every variable of the
// session, and yaegi runs a go statement on a plain goroutine with nothing
// to stop it. So the session rewrites every go statement of a cell
// (goRewriter, rewrite.go) so that its goroutine defers a recover, which
// hands a panic to goRecovered; that reports it, with the frames yaegi
// printed while the panic unwound them, as stderr output of the cell that
// started the goroutine, even when that cell has finished. The goroutine
// ends; the kernel and the other goroutines go on. The guard costs a
// go statement some 10 to 40 µs more (yaegi's closures and deferred
// calls), which matters only to cells that start goroutines by the
// thousand.
//
// Goroutines that compiled code starts (time.AfterFunc, a library's
// workers) and that run interpreted functions are beyond the rewrite: a
// panic there still ends the process, and the crash monitor says why
// (crash.go).

// goOrigin is where a go statement ran: the Output and the cell that were
// current then.
type goOrigin struct {
	out  Output
	gen  uint64
	cell int
	code string
	pos  string // the go statement's position ("cellN/_.go:line:col")
	// wrapped: the goroutine's call runs in a function literal of the
	// rewrite's, whose frame is left out of tracebacks.
	wrapped bool
}

// goOrigin records the running cell for a go statement at pos; cells call
// it as __kiln.Origin, evaluated by the go statement itself.
func (s *Session) goOrigin(pos string, wrapped bool) any {
	out, gen := s.router.currentOutput()
	o := &goOrigin{out: out, gen: gen, pos: pos, wrapped: wrapped}
	s.mu.Lock()
	o.cell = s.cells
	if r := s.running; r != nil {
		o.cell, o.code = r.cell, r.code
	}
	s.mu.Unlock()
	return o
}

// goRecovered receives what a goroutine recovered (cells call it as
// __kiln.Recovered, see goRewriter).
func (s *Session) goRecovered(origin, v any) {
	if v == nil {
		return
	}
	if rv, ok := v.(reflect.Value); ok && rv.IsValid() && rv.CanInterface() {
		v = rv.Interface() // yaegi panics with its reflect.Values
	}
	o, _ := origin.(*goOrigin)
	if o == nil {
		o = &goOrigin{gen: ^uint64(0)}
	}
	s.goroutinePanicked(o, v)
}

// goroutinePanicked reports v, the value a goroutine started at o panicked
// with, to o's Output after the output written before.
func (s *Session) goroutinePanicked(o *goOrigin, v any) {
	frames := s.router.takePanicLines(goroutineID())
	if o.wrapped && len(frames) > 0 {
		frames = frames[:len(frames)-1] // the outermost comes last
	}
	for i, f := range frames {
		pos, fn, ok := strings.Cut(strings.TrimSuffix(f, "(...)"), ": panic: ")
		if ok && strings.Trim(strings.ReplaceAll(strings.TrimPrefix(fn, "main."), "func", ""), ".") == "" {
			frames[i] = pos + ": panic: a function literal(...)"
		}
	}
	e := panicError(interp.Panic{Value: v}, frames, o.code, o.cell, 0)
	var b strings.Builder
	b.WriteString(e.Traceback[0])
	b.WriteString(" [recovered by the kernel: in a goroutine started")
	if o.cell > 0 {
		b.WriteString(" by cell " + strconv.Itoa(o.cell))
	}
	if o.pos != "" {
		b.WriteString(" at " + positions(o.pos, o.cell))
	}
	b.WriteString("]\n")
	for _, l := range e.Traceback[1:] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	// Point at the go statement too: a panic in the goroutine's own
	// function has no frame line of its own when it is the rewrite's.
	if line, col := firstLine(o.pos, o.cell); line > 0 {
		b.WriteString(fmt.Sprintf("    %d:%d: the go statement\n", line, col))
		for _, l := range excerpt(o.code, line, col) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	} else if o.pos != "" {
		b.WriteString("    " + positions(o.pos, o.cell) + ": the go statement\n")
	}
	b.WriteString("The goroutine ended; the kernel and its variables are intact.\n")
	s.router.catchUp()
	s.router.writeTo(o.out, o.gen, Stderr, b.String())
}

// goroutineID returns the running goroutine's number, as its stack trace
// gives it ("goroutine 18 [running]:").
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, _ = bytes.CutPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}

package kernel

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
	"github.com/traefik/yaegi/stdlib/unsafe"

	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/kernel/symbols"
	"github.com/kiln-ml/kiln/viz"
)

// sessionPackage is the import path of the session's own symbols inside the
// interpreter (bound as __kiln in every cell): Show receives the cell's
// result, Context returns the running cell's context.
const sessionPackage = "kiln/kernel/session"

// Options configures a Session. The zero value is a working configuration
// for tests and embedding; `kiln kernel` sets CaptureFDs.
type Options struct {
	// CaptureFDs redirects the process's file descriptors 1 and 2 into the
	// session, so that output of compiled code (Kiln's packages, cgo
	// libraries, runtime warnings) reaches the running cell. It is
	// process-wide: one session at a time, restored by Close. The
	// kernel's own logging should then go to OriginalStderr.
	CaptureFDs bool
	// MemoryLimit is the soft limit for the Go heap
	// (debug.SetMemoryLimit), in bytes. Zero means DefaultMemoryFraction
	// of the physical or container memory, unless GOMEMLIMIT is set;
	// negative leaves the limit alone. Unless negative, the CPU device's
	// tensor budget is lowered to CPUBudgetFraction of the limit.
	MemoryLimit int64
	// Unrestricted gives cells the sandboxed parts of the standard library
	// (os/exec, the real environment, os.Exit ending the kernel). By
	// default os.Exit panics and the environment is a copy (Env).
	Unrestricted bool
	// Env is the environment interpreted code sees in restricted mode;
	// nil means the kernel's own environment.
	Env []string
	// Args is os.Args as interpreted code sees it; nil means the kernel's.
	Args []string
	// Symbols are extra compiled packages made importable by cells, as
	// yaegi symbol tables (see package symbols).
	Symbols []interp.Exports
	// MaxStack is the most stack a goroutine may use, in bytes
	// (debug.SetMaxStack, process-wide). Zero means DefaultMaxStack;
	// negative leaves the limit alone. Infinite recursion in a cell ends
	// the process (see CrashMonitor); a lower limit makes that quick.
	MaxStack int
	// CrashMonitor, if set with CaptureFDs, is the command line of a
	// process that New starts to receive the Go runtime's report when the
	// kernel dies of a failure Go cannot recover from (stack overflow, a
	// panic in a goroutine, a concurrent map write, out of memory); it runs
	// RunCrashMonitor, which prints the report and a final line with the
	// reason on the kernel's original stderr. `kiln kernel run` sets it to
	// itself with the arguments "kernel crash-monitor". See crash.go.
	CrashMonitor []string
	// MaxMessage is the largest Jupyter message, in bytes, that Serve's
	// sockets accept (jupyter.Config.MaxMessage): zero means
	// jupyter.DefaultMaxMessage, negative no limit. `kiln kernel run` sets
	// it from -max-message or KILN_MAX_MESSAGE.
	MaxMessage int64
}

// DefaultMaxStack is the default Options.MaxStack: 128 MiB, an eighth of
// Go's own default. Interpreted recursion uses about 500 bytes of it per
// call, so cells may recurse some 200,000 calls deep, and runaway recursion
// ends the kernel in a second or two, where Go's 1 GB default takes several
// seconds and as much memory again.
const DefaultMaxStack = 128 << 20

// Session is an interactive Go session: a yaegi interpreter loaded with the
// standard library and Kiln's packages, which runs notebook cells one after
// the other, keeping their variables, functions and types. Execute, Complete,
// Inspect, IsComplete and Interrupt may be called from any goroutine;
// executions are serialised.
type Session struct {
	opts    Options
	interp  *interp.Interpreter
	know    *knowledge
	router  *router
	capture *fdCapture
	stdio   *cellStdio
	// cellStdout, cellStderr and cellStdin are os.Stdout, os.Stderr and
	// os.Stdin in cells (see stdio.go, stdin.go).
	cellStdout, cellStderr *os.File
	cellStdin              io.Reader
	sink                   *sessionSink
	prevSink               display.Sink
	noopProg               *interp.Program
	monitor                *crashMonitor
	charts                 *viz.Session // the chart library goes to the page once
	// bodyLine is the line of the cell-body statement running (see
	// markLines), for the tracebacks of panics.
	bodyLine atomic.Int64
	live     live      // training runs started by cells (live.go)
	vars     variables // the variables snapshot (variables.go)

	// evalMu: one evaluation at a time, and nothing else touches the
	// interpreter while it runs; guards names, lingering, envOut.
	evalMu sync.Mutex
	names  int // counter for names the session invents
	// lingering, when not nil, is closed when the goroutine of an
	// interrupted cell, still inside a compiled call, returns (see
	// interrupt.go).
	lingering chan struct{}
	envOut    []string // the interpreter's environment, as %env last read it
	stopFS    *stopFS  // the interpreter's source filesystem (interrupt.go)

	// nsMu guards the interpreter and its knowledge against %reset
	// replacing them while Complete or Inspect reads them.
	nsMu sync.RWMutex

	mu       sync.Mutex
	lastVars map[string]reflect.Value // the globals after the last cell (see lookGlobals)
	base     context.Context          // parent of every cell's ctx; replaced on Interrupt
	baseStop context.CancelFunc
	running  *run
	cells    int
	closed   bool
	stops    uint64        // how many times the interpreter was stopped
	stopNote chan struct{} // closed and replaced at each stop
}

// sessionSink routes display requests to the running cell's Output.
type sessionSink struct{ r *router }

func (k *sessionSink) Display(m display.Message) { k.r.display(m) }

// run is one Execute call.
type run struct {
	cell   int
	code   string
	ctx    context.Context
	cancel context.CancelCauseFunc
	result *display.Data
	// wrapped: the result came through one of yaegi's interface wrappers.
	wrapped bool
}

// New starts a session. It fails if CaptureFDs is set and another session
// already captures the file descriptors, or if the interpreter cannot load
// the symbol tables.
func New(opts Options) (*Session, error) {
	s := &Session{opts: opts, router: &router{}, stopNote: make(chan struct{}),
		stopFS: &stopFS{points: map[string]*stopPoint{}}}
	s.base, s.baseStop = context.WithCancel(context.Background())
	if opts.CaptureFDs {
		c, err := startCapture(s.router)
		if err != nil {
			return nil, err
		}
		s.capture = c
	}
	stdio, err := newCellStdio(s.router)
	if err != nil {
		s.release()
		return nil, err
	}
	s.stdio = stdio
	s.router.pipes = []*streamPipe{stdio.pipes[Stdout], stdio.pipes[Stderr]}
	if s.capture != nil {
		s.router.pipes = append(s.router.pipes, s.capture.pipes[Stdout], s.capture.pipes[Stderr])
	}
	if len(opts.CrashMonitor) > 0 && s.capture != nil {
		m, err := s.capture.startCrashMonitor(opts.CrashMonitor)
		if err != nil {
			// The kernel works without it; crash reports are only less clear.
			fmt.Fprintf(s.OriginalStderr(), "kiln kernel: %v (crash reports go to stderr only)\n", err)
		}
		s.monitor = m
	}
	if err := s.newInterpreter(); err != nil {
		s.release()
		return nil, err
	}
	s.keepGlobals()
	s.sink = &sessionSink{s.router}
	s.prevSink = display.SetSink(s.sink)
	s.charts = viz.NewSession()
	s.startLive()
	limitMemory(opts.MemoryLimit)
	limitStack(opts.MaxStack)
	return s, nil
}

// newInterpreter makes the session's interpreter, loaded with the standard
// library, Kiln's packages, the extra symbols and the prelude every cell
// sees. New calls it, and %reset calls it again for a fresh namespace.
func (s *Session) newInterpreter() error {
	// Set once: goroutines of cells before a %reset may still read them.
	if s.cellStdin == nil {
		s.cellStdout, s.cellStderr = s.stdio.files[Stdout], s.stdio.files[Stderr]
		s.cellStdin = &stdinReader{s: s}
	}
	stdin := s.cellStdin
	env := s.opts.Env
	if env == nil {
		env = os.Environ()
	}
	s.interp = interp.New(interp.Options{
		Stdin:        stdin,
		Stdout:       streamWriter{s.router, Stdout},
		Stderr:       streamWriter{s.router, Stderr},
		Env:          env,
		Args:         s.opts.Args,
		Unrestricted: s.opts.Unrestricted,
		// The host's files, as yaegi's default, plus the stop points.
		SourcecodeFilesystem: s.stopFS,
	})
	// yaegi makes channel operations cancellable only in code compiled
	// after its first *WithContext call, which arming a stop point is.
	s.armStop().disarm()

	show, text := reflect.ValueOf(s.showResult), reflect.ValueOf(s.showText)
	private := interp.Exports{
		sessionPackage + "/session": {
			"Show":      show,
			"Text":      text,
			"Context":   reflect.ValueOf(s.cellContext),
			"Display":   reflect.ValueOf(display.Display),
			"PutEnv":    reflect.ValueOf(func(env []string) { s.envOut = env }),
			"Line":      reflect.ValueOf(func(n int) { s.bodyLine.Store(int64(n)) }),
			"Origin":    reflect.ValueOf(s.goOrigin),
			"Recovered": reflect.ValueOf(s.goRecovered),
		},
		// Replaces stdlib's entries (and what YAEGI_SPECIAL_STDIO would
		// make of them): see stdio.go. os.Stdin stays an io.Reader that
		// asks the front end (stdin.go).
		"os/os": {
			"Stdout": reflect.ValueOf(&s.cellStdout).Elem(),
			"Stderr": reflect.ValueOf(&s.cellStderr).Elem(),
			"Stdin":  reflect.ValueOf(&s.cellStdin).Elem(),
		},
		// Replaces stdlib's entry: see sleep.
		"time/time": {"Sleep": reflect.ValueOf(s.sleep)},
		".": {"MapTypes": reflect.ValueOf(map[reflect.Value][]reflect.Type{
			show: symbols.RenderInterfaces,
			text: {reflect.TypeOf((*fmt.Stringer)(nil)).Elem()},
		})},
	}
	all := append([]interp.Exports{stdlib.Symbols, unsafe.Symbols, symbols.Symbols, private}, s.opts.Symbols...)
	for _, ex := range all {
		if err := s.interp.Use(ex); err != nil {
			return fmt.Errorf("kernel: load symbols: %w", err)
		}
	}
	s.know = newKnowledge(all...)
	return s.setup()
}

// setup declares what every cell sees: ctx, Display, __kiln, and the
// guard of go statements (goRewriter).
func (s *Session) setup() error {
	const prelude = `import __kiln "` + sessionPackage + `"
import __kilnos "os"
var ctx = __kiln.Context()
var Display = __kiln.Display
func ` + goGuard + `(o interface{}, f func()) {
	defer ` + goGuard + `Recover(o)
	f()
}
func ` + goGuard + `Recover(o interface{}) {
	if r := recover(); r != nil {
		__kiln.Recovered(o, r)
	}
}
`
	if err := s.evalInternal(prelude, true); err != nil {
		return fmt.Errorf("kernel: prelude: %w", err)
	}
	s.know.imports[reserved] = sessionPackage
	var err error
	if s.noopProg, err = s.compileInternal("_ = 0", false); err != nil {
		return fmt.Errorf("kernel: prelude: %w", err)
	}
	return nil
}

// globals returns the interpreter's global variables and constants.
// yaegi's Globals panics when a failed compile left symbols its frame does
// not hold yet; then the frame is grown (by running a no-op) and asked
// again. Callers hold evalMu and no interrupted cell lingers (nothing may
// run concurrently with the interpreter); others use lookGlobals.
func (s *Session) globals() map[string]reflect.Value {
	if g, ok := s.tryGlobals(); ok {
		return g
	}
	s.resync()
	g, _ := s.tryGlobals()
	return g
}

// lookGlobals returns the globals for completion and inspection, whether
// they are live, and a func to call when done with them. When no cell runs
// they are the interpreter's own (best effort: empty when yaegi cannot
// tell), read under evalMu, which stays held until done is called so that
// no cell changes them meanwhile. While a cell runs, or an interrupted one
// lingers, the interpreter cannot be read safely: they are then the
// globals as the last finished cell left them, good for their types only
// (their values may be changing under a running cell: not to be read).
func (s *Session) lookGlobals() (g map[string]reflect.Value, live bool, done func()) {
	if s.evalMu.TryLock() {
		if s.lingering == nil {
			g, _ := s.tryGlobals()
			return g, true, s.evalMu.Unlock
		}
		s.evalMu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastVars, false, func() {}
}

// keepGlobals records the globals for lookGlobals to use while a cell
// runs. Callers hold evalMu.
func (s *Session) keepGlobals() {
	if s.lingering != nil {
		return
	}
	g, _ := s.tryGlobals()
	s.mu.Lock()
	s.lastVars = g
	s.mu.Unlock()
}

func (s *Session) tryGlobals() (g map[string]reflect.Value, ok bool) {
	defer func() {
		if recover() != nil {
			g, ok = map[string]reflect.Value{}, false
		}
	}()
	return s.interp.Globals(), true
}

// resync grows the interpreter's global frame to the symbols it knows,
// which a failed compile leaves behind.
func (s *Session) resync() {
	defer func() { _ = recover() }()
	if s.noopProg != nil {
		_, _ = s.interp.Execute(s.noopProg)
	}
}

// compileInternal compiles code the session writes itself.
func (s *Session) compileInternal(code string, decl bool) (*interp.Program, error) {
	c := chunk{decl: decl, text: code, line: 1, col: 1}
	p, err := parseChunk(s.interp.FileSet(), 0, c)
	if err != nil {
		return nil, err
	}
	prog, err, _ := s.compile(p.node())
	return prog, err
}

func (s *Session) evalInternal(code string, decl bool) error {
	prog, err := s.compileInternal(code, decl)
	if err != nil {
		return err
	}
	_, err = s.interp.Execute(prog)
	return err
}

// Execute runs one cell and returns its result, the MIME bundle of its last
// expression (nil when the cell shows nothing), or an *Error. While it runs,
// the cell's output goes to out (which may be nil). Cancelling ctx
// interrupts the cell like Interrupt.
//
// A cell mixes imports, declarations and statements freely; variables,
// functions and types persist into later cells and may be redefined there.
// The cell sees `ctx`, a context.Context cancelled when the cell is
// interrupted, and `Display`, display.Display. Packages of the standard
// library and of Kiln are imported automatically on first use. A cell
// consisting of %help shows the interpreter's limits.
//
// The result is shown when the last statement is an expression: `x` shows
// x, a call shows the values it returns (not those of fmt.Print*), while
// `x := 21` or a call returning nothing shows nothing.
func (s *Session) Execute(ctx context.Context, code string, out Output) (*display.Data, error) {
	if out == nil {
		out = OutputFuncs{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	s.evalMu.Lock()
	defer s.evalMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	blank := strings.TrimSpace(code) == ""
	if !blank {
		s.cells++
	}
	cellCtx, cancel := context.WithCancelCause(s.base)
	r := &run{cell: s.cells, code: code, ctx: cellCtx, cancel: cancel}
	s.running = r
	s.mu.Unlock()
	s.beginCell(r)

	stopAfter := context.AfterFunc(ctx, func() { cancel(ErrInterrupted) })
	s.router.setOutput(out)
	defer func() {
		stopAfter()
		s.drain()
		s.keepGlobals()
		s.endCell()
		s.mu.Lock()
		s.running = nil
		s.mu.Unlock()
	}()
	if blank {
		return nil, nil
	}
	if magic, ok := isMagic(code); ok {
		return s.magic(r, out, magic)
	}
	if err := s.awaitInterrupted(r, out); err != nil {
		return nil, err
	}
	return s.runCell(r)
}

// drain hands everything the cell wrote to its Output: what is in the
// pipes (stdio.go, capture.go), then what the router holds back.
func (s *Session) drain() {
	s.router.catchUp()
	s.router.flush()
}

// Interrupt stops the running cell: interpreted code stops at once, and
// Execute returns an *Error wrapping ErrInterrupted. Every cell's ctx is
// cancelled, so compiled Kiln calls that take it stop too. A compiled call
// that does not watch ctx (time.Sleep, a long op) cannot be pre-empted:
// Execute still returns at once, the call runs on in the background, and
// the next cell waits until it returns, so that no two cells ever run at
// the same time (see interrupt.go). Goroutines that earlier cells started
// are stopped too; when no cell runs, Interrupt stops them by itself.
// Variables keep the values they had; the session stays usable.
//
// When the running cell has training runs going (train.Fit, Resume),
// Interrupt first stops them gracefully and returns: each finishes its
// optimizer step and writes its final checkpoint, and then the cell is
// interrupted as above. A second Interrupt, or LiveGrace without the runs
// ending, interrupts the cell at once (see live.go).
func (s *Session) Interrupt() {
	s.mu.Lock()
	r := s.running
	s.mu.Unlock()
	if r != nil && s.stopRunsGracefully(r) {
		return
	}
	s.interruptNow(nil)
}

// interruptNow interrupts the running cell at once; with only non-nil, only
// if that cell is still the one running.
func (s *Session) interruptNow(only *run) {
	s.mu.Lock()
	if only != nil && s.running != only {
		s.mu.Unlock()
		return
	}
	s.baseStop()
	s.base, s.baseStop = context.WithCancel(context.Background())
	r := s.running
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	if r != nil {
		r.cancel(ErrInterrupted)
		return
	}
	// No cell runs: stop the goroutines of earlier cells. Completion and
	// inspection hold evalMu for a moment; a cell that starts meanwhile
	// is not for this interrupt to stop.
	for deadline := time.Now().Add(time.Second); ; {
		if s.evalMu.TryLock() {
			s.stopGoroutines()
			s.evalMu.Unlock()
			return
		}
		s.mu.Lock()
		busy := s.running != nil || s.closed
		s.mu.Unlock()
		if busy || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Close stops the session: it interrupts the running cell, stops
// interpreted goroutines, restores the file descriptors and the display
// sink. The process keeps any compiled call still running. Close is
// idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.baseStop()
	if r := s.running; r != nil {
		r.cancel(ErrClosed)
	}
	s.mu.Unlock()
	s.evalMu.Lock()
	defer s.evalMu.Unlock()
	s.stopGoroutines()
	// Put the previous sink back, unless another session took over since.
	if cur := display.SetSink(s.prevSink); cur != display.Sink(s.sink) {
		display.SetSink(cur)
	}
	s.stopLive()
	s.release()
	return nil
}

func (s *Session) release() {
	if s.monitor != nil {
		var fallback *os.File
		if s.capture != nil {
			fallback = s.capture.orig[Stderr]
		}
		s.monitor.close(fallback)
		s.monitor = nil
	}
	if s.stdio != nil {
		s.stdio.close()
		s.stdio = nil
	}
	if s.capture != nil {
		s.capture.close()
		s.capture = nil
	}
	s.router.setOutput(nil)
}

// OriginalStdout returns the process's standard output as it was before the
// session captured it (os.Stdout when it does not capture); valid until
// Close.
func (s *Session) OriginalStdout() *os.File {
	if s.capture != nil {
		return s.capture.orig[Stdout]
	}
	return os.Stdout
}

// OriginalStderr returns the process's standard error as it was before the
// session captured it (os.Stderr when it does not capture), for the
// kernel's own logging; valid until Close.
func (s *Session) OriginalStderr() *os.File {
	if s.capture != nil {
		return s.capture.orig[Stderr]
	}
	return os.Stderr
}

// cellContext returns the running cell's context (the session's base
// context between cells).
func (s *Session) cellContext() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		return s.running.ctx
	}
	return s.base
}

// setContext points the cells' global ctx at the running cell's context.
func (s *Session) setContext(ctx context.Context) {
	v, ok := s.globals()["ctx"]
	if !ok || !v.CanSet() || !reflect.TypeOf(ctx).AssignableTo(v.Type()) {
		return // the cells redefined ctx; theirs wins
	}
	v.Set(reflect.ValueOf(ctx))
}

// sleep is time.Sleep as cells see it: it returns early when the kernel is
// interrupted. time.Sleep itself is a compiled call that nothing can cut
// short, so an interrupted time.Sleep(time.Hour) would make the next cell
// wait an hour (see interrupt.go). Returning early is harmless: the
// interrupt stops the interpreted code around the call, and sleep returns
// only once the interpreter has been stopped, so that no statement after
// the call runs.
func (s *Session) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	gen := s.stops
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return
	case <-s.cellContext().Done():
	}
	// Should the interpreter not be stopped (an interrupt that found no
	// cell to stop), the call returns after a second.
	deadline := time.After(time.Second)
	for {
		s.mu.Lock()
		stopped, note := s.stops > gen, s.stopNote
		s.mu.Unlock()
		if stopped {
			return
		}
		select {
		case <-note:
		case <-deadline:
			return
		}
	}
}

// noteStop records that the interpreter stopped its goroutines.
func (s *Session) noteStop() {
	s.mu.Lock()
	s.stops++
	close(s.stopNote)
	s.stopNote = make(chan struct{})
	s.mu.Unlock()
}

// showResult receives the values of a cell's last expression.
func (s *Session) showResult(vs ...any) {
	d := resultBundle(vs)
	if len(vs) == 1 && vs[0] != nil {
		if rich := s.richBundle(vs[0]); rich != nil {
			d = rich
		}
	}
	wrapped := len(vs) == 1 && isWrapper(vs[0]) && !givesText(vs[0])
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.running; r != nil {
		r.result = d
		r.wrapped = wrapped
	}
}

// givesText reports whether v's own rendering includes text/plain.
func givesText(v any) bool {
	switch x := v.(type) {
	case fmt.Stringer:
		return true
	case display.MIMEr:
		_, ok := x.MIME()[display.MIMETypeText]
		return ok
	case display.SimpleRenderer:
		_, ok := x.SimpleRender()[display.MIMETypeText]
		return ok
	case display.Renderer:
		_, ok := x.Render().Data[display.MIMETypeText]
		return ok
	}
	return false
}

// isWrapper reports whether v is one of the interface wrappers yaegi
// builds for interpreted values (see display.Unwrap).
func isWrapper(v any) bool {
	t := reflect.TypeOf(v)
	return t != nil && t.Kind() == reflect.Struct && strings.HasPrefix(t.Name(), "_") &&
		t.NumField() > 0 && t.Field(0).Name == "IValue"
}

// showText receives the value of a cell's last expression once more, as
// itself or wrapped as a fmt.Stringer, for its text/plain form: the wrapper
// yaegi built for showResult does not always hold the value (a struct
// without methods gets replaced by its last field).
func (s *Session) showText(v any) {
	text := display.Text(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.running; r != nil && r.wrapped && r.result != nil {
		r.result.Data[display.MIMETypeText] = text
	}
}

// resultBundle renders the values of an expression: one value fully; for
// several, the one rich value when all others are nil (a (value, error)
// result that succeeded), else their texts. Nothing is shown when all are
// nil.
func resultBundle(vs []any) *display.Data {
	nonNil, rich := 0, -1
	for i, v := range vs {
		if v != nil {
			nonNil++
			if display.IsRich(v) {
				rich = i
			}
		}
	}
	switch {
	case nonNil == 0:
		return nil
	case len(vs) == 1:
		d := display.Render(vs[0])
		return &d
	case nonNil == 1 && rich >= 0:
		d := display.Render(vs[rich])
		return &d
	}
	texts := make([]string, len(vs))
	for i, v := range vs {
		if v == nil {
			texts[i] = "<nil>"
		} else {
			texts[i] = display.Text(v)
		}
	}
	return &display.Data{Data: display.MIMEMap{display.MIMETypeText: strings.Join(texts, " ")}}
}

// Package kernel is Kiln's interactive engine: a Go session, interpreted by
// yaegi (github.com/traefik/yaegi v0.16.1), in which notebook cells run one
// after the other against the standard library and Kiln's compiled
// packages. It is independent of any wire protocol: package kernel/jupyter
// puts it behind Jupyter's, and the workbench talks to it through that.
//
//	s, err := kernel.New(kernel.Options{CaptureFDs: true})
//	if err != nil { … }
//	defer s.Close()
//	out := kernel.OutputFuncs{
//		OnStream:  func(st kernel.Stream, text string) { publishStream(st.String(), text) },
//		OnDisplay: func(m display.Message) { publishDisplay(m) },
//	}
//	res, err := s.Execute(ctx, "x := tensor.Ones(tensor.CPU(), 2, 2)\nx.Sum().Item()", out)
//	// res.Data["text/plain"] == "4"; err is nil or a *kernel.Error
//
// # A cell's way through the session
//
// The files follow the phases. cell.go splits a cell into runs of
// declarations and runs of statements (yaegi parses a source as one or the
// other) and parses each with a //line directive, so that every position
// yaegi reports is in the cell's own lines. evaluate.go drives a chunk
// through the rest: imports.go imports packages a cell uses without
// importing them and turns repeated imports into no-ops; redefine.go gives
// redefined types (and types whose methods are redefined) a new version and
// recompiles the callers of redefined functions; rewrite.go rewrites
// range-over-int loops (yaegi v0.16.1 panics on them), puts go statements
// under a guard that recovers their goroutine's panic (goroutine.go) and
// hands the last expression to the session to show; then the chunk is
// compiled, yaegi's compiler panics turned into errors and unsure rewrites
// retried, and run under the cell's context. infer.go types expressions
// just enough for those decisions and for completion; knowledge.go
// remembers what earlier cells declared. output.go, stdio.go (cells'
// os.Stdout and os.Stderr), capture.go (fd 1 and 2) and streampipe.go
// bring stdout, stderr and display requests to the running cell's Output,
// in order and all before the cell ends, without a fixed wait; interrupt.go
// stops cells; complete.go answers completion, inspection and is-complete
// requests;
// help.go is %help; crash.go is the crash monitor; rich.go and live.go are
// below. rewrite.go also marks each statement of a cell body with its line,
// so that a panic's traceback says "N: in the cell" and quotes the line.
//
// # Live training
//
// While a session is open it is the process's train.RunHook (live.go):
// every train Fit or Resume a cell starts shows a viz.LiveDashboard in the
// cell's output, updated in place under one display_id at most 4 times a
// second, each series thinned to 500 points until the final update, which
// holds every point; the chart library goes out once per session, in an
// output of its own. Interrupt stops the cell's runs gracefully first (each
// finishes its step, writes its final checkpoint and says where), then the
// cell; a second Interrupt, or LiveGrace, interrupts at once.
//
// # Rich results and MapTypes
//
// A cell's last value is shown through viz where viz draws it (rich.go):
// viz.For's charts, boards, graphs, device lists, run results and
// confusion matrices; tensors as a table with their statistics and, above
// HistogramAbove elements, a histogram; a device as a table; models (an
// nn.Module, or a struct holding parameters, cell-declared ones included)
// as a module tree with parameter counts. Other values go through
// display.Render: values with
// HTML() string, MIME() map[string]string (or gophernotes' rendering
// methods) are shown in those formats plus text/plain. yaegi passes values
// of types declared in cells to compiled code without methods unless told,
// per compiled function, which interfaces to wrap them in: package symbols
// keeps those MapTypes entries and explains how to add one.
//
// # What it does not do
//
// It does not speak Jupyter's protocol, read stdin unless the Output can ask for input (see InputOutput; otherwise cells get EOF), import
// packages other than the standard library, Kiln's and those passed in
// Options.Symbols (yaegi's source imports are not wired up), or protect the
// process from what ends any Go program: a stack overflow, a concurrent map
// write, running out of memory, a panic in a goroutine that compiled code
// started (a go statement's goroutine is guarded: see goroutine.go). The
// kernel process is meant to be restarted then; with Options.CrashMonitor
// the last line of its stderr says why it ended. %help lists the
// interpreter's other limits.
package kernel

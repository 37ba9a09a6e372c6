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
// range-over-int loops (yaegi v0.16.1 panics on them) and hands the last
// expression to the session to show; then the chunk is compiled, yaegi's
// compiler panics turned into errors and unsure rewrites retried, and run
// under the cell's context. infer.go types expressions just enough for
// those decisions and for completion; knowledge.go remembers what earlier
// cells declared. output.go and capture.go bring stdout, stderr and display
// requests to the running cell's Output; interrupt.go stops cells;
// complete.go answers completion, inspection and is-complete requests;
// help.go is %help; crash.go is the crash monitor.
//
// # Rich results and MapTypes
//
// A cell's last value is shown through display.Render: values with
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
// process from what ends any Go program: a panic in a goroutine a cell
// started, a stack overflow, running out of memory. The kernel process is
// meant to be restarted then; with Options.CrashMonitor the last line of
// its stderr says why it ended. %help lists the interpreter's other limits.
package kernel

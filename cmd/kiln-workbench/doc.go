// Command kiln-workbench is Kiln's desktop workbench: a Wails window showing
// the workbench UI (package frontend) on top of the workbench engine
// (package workbench), which starts and supervises `kiln kernel` processes.
// Cells never run inside this process; a cell that kills its kernel costs a
// kernel restart, never the window.
//
// It is the only Kiln binary that uses cgo (GTK and WebKitGTK through Wails),
// so its Wails code sits behind the `desktop` build tag:
//
//	make desktop
//	# or: CGO_ENABLED=1 go build -tags desktop,production,webkit2_41 ./cmd/kiln-workbench
//
// A build without the tag (such as `go build ./...`) compiles a stub that
// says how to build the app and exits with status 2. The same UI is served
// to a browser by the pure-Go `kiln workbench --browser`.
//
// Flags:
//
//	--root DIR        notebooks are opened and saved under DIR (default ".")
//	--runs DIR        a directory of run directories to follow (repeatable; default "runs")
//	--existing CONN   attach to a running kernel by its connection file
//	--kiln PATH       the kiln binary that runs kernels (default: beside this
//	                  executable, then on PATH)
//	--self-test       exercise the bound methods and events from the page, print
//	                  the verdict and exit 0 (pass) or 1 (fail)
//	--self-test-timeout D  how long the self-test may take (default 2m)
//	--self-test-hold D     keep the window open D after the verdict (for a screenshot)
//
// The page talks to Go through one bound method, App.Call(method, paramsJSON),
// which forwards to the engine's Server.Call and returns the result as JSON.
// Live updates arrive as Wails events named "workbench" whose argument is
// {"topic": ..., "data": ...}.
package main

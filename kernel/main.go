package kernel

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"

	"github.com/traefik/yaegi/interp"
)

// Main runs the kernel side of a kernel binary: `run -f CONNECTION_FILE`
// serves Jupyter on the connection file's sockets; `crash-monitor` is the
// helper process run starts (see Options.CrashMonitor). args are what
// follows the program's "kernel" argument; symbols are extra compiled
// packages cells may import (a custom kernel's, see `kiln kernel build`).
// `kiln kernel` and every binary `kiln kernel build` makes call it.
func Main(args []string, symbols ...interp.Exports) error {
	if len(args) == 0 {
		return errors.New("usage: kernel run -f CONNECTION_FILE")
	}
	switch args[0] {
	case "run":
		fs := flag.NewFlagSet("kernel run", flag.ContinueOnError)
		conn := fs.String("f", "", "connection file written by the Jupyter front end")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *conn == "" && fs.NArg() == 1 {
			*conn = fs.Arg(0)
		}
		if *conn == "" {
			return errors.New("kernel run: a connection file is required (-f FILE)")
		}
		opts := Options{CaptureFDs: true, Symbols: symbols}
		if exe, err := os.Executable(); err == nil {
			opts.CrashMonitor = []string{exe, "kernel", "crash-monitor"}
		}
		return Serve(context.Background(), *conn, opts)
	case "crash-monitor":
		// Started by run; an interrupt meant for the kernel's process
		// group is not for it.
		signal.Ignore(os.Interrupt)
		return RunCrashMonitor(os.Stdin, os.NewFile(3, "kernel stderr pipe"), os.Stderr)
	}
	return errors.New("kernel: unknown subcommand " + args[0] + " (want run or crash-monitor)")
}

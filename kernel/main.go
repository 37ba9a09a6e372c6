package kernel

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// Main runs the kernel side of a kernel binary: `run -f CONNECTION_FILE`
// serves Jupyter on the connection file's sockets (`-max-message SIZE`, or
// KILN_MAX_MESSAGE, sets the largest message they accept, default 64M); `crash-monitor` is the
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
		maxMessage := fs.String("max-message", os.Getenv("KILN_MAX_MESSAGE"),
			"largest message the kernel accepts, in bytes or with a K, M or G suffix (binary units); "+
				"0 or empty: 64M; negative: no limit (default $KILN_MAX_MESSAGE)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		limit, err := parseSize(*maxMessage)
		if err != nil {
			return fmt.Errorf("kernel run: -max-message (KILN_MAX_MESSAGE): %w", err)
		}
		if *conn == "" && fs.NArg() == 1 {
			*conn = fs.Arg(0)
		}
		if *conn == "" {
			return errors.New("kernel run: a connection file is required (-f FILE)")
		}
		opts := Options{CaptureFDs: true, Symbols: symbols, MaxMessage: limit}
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

// parseSize reads a size in bytes, with an optional K, M or G suffix (KiB,
// MiB, GiB); empty means 0.
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	shift := 0
	switch strings.ToUpper(v[len(v)-1:]) {
	case "K":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	}
	if shift > 0 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q: want bytes, or a number with K, M or G", v)
	}
	if n > math.MaxInt64>>shift || n < math.MinInt64>>shift {
		return 0, fmt.Errorf("size %q too large", v)
	}
	return n << shift, nil
}

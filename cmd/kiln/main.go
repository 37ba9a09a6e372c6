package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// version is the Kiln release; set at link time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// A command is one `kiln NAME` subcommand. The table of them, commands,
// drives dispatch, `kiln help` and the command list; doc.go repeats it for
// go doc (TestDocListsEveryCommand checks that they agree).
type command struct {
	name    string
	summary string   // one line for the command list: what it does, lower case, no period
	usage   []string // its forms, each without the leading "kiln "
	doc     string   // what it does, in paragraphs, for `kiln help NAME`
	// subcommands are words that may come before a help flag: `kiln onnx gen -h`.
	subcommands []string
	// flagsOnly says every argument is a flag or a flag's value, so a help
	// flag anywhere asks for help (`kiln demo -epochs 3 -h`).
	flagsOnly bool
	// flags writes the command's flags as flag.PrintDefaults does; nil
	// for a command without flags.
	flags func(w io.Writer)
	// run runs the command with the arguments after its name. It returns
	// errHelp for a help flag (main prints the help), a usageError for
	// arguments it cannot make sense of, and other errors for failures.
	run func(args []string, stdout, stderr io.Writer) error
}

// commands lists every command, in the order `kiln help` shows them. It is
// set in init because `kiln help` itself reads it.
var commands []*command

func init() {
	commands = []*command{
		{
			name:    "demo",
			summary: "train an MLP on MNIST with a live dashboard, or a small XOR model",
			usage: []string{
				"demo [-epochs N] [-batch N] [-lr X] [-subset N] [-device NAME] [-run-dir DIR] [-resume DIR] [-np N]",
				"demo -xor [-steps N] [-device NAME]",
			},
			doc: `Demo trains a 784-256-128-10 MLP on MNIST (two epochs, AdamW, cosine
schedule) with a live dashboard on a terminal (q stops after the current
step) and log lines otherwise. It writes config.json, events.jsonl and
checkpoints to the run directory (default runs/mnist-mlp-<time>) and prints
the test accuracy and each epoch's time. With -np N it trains data-parallel
on N processes under Open MPI's mpirun (see 'kiln help launch').

With -xor it trains a two-layer perceptron on XOR-like data, written with
tensors alone, and prints the loss.

The device is -device, else KILN_DEVICE, else the best one detected (see
'kiln devices').`,
			flags:     flagsPrinted(func(w io.Writer) { _ = demo(context.Background(), []string{"-h"}, w) }),
			flagsOnly: true,
			run:       func(args []string, _, _ io.Writer) error { return runDemo(args) },
		},
		{
			name:    "devices",
			summary: "list the backends, their devices and the default device",
			usage:   []string{"devices"},
			doc: `Devices lists every backend compiled into kiln (cuda, cpu, strict, …) with
its devices: name, memory, cores or multiprocessors. A backend without
devices is listed with the reason (no NVIDIA driver, no GPU, a library
missing, or not compiled in). The default device, the one used when a
program names none, is marked with why it was chosen.

KILN_DEVICE names the default device (cpu, cuda, cuda:N, strict). If it
names nothing usable, devices prints the list and fails with the reason,
as every program asking for the default device would.`,
			run: devicesCommand,
		},
		{
			name:    "export",
			summary: "write a run's or checkpoint's model weights to one file",
			usage: []string{
				"export RUN_OR_CHECKPOINT [--format safetensors|gguf|onnx] [--gguf-type T] [--model GRAPH.onnx] -o FILE",
			},
			doc: `Export writes the model weights of a checkpoint directory, or of a run
directory's best checkpoint (checkpoints/best, else checkpoints/last, else
the newest checkpoints/*), to one file after verifying the checkpoint's
manifest: safetensors with PyTorch's names and layouts (the default), GGUF
(f32, f16, bf16 or q8_0 tensors) or ONNX (the weights put into the graph
they were imported from, given with --model).`,
			flags: printDefaults(func(fs *flag.FlagSet) { exportFlags(fs) }),
			run:   exportCommand,
		},
		{
			name:    "help",
			summary: "show the commands, or what one command does and its flags",
			usage:   []string{"help [COMMAND]"},
			doc: `Help lists kiln's commands, or shows how to use one: its forms, what it
does and its flags. 'kiln COMMAND -h' shows the same.`,
			run: helpCommand,
		},
		{
			name:    "inspect",
			summary: "show what a model file, checkpoint or run directory holds",
			usage:   []string{"inspect [--json] FILE_OR_DIRECTORY"},
			doc: `Inspect prints what a file or directory holds:

  a safetensors file   metadata; each tensor's name, dtype, shape and size
  a GGUF file          metadata; each tensor's ggml type, shape and size
  an ONNX model        opsets, inputs, outputs, operators, initializers
  a checkpoint         epoch, step, metrics, verified files, and the
                       model's and the optimizer's tensors
  a run directory      whether its process lives (running, completed,
                       stopped, failed, killed or stale; its pid and last
                       heartbeat), then the checkpoint 'kiln export' would use

A file's format is recognised from its first bytes, not its name.`,
			flags: printDefaults(func(fs *flag.FlagSet) { inspectFlags(fs) }),
			run:   inspectCommand,
		},
		{
			name:    "kernel",
			summary: "run, install or build the Jupyter kernel",
			usage: []string{
				"kernel run -f CONNECTION_FILE [-max-message SIZE]",
				"kernel install [--user | --prefix DIR] [--name NAME] [--display-name TEXT]",
				"kernel uninstall [--prefix DIR] [--name NAME]",
				"kernel build --with MODULE[@VERSION][/PKG]... [-o BIN] [--install [--prefix DIR] [--name NAME]]",
			},
			doc: `Kernel runs Kiln's Go kernel for Jupyter, or manages its kernelspec.

  run        serve the kernel on the connection file a front end wrote
             (-f FILE); -max-message SIZE (or KILN_MAX_MESSAGE) bounds a
             message, in bytes or with a K, M or G suffix (default 64M,
             negative for no limit). Front ends start it; people rarely do.
  install    write a kernelspec that starts this kiln binary, for the user
             (the default) or under --prefix (a virtualenv, say)
  uninstall  remove that kernelspec
  build      build a kernel binary whose cells may also import the packages
             named with --with (repeatable); -o BIN names it (default
             kiln-kernel), --install installs its kernelspec (named by
             --name, default kiln-custom, under --prefix if given)`,
			subcommands: []string{"run", "install", "uninstall", "build"},
			flags: func(w io.Writer) {
				fmt.Fprintln(w, "Flags of install and uninstall:")
				printDefaults(func(fs *flag.FlagSet) { kernelInstallFlags(fs) })(w)
			},
			run: kernelCommand,
		},
		{
			name:    "launch",
			summary: "run a program as N ranks under Open MPI's mpirun",
			usage:   []string{"launch -n N [--hosts H1,H2:SLOTS] [-x VAR]... [--mpirun PATH] [--dry-run] PROGRAM [ARGS...]"},
			doc: `Launch runs PROGRAM as N ranks with Open MPI's mpirun (Debian: apt-get
install openmpi-bin); a Kiln program's dist.Init finds its rank. As root it
adds --allow-run-as-root; with more ranks than cores on one machine,
--oversubscribe --bind-to none. Arguments after PROGRAM are PROGRAM's.`,
			flags: flagsPrinted(func(w io.Writer) { _ = launchCommand(context.Background(), []string{"-h"}, nil, w, w) }),
			run:   func(args []string, _, _ io.Writer) error { return runLaunch(args) },
		},
		{
			name:    "onnx",
			summary: "generate a Go package from an ONNX model",
			usage:   []string{"onnx gen MODEL.onnx -o DIR [--package NAME]"},
			doc: `Gen writes DIR/model.go, a Go package running the model with Kiln
tensor ops (Model, New, Load, Forward, Compute, Run), and
DIR/weights.safetensors. From a //go:generate line:

  //go:generate go run github.com/kiln-ml/kiln/cmd/kiln onnx gen model.onnx -o .`,
			subcommands: []string{"gen"},
			flags:       flagsPrinted(func(w io.Writer) { _ = onnxCommand([]string{"gen", "-h"}, w, w) }),
			run:         func(args []string, _, _ io.Writer) error { return runONNX(args) },
		},
		{
			name:    "serve",
			summary: "serve this machine's devices to remote clients over gRPC",
			usage:   []string{"serve [--addr HOST:PORT] [--token TOKEN] [--tls-cert FILE --tls-key FILE | --insecure] [--max-session-bytes N]"},
			doc: `Serve lets programs elsewhere use this machine's devices: a client opening
remote://HOST:PORT/cpu:0 (or /cuda:1, any device 'kiln devices' lists here)
runs its tensors there, its buffers living on this machine. Clients send
the token (KILN_REMOTE_TOKEN), given with --token or generated and printed;
a wrong one is refused. A --addr beyond the loopback interface needs TLS
(--tls-cert and --tls-key; clients trust the certificate or its CA through
KILN_REMOTE_CA) or --insecure. A client's buffers are freed when it
disconnects; clients cannot reach each other's buffers.`,
			flags: printDefaults(func(fs *flag.FlagSet) { serveFlags(fs) }),
			run:   serveCommand,
		},
		{
			name:    "version",
			summary: "print kiln's version, Go version, platform, backends and CPU features",
			usage:   []string{"version", "--version"},
			doc: `Version prints the Kiln release, the module version and the VCS revision
the binary was built from (when Go recorded them), the Go version and
platform, the backends compiled in, and the CPU features the CPU backend's
assembly kernels are chosen by.`,
			run: versionCommand,
		},
		{
			name:    "workbench",
			summary: "open the workbench: the desktop app, or served to a browser",
			usage: []string{
				"workbench [--browser] [--addr HOST:PORT] [--root DIR] [--runs DIR]... [--existing CONN]",
				" [--allow-host NAME]... [--tls-cert FILE --tls-key FILE | --insecure]",
			},
			doc: `Workbench opens the notebooks and training runs under --root in the desktop
app (kiln-workbench, found beside kiln or on PATH) when there is a display,
and otherwise, or with --browser, serves the same UI to a browser from this
process, printing its URL with an access token. A --addr beyond the
loopback interface needs TLS (--tls-cert and --tls-key) or --insecure.
Besides the --runs folders it lists every run in the per-user run registry
(every Fit or Resume with a RunDir registers there, from a notebook, kiln
demo or any program; KILN_RUN_REGISTRY moves it, or turns it off with off).`,
			flags: printDefaults(func(fs *flag.FlagSet) { workbenchFlags(fs) }),
			run:   workbenchCommand,
		},
	}
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs kiln with args (without the program name) and returns the
// exit status: 0, 1 when the command failed, 2 for a usage error (no
// command, an unknown one, bad flags or arguments), as the go command does.
func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printCommandList(stderr)
		return 2
	}
	switch {
	case isHelpFlag(args[0]):
		printCommandList(stdout)
		return 0
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "kiln %s: unknown command\n", args[0])
		if s := suggest(args[0]); s != "" {
			fmt.Fprintf(stderr, "Did you mean 'kiln %s'?\n", s)
		}
		fmt.Fprintln(stderr, "Run 'kiln help' for usage.")
		return 2
	}
	args = args[1:]
	if wantsHelp(c, args) {
		printCommandHelp(stdout, c)
		return 0
	}
	err := c.run(args, stdout, stderr)
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		printCommandHelp(stdout, c)
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0 // the command's own FlagSet printed its usage
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "kiln:", err)
		printUsageLines(stderr, c)
		fmt.Fprintf(stderr, "Run 'kiln help %s' for details.\n", c.name)
		return 2
	}
	fmt.Fprintln(stderr, "kiln:", err)
	return 1
}

// isHelpFlag reports whether arg asks for help as the flag package
// understands it.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// wantsHelp reports whether args, the arguments after c's name, ask for
// c's help before any other argument (`kiln demo -h`, `kiln onnx gen -h`),
// or anywhere for a command of flags only. A help flag further on is the
// command's to see (it returns errHelp), or its program's (`kiln launch -n
// 2 prog -h`).
func wantsHelp(c *command, args []string) bool {
	if len(args) > 0 && isHelpFlag(args[0]) {
		return true
	}
	if c.flagsOnly {
		for _, a := range args {
			if a == "--" {
				break
			}
			if isHelpFlag(a) {
				return true
			}
		}
	}
	if len(args) > 1 && isHelpFlag(args[1]) {
		for _, s := range c.subcommands {
			if args[0] == s {
				return true
			}
		}
	}
	return false
}

// errHelp is what a command returns when its flags ask for help; main
// prints the command's help on stdout and exits 0. (A bare flag.ErrHelp
// comes from a FlagSet that printed its own usage.)
var errHelp = fmt.Errorf("%w (kiln prints the command's help)", flag.ErrHelp)

// usageError is an error in a command's arguments: main prints it with
// the command's usage and exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// commandFlagSet returns the FlagSet of a kiln command. It prints nothing
// itself: parseFlags turns -h into errHelp and a bad flag into a
// usageError, which main reports with the command's help or usage.
func commandFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with fs, flags and positional arguments in any
// order (see parseInterleaved), and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseInterleaved(fs, args)
	return pos, flagError(fs, err)
}

// flagError is the error main understands for err, an error of fs.Parse.
func flagError(fs *flag.FlagSet, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return errHelp
	}
	return usageError{fmt.Errorf("%s: %w", fs.Name(), err)}
}

// printDefaults returns a command's flags function for flags that define
// adds to a FlagSet.
func printDefaults(define func(fs *flag.FlagSet)) func(io.Writer) {
	return func(w io.Writer) {
		fs := commandFlagSet("")
		define(fs)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// flagsPrinted returns a command's flags function for a command that makes
// its FlagSet inside it (demo, launch, onnx gen): print runs the command
// with -h, and the flags are the flag.PrintDefaults part of what it
// printed, from the first line starting "  -".
func flagsPrinted(print func(w io.Writer)) func(io.Writer) {
	return func(w io.Writer) {
		var b strings.Builder
		print(&b)
		s := b.String()
		if !strings.HasPrefix(s, "  -") {
			i := strings.Index(s, "\n  -")
			if i < 0 {
				return
			}
			s = s[i+1:]
		}
		io.WriteString(w, s)
	}
}

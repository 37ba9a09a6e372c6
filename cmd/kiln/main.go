package main

import (
	"fmt"
	"os"

	"github.com/kiln-ml/kiln/tensor"
)

// version is the Kiln release; set at link time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// commands maps each subcommand to its implementation.
var commands = map[string]struct {
	run   func(args []string) error
	usage string
}{
	"demo":      {runDemo, "train an MLP on MNIST with a live dashboard (-epochs, -batch, -subset, -device, -run-dir; -xor for the XOR demo)"},
	"devices":   {runDevices, "list the devices Kiln detects"},
	"export":    {runExport, "write a run's or checkpoint's model weights to one file: RUN_OR_CHECKPOINT [--format safetensors|gguf|onnx] [--gguf-type T] [--model GRAPH.onnx] -o FILE"},
	"inspect":   {runInspect, "show what a safetensors, GGUF or ONNX file, checkpoint or run directory holds: [--json] PATH"},
	"launch":    {runLaunch, "run a program as N ranks under Open MPI's mpirun: -n N [--hosts H1,H2:SLOTS] [-x VAR]... [--dry-run] PROGRAM [ARGS...]"},
	"kernel":    {runKernel, "the Jupyter kernel: run -f CONN, install [--user|--prefix DIR] [--name N], uninstall, build --with MODULE[@VERSION][/PKG]... [-o BIN] [--install]"},
	"onnx":      {runONNX, "generate a Go package from an ONNX model: gen MODEL.onnx -o DIR [--package NAME]"},
	"workbench": {runWorkbench, "the workbench: the desktop app, or --browser [--addr 127.0.0.1:PORT] [--root DIR] [--runs DIR]... [--existing CONN] [--allow-host NAME]... [--tls-cert FILE --tls-key FILE | --insecure]"},
	"version":   {func([]string) error { fmt.Println("kiln", version); return nil }, "print the version"},
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "kiln: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := cmd.run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "kiln:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kiln <command> [arguments]\n\ncommands:")
	for _, name := range []string{"demo", "devices", "export", "inspect", "kernel", "launch", "onnx", "workbench", "version"} {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", name, commands[name].usage)
	}
}

// runDevices prints the detected devices as a table.
func runDevices([]string) error {
	fmt.Print(tensor.Devices())
	return nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kiln-ml/kiln/onnx"
)

// onnxUsage is the command's usage line.
const onnxUsage = "usage: kiln onnx gen MODEL.onnx -o DIR [--package NAME]"

// runONNX implements `kiln onnx gen MODEL.onnx -o DIR [--package NAME]`.
func runONNX(args []string) error { return onnxCommand(args, os.Stdout, os.Stderr) }

// onnxCommand is runONNX writing its report to out and usage to errOut.
func onnxCommand(args []string, out, errOut io.Writer) error {
	if len(args) == 0 || args[0] != "gen" {
		fmt.Fprintln(errOut, onnxUsage)
		if len(args) == 0 {
			return errors.New("onnx: a subcommand is required (gen)")
		}
		return fmt.Errorf("onnx: unknown subcommand %q (want gen)", args[0])
	}
	fs := flag.NewFlagSet("onnx gen", flag.ContinueOnError)
	fs.SetOutput(errOut)
	dir := fs.String("o", "", "the directory to write the package to (required)")
	pkg := fs.String("package", "", "the package name (default: the directory's name)")
	fs.Usage = func() {
		fmt.Fprintln(errOut, onnxUsage)
		fmt.Fprintln(errOut, "\nWrites DIR/model.go, a Go package running the model with Kiln tensor ops")
		fmt.Fprintln(errOut, "(Model, New, Load, Forward, Compute, Run), and DIR/weights.safetensors.")
		fmt.Fprintln(errOut, "From a //go:generate line:")
		fmt.Fprintln(errOut, "  //go:generate go run github.com/kiln-ml/kiln/cmd/kiln onnx gen model.onnx -o .\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("onnx gen: want one model file, got %d arguments", len(pos))
	}
	if *dir == "" {
		return errors.New("onnx gen: an output directory is required (-o DIR)")
	}
	res, err := onnx.Generate(pos[0], *dir, onnx.GenerateOptions{Package: *pkg})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s and %s: %d nodes", res.GoFile, res.Weights, res.Nodes)
	if len(res.Fallbacks) > 0 {
		fmt.Fprintf(out, ", %d run by onnx.Operator: %v", len(res.Fallbacks), res.Fallbacks)
	}
	fmt.Fprintln(out)
	return nil
}

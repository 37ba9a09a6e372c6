package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/kiln-ml/kiln/internal/modelfile"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
)

// inspectGGUF describes the GGUF file at path.
func inspectGGUF(out io.Writer, path string, size int64, asJSON bool) error {
	f, err := store.OpenGGUF(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	rep := modelfile.DescribeGGUF(path, size, f)
	if asJSON {
		return writeJSON(out, rep)
	}
	rep.Print(out, 0)
	return nil
}

// onnxReport is what `kiln inspect --json` says of an ONNX file.
type onnxReport struct {
	Path        string `json:"path"`
	Format      string `json:"format"`
	Description string `json:"description"`
}

// inspectONNX describes the ONNX model at path: opsets, inputs, outputs,
// operators and initializers (onnx.Describe).
func inspectONNX(out io.Writer, path string, asJSON bool) error {
	d, err := onnx.Describe(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if asJSON {
		return writeJSON(out, onnxReport{Path: path, Format: "onnx", Description: d})
	}
	fmt.Fprintf(out, "%s: ONNX model\n%s", path, d)
	return nil
}

// errNotModelFile is the error of `kiln inspect` for a file of none of the
// formats it reads.
var errNotModelFile = errors.New("not a safetensors, GGUF or ONNX file (or a run or checkpoint directory)")

// fileKind tells the format of the size-byte file at path from its
// content: "safetensors", "gguf" or "onnx". A file whose content matches
// none but whose name ends in one of their extensions is taken as that
// format, so that a damaged file gets the reader's specific error; any
// other file is an error wrapping errNotModelFile that says what the file
// starts with.
func fileKind(path string, size int64) (string, error) {
	kind, start, err := modelfile.Kind(path, size)
	if err != nil {
		return "", err
	}
	if kind == "" {
		return "", fmt.Errorf("%s is %w: %s", path, errNotModelFile, start)
	}
	return kind, nil
}

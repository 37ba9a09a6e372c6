package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
)

// ggufReport is what `kiln inspect` says of a GGUF file.
type ggufReport struct {
	Path     string           `json:"path"`
	Format   string           `json:"format"`
	Version  uint32           `json:"version"`
	Bytes    int64            `json:"bytes"`
	Metadata map[string]any   `json:"metadata"`
	Tensors  []ggufTensorInfo `json:"tensors"`
}

type ggufTensorInfo struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
}

// inspectGGUF describes the GGUF file at path.
func inspectGGUF(out io.Writer, path string, size int64, asJSON bool) error {
	f, err := store.OpenGGUF(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	rep := ggufReport{Path: path, Format: "gguf", Version: f.Version, Bytes: size, Metadata: map[string]any{}}
	for _, k := range f.Keys {
		v := f.Metadata[k]
		if a, ok := v.([]any); ok && len(a) > 16 { // vocabularies: the length, not 100k strings
			v = fmt.Sprintf("[%d items: %v …]", len(a), a[:8])
		}
		rep.Metadata[k] = v
	}
	for _, t := range f.Tensors {
		rep.Tensors = append(rep.Tensors, ggufTensorInfo{Name: t.Name, Type: t.Type.String(), Shape: t.Shape, Bytes: t.Size})
	}
	if asJSON {
		return writeJSON(out, rep)
	}
	fmt.Fprintf(out, "%s: GGUF version %d, %s, %d tensors\n", path, f.Version, humanBytes(size), len(f.Tensors))
	if len(f.Keys) > 0 {
		fmt.Fprintln(out, "metadata:")
		keys := append([]string(nil), f.Keys...)
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "  %s = %v\n", k, rep.Metadata[k])
		}
	}
	fmt.Fprintf(out, "%-40s %-6s %-20s %10s\n", "TENSOR", "TYPE", "SHAPE", "SIZE")
	for _, t := range rep.Tensors {
		fmt.Fprintf(out, "%-40s %-6s %-20s %10s\n", t.Name, t.Type, shapeText(t.Shape), humanBytes(t.Bytes))
	}
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

// fileKind sniffs a file: "gguf", "onnx" or "" (safetensors, the default).
func fileKind(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 4)
	io.ReadFull(f, head)
	switch {
	case store.IsGGUF(head):
		return "gguf"
	case strings.HasSuffix(strings.ToLower(path), ".onnx"):
		return "onnx"
	}
	return ""
}

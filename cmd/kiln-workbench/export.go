package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// saveDialog asks the user where to save a file, suggesting name and
// offering the files of one format (its display name and pattern, such
// as "*.gguf"); it returns "" when the user cancels. The desktop app
// opens the native dialog (Wails' runtime.SaveFileDialog); tests give a
// fake.
type saveDialog func(title, name, display, pattern string) (string, error)

// Exporter is bound into the page as window.go.main.Exporter: a
// checkpoint export that asks where to save with the desktop's native
// save dialog, then writes the file with the engine's checkpoints.export
// (workbench/API.md). The browser downloads from GET /api/export instead.
type Exporter struct {
	engine caller
	ctx    context.Context

	mu     sync.Mutex
	dialog saveDialog // nil until the window is up
}

// newExporter returns an Exporter writing through engine under ctx; it
// asks nothing until setDialog gives it the window's dialog.
func newExporter(ctx context.Context, engine caller) *Exporter {
	return &Exporter{engine: engine, ctx: ctx}
}

// setDialog gives e the save dialog of the window, once it is up.
func (e *Exporter) setDialog(d saveDialog) {
	e.mu.Lock()
	e.dialog = d
	e.mu.Unlock()
}

// exportFormats are the formats an export writes, by name: the dialog's
// filter and the file extension.
var exportFormats = map[string]struct{ display, ext string }{
	"safetensors": {"safetensors (*.safetensors)", ".safetensors"},
	"gguf":        {"GGUF (*.gguf)", ".gguf"},
	"onnx":        {"ONNX (*.onnx)", ".onnx"},
}

// ExportCheckpoint asks where to save checkpoint (a checkpoint directory
// of a followed run) exported as format (safetensors, gguf or onnx;
// ggufType f32, f16, bf16 or q8_0 for GGUF, "" for f32), suggesting
// RUN-CHECKPOINT.EXT, then writes it there. It returns the engine's
// result as JSON ({"out", "bytes", "format"}), or "" when the user
// cancels the dialog. It fails on an unknown format, before the window
// is up, and with the engine's error naming what was wrong (a checkpoint
// outside the followed runs, a damaged one, ONNX without a recorded
// graph, the file not writable).
func (e *Exporter) ExportCheckpoint(path, format, ggufType string) (string, error) {
	if format == "" {
		format = "safetensors"
	}
	f, ok := exportFormats[strings.ToLower(format)]
	if !ok {
		return "", fmt.Errorf("workbench: export: unknown format %q (want safetensors, gguf or onnx)", format)
	}
	if path == "" {
		return "", errors.New("workbench: export: no checkpoint given")
	}
	e.mu.Lock()
	dialog := e.dialog
	e.mu.Unlock()
	if dialog == nil {
		return "", errors.New("workbench: export: the window is not ready for a save dialog yet")
	}
	clean := filepath.Clean(path)
	name := filepath.Base(filepath.Dir(filepath.Dir(clean))) + "-" + filepath.Base(clean) + f.ext
	out, err := dialog("Export checkpoint as "+strings.ToLower(format), name, f.display, "*"+f.ext)
	if err != nil {
		return "", fmt.Errorf("workbench: export: save dialog: %w", err)
	}
	if out == "" {
		return "", nil // cancelled
	}
	params, err := json.Marshal(map[string]string{"path": path, "format": strings.ToLower(format), "gguf_type": ggufType, "out": out})
	if err != nil {
		return "", err
	}
	return newApp(e.ctx, e.engine).Call("checkpoints.export", string(params))
}

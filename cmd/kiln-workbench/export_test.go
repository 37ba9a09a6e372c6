package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// exportEngine records checkpoints.export calls and answers like the
// engine.
type exportEngine struct{ params map[string]string }

func (e *exportEngine) Call(_ context.Context, method string, params json.RawMessage) (any, error) {
	if method != "checkpoints.export" {
		return nil, errors.New("unexpected method " + method)
	}
	json.Unmarshal(params, &e.params)
	if e.params["format"] == "onnx" {
		return nil, errors.New("export: ONNX: no model graph recorded for this run")
	}
	return map[string]any{"out": e.params["out"], "bytes": 42, "format": e.params["format"]}, nil
}

func TestExporterAsksWhereThenExports(t *testing.T) {
	type asked struct{ title, name, display, pattern string }
	tests := []struct {
		name, format, gguf string
		answer             string // the dialog's answer; "" cancels
		dialogErr          error
		noWindow           bool
		wantAsk            asked
		want               string // the result; "" with wantErr empty: cancelled
		wantErr            string
	}{
		{name: "safetensors", format: "safetensors", answer: "/home/u/w.safetensors",
			wantAsk: asked{"Export checkpoint as safetensors", "mnist-epoch-0002.safetensors", "safetensors (*.safetensors)", "*.safetensors"},
			want:    `{"bytes":42,"format":"safetensors","out":"/home/u/w.safetensors"}`},
		{name: "gguf with its type", format: "GGUF", gguf: "q8_0", answer: "/home/u/w.gguf",
			wantAsk: asked{"Export checkpoint as gguf", "mnist-epoch-0002.gguf", "GGUF (*.gguf)", "*.gguf"},
			want:    `{"bytes":42,"format":"gguf","out":"/home/u/w.gguf"}`},
		{name: "the default format is safetensors", answer: "/tmp/x.safetensors",
			wantAsk: asked{"Export checkpoint as safetensors", "mnist-epoch-0002.safetensors", "safetensors (*.safetensors)", "*.safetensors"},
			want:    `{"bytes":42,"format":"safetensors","out":"/tmp/x.safetensors"}`},
		{name: "cancelled", format: "gguf", answer: "",
			wantAsk: asked{"Export checkpoint as gguf", "mnist-epoch-0002.gguf", "GGUF (*.gguf)", "*.gguf"}},
		{name: "the engine's error", format: "onnx", answer: "/tmp/m.onnx",
			wantAsk: asked{"Export checkpoint as onnx", "mnist-epoch-0002.onnx", "ONNX (*.onnx)", "*.onnx"}, wantErr: "no model graph recorded"},
		{name: "unknown format", format: "pickle", wantErr: `unknown format "pickle"`},
		{name: "dialog fails", format: "gguf", dialogErr: errors.New("no portal"),
			wantAsk: asked{"Export checkpoint as gguf", "mnist-epoch-0002.gguf", "GGUF (*.gguf)", "*.gguf"}, wantErr: "save dialog: no portal"},
		{name: "before the window", format: "gguf", noWindow: true, wantErr: "not ready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := &exportEngine{}
			e := newExporter(context.Background(), eng)
			var got asked
			if !tc.noWindow {
				e.setDialog(func(title, name, display, pattern string) (string, error) {
					got = asked{title, name, display, pattern}
					return tc.answer, tc.dialogErr
				})
			}
			res, err := e.ExportCheckpoint("/runs/mnist/checkpoints/epoch-0002", tc.format, tc.gguf)
			if got != tc.wantAsk {
				t.Errorf("dialog asked %+v, want %+v", got, tc.wantAsk)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || res != tc.want {
				t.Fatalf("got %q, %v; want %q", res, err, tc.want)
			}
			if tc.want != "" && (eng.params["path"] != "/runs/mnist/checkpoints/epoch-0002" || eng.params["gguf_type"] != tc.gguf) {
				t.Errorf("checkpoints.export got %v", eng.params)
			}
			if tc.want == "" && eng.params != nil {
				t.Errorf("a cancelled dialog exported: %v", eng.params)
			}
		})
	}
}

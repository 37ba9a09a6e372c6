package workbench

// Checkpoint export: the formats `kiln export` writes (safetensors, GGUF,
// ONNX), to a file the caller names (checkpoints.export, the desktop
// app's save dialog) or streamed as a download (GET /api/export).

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
)

// GraphFile is the file in a run directory holding the model's ONNX graph,
// which an ONNX export of the run's checkpoints loads their weights into:
// a checkpoint holds weights, not the model's code. A run records it with
// onnx.Export(model, exampleInput, filepath.Join(runDir, GraphFile)), or
// by copying there the ONNX file the model was imported from.
const GraphFile = "model.onnx"

// noGraphHint says what to do when a run has no graph for an ONNX export.
const noGraphHint = "no model graph recorded for this run: a checkpoint holds weights, not the model's code. " +
	"Save the graph beside the run with onnx.Export(model, exampleInput, filepath.Join(runDir, \"" + GraphFile + "\")) " +
	"(or copy there the .onnx file the model was imported from), or run `kiln export CHECKPOINT --format onnx --model GRAPH.onnx -o FILE`"

// exportRequest is what an export asks for.
type exportRequest struct {
	Path     string `json:"path"`      // the checkpoint directory
	Format   string `json:"format"`    // safetensors (default), gguf or onnx
	GGUFType string `json:"gguf_type"` // f32 (default), f16, bf16 or q8_0
	Graph    string `json:"graph"`     // an ONNX graph; default: the run's GraphFile
	Out      string `json:"out"`       // checkpoints.export only
}

// ggufTypes are the GGUF tensor types an export may ask for.
var ggufTypes = map[string]store.GGMLType{"f32": store.GGMLF32, "f16": store.GGMLF16, "bf16": store.GGMLBF16, "q8_0": store.GGMLQ8_0}

// exportPlan is a checked export request.
type exportPlan struct {
	dir      string // the checkpoint directory, absolute
	format   string
	ggufType store.GGMLType
	graph    string // for onnx
}

// ext is the file extension of the plan's format.
func (p exportPlan) ext() string { return "." + p.format }

// plan checks an export request: a checkpoint of a followed run, a known
// format, and for ONNX a graph inside the root or a followed run.
func (s *Server) plan(req exportRequest) (exportPlan, error) {
	p := exportPlan{format: strings.ToLower(strings.TrimSpace(req.Format))}
	if p.format == "" {
		p.format = "safetensors"
	}
	if req.Path == "" {
		return p, errors.New("export: no checkpoint given (path)")
	}
	abs, err := filepath.Abs(req.Path)
	if err != nil {
		return p, fmt.Errorf("export: %w", err)
	}
	if !s.runs.within(abs) {
		return p, fmt.Errorf("export: %s is not a checkpoint of a followed run", req.Path)
	}
	p.dir = abs
	switch p.format {
	case "safetensors":
	case "gguf":
		name := strings.ToLower(req.GGUFType)
		if name == "" {
			name = "f32"
		}
		t, ok := ggufTypes[name]
		if !ok {
			return p, fmt.Errorf("export: GGUF type %q (want f32, f16, bf16 or q8_0)", req.GGUFType)
		}
		p.ggufType = t
	case "onnx":
		if req.Graph == "" {
			g := graphOf(abs)
			if g == "" {
				return p, errors.New("export: ONNX: " + noGraphHint)
			}
			p.graph = g
			break
		}
		g, err := filepath.Abs(req.Graph)
		if err != nil {
			return p, fmt.Errorf("export: %w", err)
		}
		if !under(s.cfg.Root, g) && !s.runs.within(g) {
			return p, fmt.Errorf("export: graph %s is outside the workbench's root and its runs", req.Graph)
		}
		p.graph = g
	default:
		return p, fmt.Errorf("export: unknown format %q (want safetensors, gguf or onnx)", req.Format)
	}
	return p, nil
}

// under reports whether path lies in directory dir.
func under(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// checkpointRun returns the run directory of a checkpoint directory
// (RUN/checkpoints/NAME).
func checkpointRun(checkpoint string) string {
	return filepath.Dir(filepath.Dir(checkpoint))
}

// graphOf returns the run's recorded ONNX graph for a checkpoint, or ""
// when it has none.
func graphOf(checkpoint string) string { return runGraph(checkpointRun(checkpoint)) }

// runGraph returns the run's recorded ONNX graph, or "" when it has none.
func runGraph(runDir string) string {
	g := filepath.Join(runDir, GraphFile)
	if fi, err := os.Stat(g); err == nil && fi.Mode().IsRegular() {
		return g
	}
	return ""
}

// exportName is the file name a download of the plan suggests:
// RUN-CHECKPOINT.EXT.
func (p exportPlan) exportName() string {
	name := filepath.Base(checkpointRun(p.dir)) + "-" + filepath.Base(p.dir) + p.ext()
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' || r == '\\' || r == '/' || r == 0x7f {
			return '_'
		}
		return r
	}, name)
}

// write exports the checkpoint to path (replaced) after verifying it, and
// returns the bytes written.
func (p exportPlan) write(path string) (int64, error) {
	rd, err := store.OpenCheckpoint(p.dir) // verifies every file's checksum
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	md := store.ExportMetadata(rd.Info, version())
	switch p.format {
	case "onnx":
		err = onnx.ExportCheckpoint(p.graph, rd.Info.Dir, path)
	case "gguf":
		err = store.ExportGGUF(rd, path, p.ggufType, md)
	default:
		err = rd.Model.CopyTo(path, md)
	}
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// writeAtomic exports to out through a temporary file beside it, renamed
// into place: a failed export leaves out as it was.
func (p exportPlan) writeAtomic(out string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*"+p.ext())
	if err != nil {
		return 0, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	n, err := p.write(tmp.Name())
	if err != nil {
		return 0, err
	}
	return n, os.Rename(tmp.Name(), out)
}

// exportCheckpoint writes a checkpoint to req.Out (relative paths are
// under the root) in req.Format, after verifying the checkpoint.
func (s *Server) exportCheckpoint(req exportRequest) (any, error) {
	p, err := s.plan(req)
	if err != nil {
		return nil, err
	}
	out := req.Out
	if out == "" {
		return nil, errors.New("export: no output path given (out)")
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(s.cfg.Root, out)
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("export: output %s is a directory; give a file name", out)
	}
	if under(p.dir, out) {
		return nil, fmt.Errorf("export: output %s is inside the checkpoint; writing it would break the checkpoint", out)
	}
	n, err := p.writeAtomic(out)
	if err != nil {
		return nil, fmt.Errorf("export to %s: %w", out, err)
	}
	return map[string]any{"out": out, "bytes": n, "format": p.format}, nil
}

// serveExport answers GET /api/export?path=CHECKPOINT&format=F
// [&gguf_type=T][&graph=G]: the exported file as a download (Content-
// Disposition: attachment, named RUN-CHECKPOINT.EXT), or a JSON
// {"error"} with 400 naming what was wrong.
func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, err := s.plan(exportRequest{Path: q.Get("path"), Format: q.Get("format"), GGUFType: q.Get("gguf_type"), Graph: q.Get("graph")})
	if err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	tmp, err := os.CreateTemp("", "kiln-export-*"+p.ext())
	if err != nil {
		refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if _, err := p.write(tmp.Name()); err != nil {
		refuse(w, r, http.StatusBadRequest, "export: "+err.Error())
		return
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	w.Header().Set("Content-Disposition", `attachment; filename="`+p.exportName()+`"`)
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	io.Copy(w, f)
}

// checkpointGraph is the graph part of a checkpoints.list entry: the
// run's GraphFile, or why an ONNX export needs one.
func checkpointGraph(runDir string, entry map[string]any) {
	if g := runGraph(runDir); g != "" {
		entry["graph"] = g
	} else {
		entry["graph_hint"] = noGraphHint
	}
}

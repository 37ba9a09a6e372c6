package workbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kiln-ml/kiln/internal/modelfile"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/train"
)

// ErrOutsideRoot is wrapped by the errors of files.list for a path that
// is absolute, climbs with "..", or leads out of the root through a
// symbolic link.
var ErrOutsideRoot = errors.New("outside the workbench's root")

// recentNotebooks is how many recently modified notebooks files.list puts
// on top.
const recentNotebooks = 5

// fileEntry is one row of the file browser.
type fileEntry struct {
	Name     string    `json:"name"`
	Path     string    `json:"path"` // relative to the root, slash-separated
	Kind     string    `json:"kind"` // dir, notebook, run, checkpoint, model, file
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	// Dir is the absolute directory (symbolic links resolved) of a run, or
	// of the run holding a checkpoint: what runs.* and checkpoints.* take.
	Dir string `json:"dir,omitempty"`
}

// resolveDir turns a folder path from the UI ("" or "." for the root) into
// its cleaned slash-separated form relative to the root and its absolute
// form, refusing absolute paths, ".." elements and symbolic links that
// lead out of the root.
func (s *Server) resolveDir(p string) (rel, abs string, err error) {
	if p == "" || p == "." {
		return "", s.cfg.Root, nil
	}
	rel, abs, st, err := s.resolvePath(p)
	if err != nil {
		return "", "", err
	}
	if !st.IsDir() {
		return "", "", fmt.Errorf("%s is not a folder", rel)
	}
	return rel, abs, nil
}

// resolvePath is resolveDir for a path of any kind but the root: its
// cleaned relative and absolute forms and what it is.
func (s *Server) resolvePath(p string) (rel, abs string, st os.FileInfo, err error) {
	if p == "" || p == "." {
		return "", "", nil, fmt.Errorf("no path given")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", "", nil, fmt.Errorf("%q: %w: paths are relative to the root", p, ErrOutsideRoot)
	}
	for _, e := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if e == ".." {
			return "", "", nil, fmt.Errorf("%q: %w: \"..\" is not allowed", p, ErrOutsideRoot)
		}
	}
	rel = path.Clean(filepath.ToSlash(p))
	abs = filepath.Join(s.cfg.Root, filepath.FromSlash(rel))
	// A missing entry is reported as missing only where the part of its
	// path that exists lies in the root: nothing is told of the outside.
	known := abs
	for _, err := os.Lstat(known); err != nil && known != s.cfg.Root; _, err = os.Lstat(known) {
		known = filepath.Dir(known)
	}
	if !s.insideRoot(known) {
		return "", "", nil, fmt.Errorf("%q: %w: a symbolic link leads out of it", p, ErrOutsideRoot)
	}
	st, err = os.Stat(abs)
	if err != nil {
		return "", "", nil, fmt.Errorf("%s: %w", rel, err)
	}
	return rel, abs, st, nil
}

// insideRoot reports whether abs, its symbolic links resolved, lies in the
// root (its links resolved too). A path that cannot be resolved is not.
func (s *Server) insideRoot(abs string) bool {
	target, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return false
	}
	root := s.cfg.Root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	r, err := filepath.Rel(root, target)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

// listFiles lists one folder of the root: folders first, then files, each
// by name; hidden entries and symbolic links leading out of the root are
// left out.
func (s *Server) listFiles(abs, rel string) ([]fileEntry, error) {
	dirents, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	list := []fileEntry{}
	for _, d := range dirents {
		name := d.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(abs, name)
		if d.Type()&os.ModeSymlink != 0 && !s.insideRoot(p) {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		e := fileEntry{Name: name, Path: path.Join(rel, name), Size: st.Size(), Modified: st.ModTime()}
		e.Kind, e.Dir = fileKind(p, st)
		if st.IsDir() {
			e.Size = 0
		}
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool {
		di, dj := list[i].Kind != "notebook" && list[i].Kind != "model" && list[i].Kind != "file",
			list[j].Kind != "notebook" && list[j].Kind != "model" && list[j].Kind != "file"
		if di != dj {
			return di
		}
		return list[i].Name < list[j].Name
	})
	return list, nil
}

// fileKind names what the file browser shows p as, and for a run or a
// checkpoint the run's real directory.
func fileKind(p string, st os.FileInfo) (kind, dir string) {
	if st.IsDir() {
		if isRun(p) {
			return "run", resolve(p)
		}
		if mf, err := os.Stat(filepath.Join(p, "manifest.json")); err == nil && mf.Mode().IsRegular() &&
			filepath.Base(filepath.Dir(p)) == train.CheckpointsDir {
			return "checkpoint", resolve(filepath.Dir(filepath.Dir(p)))
		}
		return "dir", ""
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".ipynb":
		return "notebook", ""
	case ".safetensors", ".gguf", ".onnx":
		return "model", ""
	}
	return "file", ""
}

// fileMethods lists the file browser's methods.
func (s *Server) fileMethods() map[string]method {
	return map[string]method{
		"files.list": func(ctx context.Context, params json.RawMessage) (any, error) {
			var p struct {
				Path string `json:"path"`
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			rel, abs, err := s.resolveDir(p.Path)
			if err != nil {
				return nil, err
			}
			entries, err := s.listFiles(abs, rel)
			if err != nil {
				return nil, err
			}
			recent, err := s.recentNotebooks(ctx)
			if err != nil {
				return nil, err
			}
			return map[string]any{"path": rel, "entries": entries, "recent": recent}, nil
		},
		"files.inspect": func(_ context.Context, params json.RawMessage) (any, error) {
			var p struct {
				Path string `json:"path"`
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			return s.inspectFile(p.Path)
		},
	}
}

// recentNotebooks lists the notebooks under the root modified last, newest
// first.
func (s *Server) recentNotebooks(ctx context.Context) ([]fileEntry, error) {
	res, err := s.notebookMethods()["notebook.list"](ctx, nil)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res)
	var all []fileEntry
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Modified.After(all[j].Modified) })
	if len(all) > recentNotebooks {
		all = all[:recentNotebooks]
	}
	for i := range all {
		all[i].Name, all[i].Kind = path.Base(all[i].Path), "notebook"
		if st, err := os.Stat(filepath.Join(s.cfg.Root, filepath.FromSlash(all[i].Path))); err == nil {
			all[i].Size = st.Size()
		}
	}
	return all, nil
}

// maxReportTensors is how many tensors a model file's report lists; the
// rest are counted.
const maxReportTensors = 500

// modelReport is what files.inspect says of a model file: the report
// `kiln inspect` prints for it, and for ONNX whether onnx.Load accepts it.
type modelReport struct {
	Path   string `json:"path"`
	Format string `json:"format"` // safetensors, gguf or onnx
	Size   int64  `json:"size"`
	Report string `json:"report"`
	// Loads says, for ONNX, whether onnx.Load accepts the model; Verdict
	// is Load's own sentence ("Load accepts it." or "Load refuses it: …").
	Loads   *bool  `json:"loads,omitempty"`
	Verdict string `json:"verdict,omitempty"`
}

// ErrNotModelFile is wrapped by the error of files.inspect for a file
// that is none of safetensors, GGUF and ONNX.
var ErrNotModelFile = errors.New("not a safetensors, GGUF or ONNX file")

// inspectFile describes the model file at p (relative to the root) as
// `kiln inspect` does.
func (s *Server) inspectFile(p string) (*modelReport, error) {
	rel, abs, st, err := s.resolvePath(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a folder, not a model file", rel)
	}
	format, err := modelFormat(abs, rel)
	if err != nil {
		return nil, err
	}
	rep := &modelReport{Path: rel, Format: format, Size: st.Size()}
	switch format {
	case "safetensors":
		sf, err := store.OpenSafetensors(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		defer sf.Close()
		var b strings.Builder
		modelfile.DescribeSafetensors(rel, st.Size(), sf).Print(&b, "", maxReportTensors)
		rep.Report = b.String()
	case "gguf":
		f, err := store.OpenGGUF(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		var b strings.Builder
		modelfile.DescribeGGUF(rel, st.Size(), f).Print(&b, maxReportTensors)
		rep.Report = b.String()
	case "onnx":
		d, err := onnx.Describe(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		rep.Report = rel + ": ONNX model\n" + d
		lines := strings.Split(strings.TrimSpace(d), "\n")
		rep.Verdict = lines[len(lines)-1]
		loads := rep.Verdict == "Load accepts it."
		rep.Loads = &loads
	}
	return rep, nil
}

// modelFormat tells the format of the file at abs from its first bytes
// as `kiln inspect` does ("safetensors", "gguf" or "onnx"), falling back
// to its extension so that a damaged file gets its reader's error.
func modelFormat(abs, rel string) (string, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	kind, start, err := modelfile.Kind(abs, st.Size())
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	if kind == "" {
		return "", fmt.Errorf("%s is %w: %s", rel, ErrNotModelFile, start)
	}
	return kind, nil
}

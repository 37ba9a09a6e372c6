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
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", "", fmt.Errorf("%q: %w: paths are relative to the root", p, ErrOutsideRoot)
	}
	for _, e := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if e == ".." {
			return "", "", fmt.Errorf("%q: %w: \"..\" is not allowed", p, ErrOutsideRoot)
		}
	}
	rel = path.Clean(filepath.ToSlash(p))
	abs = filepath.Join(s.cfg.Root, filepath.FromSlash(rel))
	if !s.insideRoot(abs) {
		return "", "", fmt.Errorf("%q: %w: a symbolic link leads out of it", p, ErrOutsideRoot)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", rel, err)
	}
	if !st.IsDir() {
		return "", "", fmt.Errorf("%s is not a folder", rel)
	}
	return rel, abs, nil
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

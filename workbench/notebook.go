package workbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrNotebook is wrapped by the errors of notebooks that cannot be read as
// nbformat 4.
var ErrNotebook = errors.New("not a notebook")

// autosaveDelay is how long after its last change a notebook is saved.
const autosaveDelay = time.Second

// notebook is an open .ipynb file. Top-level fields and cell fields the
// workbench does not use are kept as they were, so a notebook saved
// without changes is byte for byte the file read.
type notebook struct {
	path    string // relative to the root, slash-separated
	abs     string
	top     map[string]json.RawMessage
	cells   []map[string]any
	hadIDs  bool // the file's cells carry ids (nbformat ≥ 4.5)
	dirty   bool
	changed time.Time
}

// notebooks holds the open notebooks and autosaves them.
type notebooks struct {
	root    string
	publish func(string, any)
	mu      sync.Mutex
	open    map[string]*notebook
	stop    chan struct{}
	once    sync.Once
}

func newNotebooks(root string, publish func(string, any)) *notebooks {
	n := &notebooks{root: root, publish: publish, open: map[string]*notebook{}, stop: make(chan struct{})}
	go n.autosave()
	return n
}

// resolve turns a path from the UI into a cleaned path relative to the root
// and its absolute form, refusing paths that leave the root.
func (n *notebooks) resolve(p string) (rel, abs string, err error) {
	if p == "" {
		return "", "", errors.New("no path given")
	}
	abs = p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(n.root, filepath.FromSlash(p))
	}
	abs = filepath.Clean(abs)
	r, err := filepath.Rel(n.root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", "", fmt.Errorf("%s is outside the workbench's root %s", p, n.root)
	}
	if !strings.HasSuffix(abs, ".ipynb") {
		return "", "", fmt.Errorf("%s is not a .ipynb file", p)
	}
	return filepath.ToSlash(r), abs, nil
}

// parseNotebook reads an nbformat 4 document, checking what the workbench
// relies on: a JSON object, nbformat 4, a cells array whose cells have a
// cell_type and a source (a string or a list of strings).
func parseNotebook(b []byte) (top map[string]json.RawMessage, cells []map[string]any, hadIDs bool, err error) {
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, nil, false, fmt.Errorf("%w: invalid JSON: %v", ErrNotebook, err)
	}
	var format int
	if raw, ok := top["nbformat"]; !ok || json.Unmarshal(raw, &format) != nil {
		return nil, nil, false, fmt.Errorf("%w: no nbformat number", ErrNotebook)
	}
	if format != 4 {
		return nil, nil, false, fmt.Errorf("%w: nbformat %d (the workbench reads nbformat 4; convert it with jupyter nbconvert --to notebook)", ErrNotebook, format)
	}
	raw, ok := top["cells"]
	if !ok {
		return nil, nil, false, fmt.Errorf("%w: no cells", ErrNotebook)
	}
	if err := json.Unmarshal(raw, &cells); err != nil {
		return nil, nil, false, fmt.Errorf("%w: cells: %v", ErrNotebook, err)
	}
	hadIDs = len(cells) > 0
	for i, c := range cells {
		if c == nil {
			return nil, nil, false, fmt.Errorf("%w: cell %d is not an object", ErrNotebook, i)
		}
		if t, ok := c["cell_type"].(string); !ok || t == "" {
			return nil, nil, false, fmt.Errorf("%w: cell %d has no cell_type", ErrNotebook, i)
		}
		if _, err := sourceText(c["source"]); err != nil {
			return nil, nil, false, fmt.Errorf("%w: cell %d: %v", ErrNotebook, i, err)
		}
		if _, ok := c["id"].(string); !ok {
			hadIDs = false
		}
	}
	return top, cells, hadIDs, nil
}

// sourceText joins a cell source (a string or a list of strings).
func sourceText(v any) (string, error) {
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return s, nil
	case []any:
		var b strings.Builder
		for _, line := range s {
			l, ok := line.(string)
			if !ok {
				return "", errors.New("source holds a non-string")
			}
			b.WriteString(l)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("source is a %T, not text", v)
}

// sourceLines splits text the way Jupyter stores it: lines keeping their
// newlines.
func sourceLines(s string) []string {
	lines := []string{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

func newCellID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// view is a notebook as the UI gets it: sources as text, every cell with an
// id.
func (nb *notebook) view() map[string]any {
	cells := make([]map[string]any, len(nb.cells))
	for i, c := range nb.cells {
		v := map[string]any{}
		for k, x := range c {
			v[k] = x
		}
		v["source"], _ = sourceText(c["source"])
		if v["outputs"] == nil && c["cell_type"] == "code" {
			v["outputs"] = []any{}
		}
		cells[i] = v
	}
	var meta any
	json.Unmarshal(nb.top["metadata"], &meta)
	return map[string]any{"path": nb.path, "cells": cells, "metadata": meta}
}

// encode renders the notebook as Jupyter writes it: one-space indentation,
// sorted keys, sources and texts as lists of lines, a final newline.
func (nb *notebook) encode() ([]byte, error) {
	top := map[string]any{}
	for k, v := range nb.top {
		top[k] = v
	}
	cells := make([]map[string]any, len(nb.cells))
	for i, c := range nb.cells {
		out := map[string]any{}
		for k, v := range c {
			out[k] = v
		}
		if !nb.hadIDs {
			delete(out, "id")
		}
		text, _ := sourceText(c["source"])
		out["source"] = sourceLines(text)
		if out["metadata"] == nil {
			out["metadata"] = map[string]any{}
		}
		if c["cell_type"] == "code" {
			if out["outputs"] == nil {
				out["outputs"] = []any{}
			}
			if _, ok := out["execution_count"]; !ok {
				out["execution_count"] = nil
			}
		}
		cells[i] = out
	}
	top["cells"] = cells
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// get returns the open notebook at rel, opening it when it is not.
func (n *notebooks) get(p string) (*notebook, error) {
	rel, abs, err := n.resolve(p)
	if err != nil {
		return nil, err
	}
	if nb, ok := n.open[rel]; ok {
		return nb, nil
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	top, cells, hadIDs, err := parseNotebook(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	for _, c := range cells {
		if _, ok := c["id"].(string); !ok {
			c["id"] = newCellID()
		}
	}
	nb := &notebook{path: rel, abs: abs, top: top, cells: cells, hadIDs: hadIDs}
	n.open[rel] = nb
	return nb, nil
}

// save writes nb atomically (a temporary file renamed over the old one) if
// it has changes.
func (n *notebooks) save(nb *notebook) error {
	if !nb.dirty {
		return nil
	}
	b, err := nb.encode()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(nb.abs), "."+filepath.Base(nb.abs)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if st, err := os.Stat(nb.abs); err == nil {
		os.Chmod(tmp.Name(), st.Mode().Perm())
	}
	if err := os.Rename(tmp.Name(), nb.abs); err != nil {
		return err
	}
	nb.dirty = false
	n.publish("notebook.saved", map[string]any{"path": nb.path})
	return nil
}

// autosave saves each changed notebook autosaveDelay after its last change.
func (n *notebooks) autosave() {
	tick := time.NewTicker(autosaveDelay / 2)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
			n.mu.Lock()
			for _, nb := range n.open {
				if nb.dirty && time.Since(nb.changed) >= autosaveDelay {
					if err := n.save(nb); err != nil {
						n.publish("notebook.error", map[string]any{"path": nb.path, "error": err.Error()})
					}
				}
			}
			n.mu.Unlock()
		}
	}
}

// saveAll saves every changed notebook and stops the autosave.
func (n *notebooks) saveAll() error {
	n.once.Do(func() { close(n.stop) })
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for _, nb := range n.open {
		if err := n.save(nb); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", nb.path, err))
		}
	}
	return errors.Join(errs...)
}

// setOutputs records a code cell's outputs and execution count after it
// ran (the cell may have been deleted meanwhile: then nothing happens).
func (n *notebooks) setOutputs(path, cellID string, outputs []map[string]any, count any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rel, _, err := n.resolve(path)
	if err != nil {
		return
	}
	nb, ok := n.open[rel]
	if !ok {
		return
	}
	for _, c := range nb.cells {
		if c["id"] == cellID {
			outs := make([]any, len(outputs))
			for i, o := range outputs {
				outs[i] = o
			}
			c["outputs"], c["execution_count"] = outs, count
			nb.dirty, nb.changed = true, time.Now()
			return
		}
	}
}

func (s *Server) notebookMethods() map[string]method {
	n := s.notebooks
	type pathParams struct {
		Path string `json:"path"`
	}
	return map[string]method{
		"notebook.list": func(ctx context.Context, _ json.RawMessage) (any, error) {
			type entry struct {
				Path     string    `json:"path"`
				Modified time.Time `json:"modified"`
			}
			list := []entry{}
			err := filepath.WalkDir(n.root, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil // unreadable parts of the tree are skipped
				}
				if d.IsDir() && p != n.root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
					return filepath.SkipDir
				}
				if !d.IsDir() && strings.HasSuffix(p, ".ipynb") && !strings.HasPrefix(d.Name(), ".") {
					rel, _ := filepath.Rel(n.root, p)
					var mod time.Time
					if info, err := d.Info(); err == nil {
						mod = info.ModTime()
					}
					list = append(list, entry{filepath.ToSlash(rel), mod})
				}
				return ctx.Err()
			})
			sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
			return list, err
		},
		"notebook.open": func(_ context.Context, params json.RawMessage) (any, error) {
			var p pathParams
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			nb, err := n.get(p.Path)
			if err != nil {
				return nil, err
			}
			return nb.view(), nil
		},
		"notebook.update": func(_ context.Context, params json.RawMessage) (any, error) {
			var p struct {
				Path  string           `json:"path"`
				Cells []map[string]any `json:"cells"`
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			for i, c := range p.Cells {
				if t, ok := c["cell_type"].(string); !ok || (t != "code" && t != "markdown" && t != "raw") {
					return nil, fmt.Errorf("cell %d: cell_type %v (want code, markdown or raw)", i, c["cell_type"])
				}
				if _, err := sourceText(c["source"]); err != nil {
					return nil, fmt.Errorf("cell %d: %v", i, err)
				}
				if _, ok := c["id"].(string); !ok {
					c["id"] = newCellID()
				}
				if c["cell_type"] != "code" {
					delete(c, "outputs")
					delete(c, "execution_count")
				}
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			nb, err := n.get(p.Path)
			if err != nil {
				return nil, err
			}
			nb.cells, nb.dirty, nb.changed = p.Cells, true, time.Now()
			return map[string]any{}, nil
		},
		"notebook.save": func(_ context.Context, params json.RawMessage) (any, error) {
			var p pathParams
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			nb, err := n.get(p.Path)
			if err != nil {
				return nil, err
			}
			return map[string]any{}, n.save(nb)
		},
		"notebook.close": func(_ context.Context, params json.RawMessage) (any, error) {
			var p pathParams
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			rel, _, err := n.resolve(p.Path)
			if err != nil {
				return nil, err
			}
			if nb, ok := n.open[rel]; ok {
				if err := n.save(nb); err != nil {
					return nil, err
				}
				delete(n.open, rel)
			}
			return map[string]any{}, nil
		},
	}
}

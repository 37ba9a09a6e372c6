package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/internal/modelfile"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
)

// exportOptions are the flags of `kiln export`.
type exportOptions struct {
	format, graph, ggufType, output string
}

// exportFlags defines the flags of `kiln export` on fs.
func exportFlags(fs *flag.FlagSet) *exportOptions {
	o := &exportOptions{}
	fs.StringVar(&o.format, "format", "safetensors", "output format: safetensors, gguf, or onnx (with --model)")
	fs.StringVar(&o.graph, "model", "", "the ONNX graph the checkpoint's weights belong to (for --format onnx)")
	fs.StringVar(&o.ggufType, "gguf-type", "f32", "tensor type of a GGUF export: f32, f16, bf16 or q8_0 (rows that are not whole 32-value blocks stay f32)")
	fs.StringVar(&o.output, "o", "", "the file to write (required)")
	return o
}

// exportCommand is `kiln export RUN_OR_CHECKPOINT --format safetensors -o
// FILE`, writing its report to out.
func exportCommand(args []string, out, _ io.Writer) error {
	fs := commandFlagSet("export")
	o := exportFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("export: want one run or checkpoint directory, got %d arguments", len(pos))
	}
	var gtype store.GGMLType
	switch f := strings.ToLower(o.format); f {
	case "safetensors":
	case "gguf":
		types := map[string]store.GGMLType{"f32": store.GGMLF32, "f16": store.GGMLF16, "bf16": store.GGMLBF16, "q8_0": store.GGMLQ8_0}
		t, ok := types[strings.ToLower(o.ggufType)]
		if !ok {
			return usagef("export: --gguf-type %q (want f32, f16, bf16 or q8_0)", o.ggufType)
		}
		gtype = t
	case "onnx":
		if o.graph == "" {
			return errors.New("export: a checkpoint holds weights, not the model's graph: give the ONNX file the model " +
				"was imported from with --model GRAPH.onnx, or call onnx.Export(model, exampleInput, path) from Go or a notebook")
		}
	default:
		return usagef("export: unknown format %q (want safetensors, gguf or onnx)", o.format)
	}
	if o.output == "" {
		return usagef("export: an output file is required (-o FILE)")
	}
	if fi, err := os.Stat(o.output); err == nil && fi.IsDir() {
		return fmt.Errorf("export: output %s is a directory; give a file name", o.output)
	}

	dir, how, err := resolveCheckpoint(pos[0])
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	r, err := store.OpenCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer r.Close()
	info := r.Info
	if ofi, err := os.Stat(o.output); err == nil {
		for _, f := range info.Files {
			if fi, err := os.Stat(filepath.Join(info.Dir, f.Name)); err == nil && os.SameFile(fi, ofi) {
				return fmt.Errorf("export: output %s is the checkpoint's own %s; writing it would break the checkpoint", o.output, f.Name)
			}
		}
	}
	md := store.ExportMetadata(info, version)
	if strings.ToLower(o.format) == "onnx" {
		if err := onnx.ExportCheckpoint(o.graph, info.Dir, o.output); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	} else if strings.ToLower(o.format) == "gguf" {
		if err := store.ExportGGUF(r, o.output, gtype, md); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	} else if err := r.Model.CopyTo(o.output, md); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var total int64
	for _, n := range r.Model.Names() {
		ti, _ := r.Model.Info(n)
		total += ti.Size
	}
	fmt.Fprintf(out, "exported %s (%s, epoch %d, step %d): %d tensors, %s of weights, to %s\n",
		info.Dir, how, info.Epoch, info.Step, len(r.Model.Names()), modelfile.Bytes(total), o.output)
	return nil
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments (`kiln export RUN -o out.safetensors`), which
// the flag package alone stops at; "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, nil
}

// resolveCheckpoint returns the checkpoint directory path names: path
// itself when it holds manifest.json, else, for a run directory (one with
// checkpoints/), the checkpoint that checkpoints/best names, else the one
// checkpoints/last names, else the newest checkpoints/*/ holding
// manifest.json by name (numbers compared as numbers, so epoch-10 is newer
// than epoch-9). A pointer is a file holding a directory name (relative to
// checkpoints/, to the run directory, or absolute) or a symbolic link to
// the directory. It also says, in words, which one it chose and why.
func resolveCheckpoint(path string) (dir, how string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	if !fi.IsDir() {
		return "", "", fmt.Errorf("%s is a file, not a run or checkpoint directory", path)
	}
	if isCheckpoint(path) {
		return path, "checkpoint", nil
	}
	ck := filepath.Join(path, "checkpoints")
	if fi, err := os.Stat(ck); err != nil || !fi.IsDir() {
		return "", "", fmt.Errorf("%s is neither a checkpoint directory (no manifest.json) nor a run directory (no checkpoints/)", path)
	}
	for _, ptr := range []string{"best", "last"} {
		dir, err := followPointer(path, ck, ptr)
		if err != nil {
			return "", "", err
		}
		if dir != "" {
			return dir, "the run's " + ptr + " checkpoint, from checkpoints/" + ptr, nil
		}
	}
	entries, err := os.ReadDir(ck)
	if err != nil {
		return "", "", err
	}
	var names []string
	for _, e := range entries {
		// Hidden names are a save's temporary or set-aside directories.
		if !strings.HasPrefix(e.Name(), ".") && isCheckpoint(filepath.Join(ck, e.Name())) {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", "", fmt.Errorf("run directory %s has no checkpoints (no checkpoints/*/manifest.json)", path)
	}
	sort.Slice(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
	return filepath.Join(ck, names[len(names)-1]), "the run's newest checkpoint by name", nil
}

// followPointer resolves checkpoints/<ptr> of run directory run: "" when
// there is no such pointer, an error when it exists but does not lead to
// a checkpoint.
func followPointer(run, ck, ptr string) (string, error) {
	p := filepath.Join(ck, ptr)
	fi, err := os.Stat(p) // follows a symbolic link
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, lerr := os.Lstat(p); lerr == nil {
			return "", fmt.Errorf("checkpoints/%s in %s is a broken link", ptr, run)
		}
		return "", nil
	case err != nil:
		return "", err
	case fi.IsDir():
		if !isCheckpoint(p) {
			return "", fmt.Errorf("checkpoints/%s in %s is a directory without manifest.json, not a checkpoint", ptr, run)
		}
		return p, nil
	case fi.Size() > 4096:
		return "", fmt.Errorf("checkpoints/%s in %s is %d bytes, too long for a pointer to a checkpoint directory", ptr, run, fi.Size())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	name, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("checkpoints/%s in %s is empty; it should name a checkpoint directory", ptr, run)
	}
	candidates := []string{name}
	if !filepath.IsAbs(name) {
		candidates = []string{filepath.Join(ck, name), filepath.Join(run, name)}
	}
	for _, c := range candidates {
		if isCheckpoint(c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("checkpoints/%s in %s names %q, which is not a checkpoint directory (no manifest.json there)", ptr, run, name)
}

// isCheckpoint reports whether dir holds a manifest.json file.
func isCheckpoint(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "manifest.json"))
	return err == nil && fi.Mode().IsRegular()
}

// naturalLess orders names with runs of digits compared as numbers:
// "epoch-9" < "epoch-10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digitRun returns the length of the run of ASCII digits s starts with.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

package store

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// LoadModel loads the weights at path into model for inference: path is a
// safetensors file, or a checkpoint directory whose model.safetensors is
// read after the whole checkpoint is verified against its manifest (see
// OpenCheckpoint). The file's keys must be exactly the dotted names of the
// model's parameters and buffers (nn.StateDict's), with the same shapes
// and dtypes; use a NameMap for PyTorch files whose names or layouts
// differ.
//
// Everything is checked before anything is written: the file's header
// against the model first (so a wrong file fails without reading its
// data), then every tensor is read onto its parameter's device, and only
// then are they all copied into the model. Missing, unexpected, mis-shaped
// and wrongly typed keys are all named at once in an error wrapping
// nn.ErrStateDict, and the model is left untouched; so it is on every
// other error: ErrCorrupt for a malformed file or checkpoint,
// ErrUnsupported for a dtype Kiln cannot hold, the operating system's error
// for a file that cannot be opened. Loading briefly holds a second copy of
// the weights.
func LoadModel(model any, path string) error { return NameMap{}.Load(model, path) }

// SaveModel writes the parameters and buffers of model (nn.StateDict) to
// path as a safetensors file with the metadata {"format": "pt"}, under
// the model's dotted names and in its layouts, which are PyTorch's for
// Kiln's layers: a PyTorch module whose attribute names match loads it
// with load_state_dict(strict=True). Use a NameMap where the names differ.
// The file is written atomically (see WriteSafetensors); it fails on an
// I/O error, leaving path untouched.
func SaveModel(model any, path string) error { return NameMap{}.Save(model, path) }

// weightSource is a file of named tensors a model loads from: a
// safetensors file or a GGUF file.
type weightSource interface {
	Names() []string
	Info(name string) (TensorInfo, bool)
	Tensor(name string, dev tensor.Device) (*tensor.Tensor, error)
}

// openWeights opens the safetensors or GGUF file at path, or the model
// file of the checkpoint directory at path after verifying the checkpoint.
// The returned function closes what was opened.
func openWeights(path string) (weightSource, func() error, error) {
	if isGGUFFile(path) {
		f, err := OpenGGUF(path)
		if err != nil {
			return nil, nil, err
		}
		return ggufSource{f}, func() error { return nil }, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("store: load %s: %w", path, err)
	}
	if fi.IsDir() {
		r, err := OpenCheckpoint(path)
		if err != nil {
			return nil, nil, err
		}
		return r.Model, r.Close, nil
	}
	sf, err := OpenSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	return sf, sf.Close, nil
}

// loadItem is one file tensor to load into one parameter.
type loadItem struct {
	key  string // the key in the file
	name string // the model's name for it
	p    *nn.Param
	perm []int // Kiln tensor = file tensor permuted by perm; nil when the layouts agree
}

// load loads the weights at path into model through the compiled map cm.
func (cm *compiledMap) load(model any, path string) error {
	src, closeSrc, err := openWeights(path)
	if err != nil {
		return err
	}
	defer closeSrc()

	targets := map[string]*nn.Param{}
	for _, np := range append(nn.Params(model), nn.Buffers(model)...) {
		targets[np.Name] = np.Param
	}
	var (
		items               []loadItem
		missing, unexpected []string
		problems            []string
		from                = map[string]string{} // model name → file key
	)
	for _, key := range src.Names() {
		if cm.ignored(key) {
			continue
		}
		name := cm.kilnName(key)
		label := key
		if name != key {
			label = key + " (as " + name + ")"
		}
		if prev, dup := from[name]; dup {
			problems = append(problems, fmt.Sprintf("%s and %s both map to %s", prev, key, name))
			continue
		}
		from[name] = key
		p, ok := targets[name]
		if !ok {
			unexpected = append(unexpected, label)
			continue
		}
		if p.Tensor == nil || p.Released() {
			problems = append(problems, label+": the model's tensor is missing or released")
			continue
		}
		info, _ := src.Info(key)
		if !info.Supported {
			problems = append(problems, fmt.Sprintf("%s: dtype %s, which Kiln cannot hold", label, info.FileDType))
			continue
		}
		perm, err := cm.layout(name, len(info.Shape))
		if err != nil {
			problems = append(problems, label+": "+err.Error())
			continue
		}
		if got, want := permuted(info.Shape, perm), p.Shape(); !slices.Equal(got, want) {
			if perm != nil {
				problems = append(problems, fmt.Sprintf("%s: shape %v in the file (%v in Kiln's layout), model has %v", label, info.Shape, got, want))
			} else {
				problems = append(problems, fmt.Sprintf("%s: shape %v, model has %v", label, got, want))
			}
			continue
		}
		if got, want := info.DType, p.DType(); got != want && !(cm.convertFloats && got.IsFloat() && want.IsFloat()) {
			problems = append(problems, fmt.Sprintf("%s: dtype %s, model has %s", label, got, want))
			continue
		}
		items = append(items, loadItem{key: key, name: name, p: p, perm: perm})
	}
	for name := range targets {
		if _, ok := from[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 || len(unexpected) > 0 || len(problems) > 0 {
		sort.Strings(missing)
		sort.Strings(unexpected)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "missing keys: "+strings.Join(missing, ", "))
		}
		if len(unexpected) > 0 {
			parts = append(parts, "unexpected keys: "+strings.Join(unexpected, ", "))
		}
		parts = append(parts, problems...)
		return fmt.Errorf("store: load %s: %w; nothing loaded: %s", path, nn.ErrStateDict, strings.Join(parts, "; "))
	}

	var loaded []*tensor.Tensor
	defer func() {
		for _, t := range loaded {
			t.Release()
		}
	}()
	sd := make(map[string]*tensor.Tensor, len(items))
	for _, it := range items {
		t, err := src.Tensor(it.key, it.p.Device().Inner())
		if err != nil {
			return fmt.Errorf("store: load %s: nothing loaded: %w", path, err)
		}
		loaded = append(loaded, t)
		if it.perm != nil {
			t = t.Permute(it.perm...)
			loaded = append(loaded, t)
		}
		sd[it.name] = t
	}
	if _, _, err := nn.LoadStateDict(model, sd); err != nil {
		return fmt.Errorf("store: load %s: %w", path, err)
	}
	return nil
}

// save writes the state dict of model to path through the compiled map
// cm.
func (cm *compiledMap) save(model any, path string) (err error) {
	return cm.saveWith(model, path, func(out map[string]*tensor.Tensor) error {
		return WriteSafetensors(path, out, map[string]string{"format": "pt"})
	})
}

// saveWith names and lays out the state dict of model for the file as
// save does and hands the tensors to write.
func (cm *compiledMap) saveWith(model any, path string, write func(map[string]*tensor.Tensor) error) (err error) {
	var sd map[string]*tensor.Tensor
	if err := tensor.Try(func() { sd = nn.StateDict(model) }); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	var views []*tensor.Tensor
	defer func() {
		for _, t := range sd {
			t.Release()
		}
		for _, t := range views {
			t.Release()
		}
	}()
	names := make([]string, 0, len(sd))
	for n := range sd {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]*tensor.Tensor, len(sd))
	to := map[string]string{} // file key → model name
	var problems []string
	for _, name := range names {
		t := sd[name]
		key := cm.fileName(name)
		if prev, dup := to[key]; dup {
			problems = append(problems, fmt.Sprintf("%s and %s both map to %s", prev, name, key))
			continue
		}
		to[key] = name
		if cm.checkInverse {
			if back := cm.kilnName(key); back != name {
				problems = append(problems, fmt.Sprintf("%s saves as %s, which the map loads back as %s", name, key, back))
				continue
			}
		}
		perm, err := cm.layout(name, t.Dims())
		if err != nil {
			problems = append(problems, name+": "+err.Error())
			continue
		}
		if perm != nil {
			t = t.Permute(inverse(perm)...)
			views = append(views, t)
		}
		out[key] = t
	}
	if len(problems) > 0 {
		return fmt.Errorf("store: write %s: cannot name the model's tensors for the file: %s", path, strings.Join(problems, "; "))
	}
	return write(out)
}

// permuted returns shape reordered by perm (shape itself for nil perm).
func permuted(shape, perm []int) []int {
	if perm == nil {
		return shape
	}
	out := make([]int, len(perm))
	for i, p := range perm {
		out[i] = shape[p]
	}
	return out
}

// inverse returns the permutation that undoes perm.
func inverse(perm []int) []int {
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	return inv
}

package nn

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// ErrStateDict reports a state dict that does not fit a model: missing or
// unexpected keys, or tensors of the wrong shape or dtype.
var ErrStateDict = errors.New("state dict does not match the model")

// StateDict returns the parameters and buffers of m by dotted name (see
// Params), as PyTorch's state_dict does. The tensors are views of the
// model's storage, made on the calling goroutine (so a Scope collects them)
// and outside any graph: they cost no copy, show later updates of the model,
// and releasing them never frees the model's memory. Save them, or copy
// them, before training on.
func StateDict(m any) map[string]*tensor.Tensor {
	entries := all(m)
	sd := make(map[string]*tensor.Tensor, len(entries))
	for _, np := range entries {
		checkTensor("nn.StateDict", np.Param.Tensor)
		sd[np.Name] = np.Param.Detach()
	}
	return sd
}

// LoadResult says what LoadStateDictPartial did. Each list is sorted.
type LoadResult struct {
	Loaded     []string          // keys whose values were copied into the model
	Missing    []string          // parameters and buffers of the model with no key (left unchanged)
	Unexpected []string          // keys that name nothing in the model
	Mismatched []string          // keys naming a model tensor of another shape or dtype (not loaded)
	Reasons    map[string]string // why each mismatched key was refused
}

// String summarises r on one line per kind of key.
func (r LoadResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "loaded %d", len(r.Loaded))
	if len(r.Missing) > 0 {
		fmt.Fprintf(&b, "; missing %s", strings.Join(r.Missing, ", "))
	}
	if len(r.Unexpected) > 0 {
		fmt.Fprintf(&b, "; unexpected %s", strings.Join(r.Unexpected, ", "))
	}
	if len(r.Mismatched) > 0 {
		parts := make([]string, len(r.Mismatched))
		for i, k := range r.Mismatched {
			parts[i] = k + " (" + r.Reasons[k] + ")"
		}
		fmt.Fprintf(&b, "; mismatched %s", strings.Join(parts, ", "))
	}
	return b.String()
}

// plan pairs each state-dict key with the model's tensors before anything
// is written.
type plan struct {
	LoadResult
	targets map[string]*Param
}

func makePlan(m any, sd map[string]*tensor.Tensor) plan {
	pl := plan{LoadResult: LoadResult{Reasons: map[string]string{}}, targets: map[string]*Param{}}
	model := map[string]*Param{}
	for _, np := range all(m) {
		model[np.Name] = np.Param
		if _, ok := sd[np.Name]; !ok {
			pl.Missing = append(pl.Missing, np.Name)
		}
	}
	for k, src := range sd {
		p, ok := model[k]
		if !ok {
			pl.Unexpected = append(pl.Unexpected, k)
			continue
		}
		if why := mismatch(p, src); why != "" {
			pl.Mismatched = append(pl.Mismatched, k)
			pl.Reasons[k] = why
			continue
		}
		pl.targets[k] = p
		pl.Loaded = append(pl.Loaded, k)
	}
	sort.Strings(pl.Missing)
	sort.Strings(pl.Unexpected)
	sort.Strings(pl.Mismatched)
	sort.Strings(pl.Loaded)
	return pl
}

// mismatch says why src cannot be loaded into p, or returns "".
//
// Floating-point dtypes convert into each other (a bfloat16 checkpoint
// loads into a float32 model, as in PyTorch's load_state_dict); any other
// dtype difference is refused, since converting between integers and
// floats or booleans is almost always a wrong key.
func mismatch(p *Param, src *tensor.Tensor) string {
	switch {
	case src == nil:
		return "nil tensor"
	case src.Released():
		return "released tensor"
	case p.Tensor == nil || p.Released():
		return "the model's tensor is missing or released"
	}
	if got, want := src.Shape(), p.Shape(); !slices.Equal(got, want) {
		return fmt.Sprintf("shape %v, model has %v", got, want)
	}
	if got, want := src.DType(), p.DType(); got != want && !(got.IsFloat() && want.IsFloat()) {
		return fmt.Sprintf("dtype %s, model has %s", got, want)
	}
	return ""
}

// load copies every planned source into its parameter. Sources on another
// device or of another dtype are staged first, all of them, so that a
// failure (out of memory, say) leaves the model unchanged; the copies
// themselves are Assigns, which cannot fail on checked shapes.
func (pl plan) load(sd map[string]*tensor.Tensor) error {
	staged := map[string]*tensor.Tensor{}
	defer func() {
		for _, t := range staged {
			t.Release()
		}
	}()
	err := tensor.Try(func() {
		for _, k := range pl.Loaded {
			p, src := pl.targets[k], sd[k]
			if src.Device().Same(p.Device()) && src.DType() == p.DType() {
				continue
			}
			d := src.Detach()
			s := d.ToDevice(p.Device().Inner())
			d.Release()
			if s.DType() != p.DType() {
				c := s.To(p.DType())
				s.Release()
				s = c
			}
			staged[k] = s
		}
	})
	if err != nil {
		return err
	}
	for _, k := range pl.Loaded {
		src := sd[k]
		if s, ok := staged[k]; ok {
			src = s
		}
		pl.targets[k].Assign(src)
	}
	return nil
}

// LoadStateDict copies the tensors of sd into the parameters and buffers of
// m with the same dotted names (see Params), in place: ids, devices,
// dtypes and gradient flags of the model stay as they are, and tensors on
// other devices are copied over. Floating-point dtypes convert into each
// other; other dtype differences are refused.
//
// Every key, shape and dtype is checked before anything is written. If a
// parameter or buffer has no key in sd, a key names nothing in m, or a
// tensor has the wrong shape or dtype, LoadStateDict loads nothing (never
// half a model) and returns an error wrapping ErrStateDict that names every
// offending key, along with the missing and unexpected keys. A device
// failure while staging copies also leaves m unchanged and is returned.
// Use LoadStateDictPartial to load what fits.
func LoadStateDict(m any, sd map[string]*tensor.Tensor) (missing, unexpected []string, err error) {
	pl := makePlan(m, sd)
	if len(pl.Missing) > 0 || len(pl.Unexpected) > 0 || len(pl.Mismatched) > 0 {
		var parts []string
		if len(pl.Missing) > 0 {
			parts = append(parts, "missing keys: "+strings.Join(pl.Missing, ", "))
		}
		if len(pl.Unexpected) > 0 {
			parts = append(parts, "unexpected keys: "+strings.Join(pl.Unexpected, ", "))
		}
		for _, k := range pl.Mismatched {
			parts = append(parts, k+": "+pl.Reasons[k])
		}
		return pl.Missing, pl.Unexpected, fmt.Errorf("nn.LoadStateDict: %w; nothing loaded: %s",
			ErrStateDict, strings.Join(parts, "; "))
	}
	if err := pl.load(sd); err != nil {
		return nil, nil, fmt.Errorf("nn.LoadStateDict: nothing loaded: %w", err)
	}
	return nil, nil, nil
}

// LoadStateDictPartial copies into m every tensor of sd whose key names a
// parameter or buffer of m of the same shape (and a compatible dtype, as in
// LoadStateDict), and reports the rest by name: parameters left unchanged,
// keys that name nothing, keys refused for their shape or dtype. Its error
// is only a device failure while staging copies, after which nothing was
// loaded; keys that do not fit are not errors.
func LoadStateDictPartial(m any, sd map[string]*tensor.Tensor) (LoadResult, error) {
	pl := makePlan(m, sd)
	if err := pl.load(sd); err != nil {
		res := pl.LoadResult
		res.Missing = append(append([]string(nil), res.Missing...), res.Loaded...)
		sort.Strings(res.Missing)
		res.Loaded = nil
		return res, fmt.Errorf("nn.LoadStateDictPartial: nothing loaded: %w", err)
	}
	return pl.LoadResult, nil
}

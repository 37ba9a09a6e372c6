package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// LoRA fine-tuning (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large
// Language Models"), with Hugging Face PEFT's conventions: each adapted
// weight W [Out, In…] gains W + (Alpha/Rank)·B·A with A [Rank, In…]
// (Kaiming-uniform, a = √5) and B [Out, Rank] (zeros, so training starts
// from the base model's outputs); the base model is frozen and only A and B
// train. Adapters are saved alone, under PEFT's names
// (base_model.model.<module path>.lora_A.weight), so a few megabytes carry a
// fine-tune of a model of gigabytes.
//
// The adapted layers are not replaced: Linear, Conv2d and MultiHeadAttention
// read their weights from their Params, so LoRA.Run puts W + s·B·A in the
// adapted Params for the duration of a forward pass and puts W back after
// (torch.nn.utils.parametrize's way, which PEFT also uses for
// MultiheadAttention). For Linear and convolution layers this equals PEFT's
// x·Wᵀ + s·(x·Aᵀ)·Bᵀ up to rounding; it costs one weight-sized temporary
// and one weight-sized gradient per adapted layer and step.

// LoRAConfig configures NewLoRA; each field's zero value is PEFT's default
// (LoraConfig), and the JSON names are PEFT's adapter_config.json keys.
type LoRAConfig struct {
	// Rank is r, the rank of the update B·A; 0 means 8.
	Rank int `json:"r,omitempty"`
	// Alpha is lora_alpha: the update is scaled by Alpha/Rank; 0 means 8.
	Alpha float64 `json:"lora_alpha,omitempty"`
	// Dropout is lora_dropout, the probability of dropping in training
	// mode. PEFT drops elements of the adapter's input x; here, with the
	// update folded into the weight, a column of A (one input feature, or
	// one input channel of a convolution) is dropped for the whole batch
	// and the rest scaled by 1/(1−Dropout), as minLoRA does. 0 means none.
	Dropout float64 `json:"lora_dropout,omitempty"`
	// TargetModules selects the layers to adapt by their dotted module
	// paths (as parameter names without the last segment:
	// "layers.0.self_attn"). An entry matches a path equal to it or ending
	// in "." followed by it, as PEFT's target_modules do ("linear1"
	// matches "layers.3.linear1"), with the glob rules of Freeze per
	// segment ("layers.*.self_attn", "**.out_proj"). Only Linear, Conv1d,
	// Conv2d (Groups 1) and MultiHeadAttention (its in_proj_weight; its
	// out_proj is a Linear of its own, adapted when matched) are adapted.
	// Empty means every such layer.
	TargetModules []string `json:"target_modules,omitempty"`
}

// normalized fills in the defaults and checks c.
func (c LoRAConfig) normalized() (LoRAConfig, error) {
	if c.Rank == 0 {
		c.Rank = 8
	}
	if c.Alpha == 0 {
		c.Alpha = 8
	}
	switch {
	case c.Rank < 0:
		return c, fmt.Errorf("nn.NewLoRA: %w: Rank %d is negative", tensor.ErrArgument, c.Rank)
	case c.Alpha < 0 || math.IsNaN(c.Alpha) || math.IsInf(c.Alpha, 0):
		return c, fmt.Errorf("nn.NewLoRA: %w: Alpha %v must be positive and finite", tensor.ErrArgument, c.Alpha)
	case c.Dropout < 0 || c.Dropout >= 1 || math.IsNaN(c.Dropout):
		return c, fmt.Errorf("nn.NewLoRA: %w: Dropout %v outside [0, 1)", tensor.ErrArgument, c.Dropout)
	}
	for _, p := range c.TargetModules {
		if !validPattern(p) {
			return c, fmt.Errorf("nn.NewLoRA: %w: malformed target module pattern %q", tensor.ErrArgument, p)
		}
	}
	return c, nil
}

// LoRAAdapter is the low-rank update of one layer's weight: A [Rank, In…]
// and B [Out, Rank], the update being Scaling·B·A reshaped to the weight.
type LoRAAdapter struct {
	A *Param `kiln:"lora_A"`
	B *Param `kiln:"lora_B"`
	// Path is the adapted module's dotted path in the base model.
	Path string `kiln:"-"`
	// Kind is "linear", "conv" or "attention".
	Kind string `kiln:"-"`
	// Scaling is Alpha/Rank.
	Scaling float64 `kiln:"-"`

	weight *Param // the adapted weight of the base model
}

// LoRA is a model with LoRA adapters: the base model (frozen by NewLoRA)
// and one adapter per adapted layer, by module path. Its trainable
// parameters are the adapters' (TrainableParams(l)), so an optimizer given
// the LoRA trains them alone. Train and Eval reach the base model and the
// adapters' dropout. A LoRA is not safe for concurrent forward passes: Run
// puts the adapted weights in the model's Params while it runs.
type LoRA struct {
	Mode
	Model    any                     `kiln:"model"`
	Adapters map[string]*LoRAAdapter `kiln:"adapters"`
	Config   LoRAConfig              `kiln:"-"`

	merged  bool
	running bool
}

// NewLoRA freezes every parameter of model and adds a LoRA adapter to each
// layer that cfg.TargetModules selects (see LoRAConfig), initialised as
// PEFT initialises it (A Kaiming-uniform with a = √5 from the device's
// random stream, B zeros), on the device and in the dtype of the adapted
// weight. Adapters require gradients when that device is an autodiff view.
// It returns an error wrapping tensor.ErrArgument for a bad config or a
// target pattern that selects no supported layer, and one wrapping
// ErrModule for a Conv layer with Groups ≠ 1 that a pattern selects; the
// model is then left as it was.
func NewLoRA(model any, cfg LoRAConfig) (*LoRA, error) {
	c, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	if model == nil {
		return nil, fmt.Errorf("nn.NewLoRA: %w: nil model", tensor.ErrArgument)
	}
	targets, err := loraTargets(model, c.TargetModules)
	if err != nil {
		return nil, err
	}
	l := &LoRA{Model: model, Adapters: map[string]*LoRAAdapter{}, Config: c}
	var froze []*Param
	for _, np := range Params(model) {
		if !np.Param.Frozen() {
			np.Param.SetFrozen(true)
			froze = append(froze, np.Param)
		}
	}
	err = tensor.Try(func() {
		outsideScopes(func() {
			for _, t := range targets {
				l.Adapters[t.path] = newLoRAAdapter(t, c)
			}
		})
	})
	if err != nil {
		for _, a := range l.Adapters {
			Release(a)
		}
		for _, p := range froze {
			p.SetFrozen(false)
		}
		return nil, fmt.Errorf("nn.NewLoRA: %w", err)
	}
	return l, nil
}

// loraTarget is one layer to adapt.
type loraTarget struct {
	path   string
	kind   string
	weight *Param
}

// loraTargets walks model for the layers patterns select.
func loraTargets(model any, patterns []string) ([]loraTarget, error) {
	var out []loraTarget
	var walk func(n *node) error
	walk = func(n *node) error {
		if n.param != nil {
			return nil
		}
		if t, ok := loraKind(n); ok && loraSelected(patterns, n.path) {
			out = append(out, t) // and walk on: an attention's out_proj is a Linear of its own
		}
		for _, c := range n.children {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	root := tree(model)
	if root != nil {
		if err := walk(root); err != nil {
			return nil, err
		}
	}
	for _, t := range out {
		if t.kind == "badconv" {
			return nil, fmt.Errorf("nn.NewLoRA: %w: %s is a grouped convolution, which LoRA does not adapt", ErrModule, t.path)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("nn.NewLoRA: %w: target modules %q select no Linear, Conv1d, Conv2d or MultiHeadAttention of the model",
			tensor.ErrArgument, patterns)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// loraKind reports whether node n is a layer LoRA adapts, and how.
func loraKind(n *node) (loraTarget, bool) {
	if !n.value.IsValid() || n.value.Kind() != reflect.Struct || !n.value.CanAddr() {
		return loraTarget{}, false
	}
	t := loraTarget{path: n.path}
	switch m := n.value.Addr().Interface().(type) {
	case *Linear:
		t.kind, t.weight = "linear", m.Weight
	case *Conv2d:
		t.kind, t.weight = "conv", m.Weight
		if m.Groups != 1 {
			t.kind = "badconv"
		}
	case *Conv1d:
		t.kind, t.weight = "conv", m.Weight
		if m.Groups != 1 {
			t.kind = "badconv"
		}
	case *MultiHeadAttention:
		t.kind, t.weight = "attention", m.InProjWeight
	default:
		return t, false
	}
	return t, t.weight != nil
}

// loraSelected reports whether a module path matches the target patterns
// (every path when there are none).
func loraSelected(patterns []string, path string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if MatchName(p, path) || MatchName("**."+p, path) {
			return true
		}
	}
	return false
}

func validPattern(p string) bool {
	if p == "" {
		return false
	}
	for _, seg := range strings.Split(p, ".") {
		if _, err := path.Match(seg, ""); seg == "" || err != nil {
			return false
		}
	}
	return true
}

// newLoRAAdapter makes the adapter of one layer.
func newLoRAAdapter(t loraTarget, c LoRAConfig) *LoRAAdapter {
	w := t.weight.Tensor
	shape := w.Shape()
	out := shape[0]
	aShape := append([]int{c.Rank}, shape[1:]...)
	bShape := []int{out, c.Rank}
	fanIn := 1
	for _, d := range shape[1:] {
		fanIn *= d
	}
	if t.kind == "conv" {
		for range shape[2:] {
			bShape = append(bShape, 1)
		}
	}
	dev := w.Device()
	a := KaimingUniform{A: math.Sqrt(5)}.Init(dev, aShape, fanIn, c.Rank)
	if a.DType() != w.DType() {
		c := a.To(w.DType())
		a.Release()
		a = c
	}
	b := tensor.ZerosOf(dev, w.DType(), bShape...)
	return &LoRAAdapter{A: NewParam(a), B: NewParam(b), Path: t.path, Kind: t.kind,
		Scaling: c.Alpha / float64(c.Rank), weight: t.weight}
}

// delta returns Scaling·B·A in the weight's shape, recorded when A or B
// require gradients; keep, when not nil, multiplies A's columns first.
func (a *LoRAAdapter) delta(A, B, keep *tensor.Tensor) *tensor.Tensor {
	if keep != nil {
		A = A.Mul(keep)
	}
	r := A.Dim(0)
	d := B.Reshape(B.Dim(0), r).Matmul(A.Reshape(r, A.NumElements()/max(r, 1)))
	return d.MulScalar(a.Scaling).Reshape(a.weight.Shape()...)
}

// Delta returns the update Scaling·B·A the adapter adds to its weight,
// shaped as the weight, outside any graph.
func (a *LoRAAdapter) Delta() *tensor.Tensor {
	var d *tensor.Tensor
	tensor.Scope(func() { d = a.delta(a.A.Detach(), a.B.Detach(), nil).Keep() })
	return d
}

// dropMask returns the Bernoulli(1−p)/(1−p) mask over A's input features
// (input channels for a convolution).
func (a *LoRAAdapter) dropMask(p float64) *tensor.Tensor {
	shape := a.A.Shape()
	shape[0] = 1
	if a.Kind == "conv" {
		for i := 2; i < len(shape); i++ {
			shape[i] = 1
		}
	}
	keep := tensor.Bernoulli(a.A.Device().Inner(), 1-p, shape...)
	k := keep.To(a.A.DType()).MulScalar(1 / (1 - p))
	keep.Release()
	return k
}

// sortedAdapters returns the adapters in path order.
func (l *LoRA) sortedAdapters() []*LoRAAdapter {
	keys := make([]string, 0, len(l.Adapters))
	for k := range l.Adapters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*LoRAAdapter, len(keys))
	for i, k := range keys {
		out[i] = l.Adapters[k]
	}
	return out
}

// Run calls fn with each adapted weight W of the base model replaced by
// W + Scaling·B·A (recorded, so Backward reaches A and B), and puts W back
// when fn returns or panics. Models whose Forward takes other arguments
// than one tensor run their forward pass in fn. Merged adapters are
// already in the weights: Run then just calls fn, as does a nested Run.
// The updated weights are temporaries of the calling goroutine's Scope.
func (l *LoRA) Run(fn func()) {
	if l.merged || l.running {
		fn()
		return
	}
	adapters := l.sortedAdapters()
	saved := make([]*tensor.Tensor, len(adapters))
	defer func() {
		for i, a := range adapters {
			if saved[i] != nil {
				a.weight.Tensor = saved[i]
			}
		}
		l.running = false
	}()
	drop := l.Training() && l.Config.Dropout > 0
	for i, a := range adapters {
		var keep *tensor.Tensor
		if drop {
			keep = a.dropMask(l.Config.Dropout)
		}
		w := a.weight.Tensor
		eff := w.Add(a.delta(a.A.Tensor, a.B.Tensor, keep))
		saved[i] = w
		a.weight.Tensor = eff
	}
	l.running = true
	fn()
}

// Forward applies the adapted model to x (see Run). It panics with a
// *tensor.Error (ErrArgument, Op "nn.LoRA") when the base model is not a
// Module, and as the model does otherwise.
func (l *LoRA) Forward(x *tensor.Tensor) *tensor.Tensor {
	m, ok := l.Model.(Module)
	if !ok {
		argError("nn.LoRA", "the base model %T has no Forward(*tensor.Tensor) *tensor.Tensor; use Run", l.Model)
	}
	var y *tensor.Tensor
	l.Run(func() { y = m.Forward(x) })
	return y
}

// Merged reports whether the adapters are merged into the base weights.
func (l *LoRA) Merged() bool { return l.merged }

// Merge adds each adapter's update into its base weight in place
// (PEFT's merge_adapter), so the model runs at the base model's cost with
// the fine-tuned outputs (within rounding) and can be saved as a plain
// model. Forward then uses the merged weights and the adapters receive no
// gradients until Unmerge. Merging merged adapters does nothing.
func (l *LoRA) Merge() { l.merge(true) }

// Unmerge subtracts the merged updates from the base weights again
// (PEFT's unmerge_adapter), restoring them up to rounding. Unmerging
// adapters that are not merged does nothing.
func (l *LoRA) Unmerge() { l.merge(false) }

func (l *LoRA) merge(add bool) {
	if l.merged == add {
		return
	}
	tensor.Scope(func() {
		for _, a := range l.sortedAdapters() {
			w := a.weight.Detach()
			d := a.Delta()
			if add {
				w.Assign(w.Add(d))
			} else {
				w.Assign(w.Sub(d))
			}
			d.Release()
		}
	})
	l.merged = add
}

// peftName is PEFT's name of an adapter tensor ("lora_A" or "lora_B") of
// the module at path: PEFT names the base model "base_model.model" inside a
// PeftModel. The model's root itself, path "", gives
// "base_model.model.lora_A.weight".
func peftName(path, which string) string {
	if path == "" {
		return "base_model.model." + which + ".weight"
	}
	return "base_model.model." + path + "." + which + ".weight"
}

// AdapterStateDict returns the adapters' tensors under PEFT's names,
// "base_model.model.<path>.lora_A.weight" and ".lora_B.weight", the
// contents of PEFT's adapter_model.safetensors (write them with
// store.WriteSafetensors). The tensors are views of the adapters, outside
// any graph, made on the calling goroutine as StateDict's are.
func (l *LoRA) AdapterStateDict() map[string]*tensor.Tensor {
	sd := make(map[string]*tensor.Tensor, 2*len(l.Adapters))
	for path, a := range l.Adapters {
		sd[peftName(path, "lora_A")] = a.A.Detach()
		sd[peftName(path, "lora_B")] = a.B.Detach()
	}
	return sd
}

// LoadAdapterStateDict copies adapters saved under PEFT's names (see
// AdapterStateDict) into l's adapters, converting floating-point dtypes
// and devices as LoadStateDict does. It checks everything first and loads
// nothing, returning an error wrapping ErrStateDict, when a key is missing
// or unexpected or a tensor has the wrong shape (a different rank, say),
// and it refuses (ErrModule) while the adapters are merged.
func (l *LoRA) LoadAdapterStateDict(sd map[string]*tensor.Tensor) error {
	if l.merged {
		return fmt.Errorf("nn.LoRA.LoadAdapterStateDict: %w: the adapters are merged; Unmerge first", ErrModule)
	}
	pl := plan{LoadResult: LoadResult{Reasons: map[string]string{}}, targets: map[string]*Param{}}
	want := map[string]*Param{}
	for path, a := range l.Adapters {
		want[peftName(path, "lora_A")] = a.A
		want[peftName(path, "lora_B")] = a.B
	}
	for k, p := range want {
		src, ok := sd[k]
		if !ok {
			pl.Missing = append(pl.Missing, k)
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
	for k := range sd {
		if _, ok := want[k]; !ok {
			pl.Unexpected = append(pl.Unexpected, k)
		}
	}
	if len(pl.Missing)+len(pl.Unexpected)+len(pl.Mismatched) > 0 {
		slices.Sort(pl.Missing)
		slices.Sort(pl.Unexpected)
		slices.Sort(pl.Mismatched)
		pl.Loaded = nil
		return fmt.Errorf("nn.LoRA.LoadAdapterStateDict: %w; nothing loaded: %s", ErrStateDict, pl.LoadResult.String())
	}
	slices.Sort(pl.Loaded)
	if err := pl.load(sd); err != nil {
		return fmt.Errorf("nn.LoRA.LoadAdapterStateDict: nothing loaded: %w", err)
	}
	return nil
}

// AdapterConfigJSON returns PEFT's adapter_config.json for the adapters,
// which PEFT's PeftModel.from_pretrained reads beside
// adapter_model.safetensors: peft_type LORA, r, lora_alpha, lora_dropout,
// bias "none" and target_modules (the configured patterns, or the adapted
// module paths when none were given). baseModel is written as
// base_model_name_or_path ("" for null). PEFT matches target_modules by
// exact name or name suffix, not by Kiln's glob patterns, so patterns
// with * or ? select in PEFT only what they name literally.
func (l *LoRA) AdapterConfigJSON(baseModel string) ([]byte, error) {
	targets := l.Config.TargetModules
	if len(targets) == 0 {
		for path := range l.Adapters {
			if path != "" {
				targets = append(targets, path)
			}
		}
		sort.Strings(targets)
	}
	var base any
	if baseModel != "" {
		base = baseModel
	}
	return json.MarshalIndent(map[string]any{
		"peft_type": "LORA", "r": l.Config.Rank, "lora_alpha": l.Config.Alpha, "lora_dropout": l.Config.Dropout,
		"bias": "none", "target_modules": targets, "fan_in_fan_out": false, "init_lora_weights": true,
		"inference_mode": true, "base_model_name_or_path": base, "task_type": nil,
	}, "", "  ")
}

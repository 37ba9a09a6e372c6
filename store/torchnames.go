package store

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// NameRule rewrites a parameter name. By default From is a literal prefix:
// a name starting with From has that prefix replaced by To ({"module.", ""}
// strips DataParallel's prefix; {"features.0.", "Conv1."} renames a
// layer). With Regexp set, From is a regular expression (RE2 syntax) and
// every match is replaced by To, in which $1 and ${name} expand submatches
// (regexp.Regexp.ReplaceAllString).
type NameRule struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Regexp bool   `json:"regexp,omitempty"`
}

// Permutation says that the tensors whose Kiln names match Pattern (a
// regular expression) are stored in the file in another layout: the Kiln
// tensor is the file tensor permuted by Dims, as tensor.Permute and
// torch.permute take them (Dims {3, 2, 0, 1} turns a TensorFlow HWIO
// convolution kernel into Kiln's OIHW).
type Permutation struct {
	Pattern string `json:"pattern"`
	Dims    []int  `json:"dims"`
}

// NameMap maps the names and layouts of a PyTorch state dict saved as
// safetensors (or any other file) to those of an equivalent Kiln model,
// for loading (Load) and for saving files that the PyTorch module loads
// with load_state_dict(strict=True) (Save). The zero NameMap maps every
// name to itself and changes no layout: Kiln's layers already use
// PyTorch's names and layouts, so a Kiln model whose fields are named as
// the PyTorch module's attributes needs none.
//
//	m := store.NameMap{
//		Rules: []store.NameRule{
//			{From: "module."},                      // strip DataParallel's prefix
//			{From: "features.0.", To: "Conv1."},    // features.0.weight → Conv1.weight
//			{From: "classifier.", To: "Head."},
//		},
//		Transpose: []string{`^Proj\.weight$`},     // stored [in, out], Kiln's Linear is [out, in]
//	}
//	err := m.Load(model, "resnet.safetensors")
//
// The map is plain data (JSON-serialisable, usable from notebook cells).
// Every regular expression is compiled when Load or Save runs; a bad one
// fails that call, naming it.
type NameMap struct {
	// Rules turn a file key into a Kiln name: every rule is applied, in
	// order, each to the result of the one before.
	Rules []NameRule `json:"rules,omitempty"`
	// SaveRules turn a Kiln name into a file key when saving, applied the
	// same way. When nil, Save uses the inverse of Rules (each prefix rule
	// with From and To swapped, in reverse order) and checks that every
	// name it writes loads back through Rules to the same Kiln name; Rules
	// with a regular expression cannot be inverted, so Save then needs
	// SaveRules.
	SaveRules []NameRule `json:"save_rules,omitempty"`
	// Transpose lists regular expressions of Kiln names whose tensors are
	// 2-D and stored transposed in the file (a GPT-2 Conv1D weight is
	// [in, out] where a Linear's is [out, in]). They are transposed when
	// loading and back when saving.
	Transpose []string `json:"transpose,omitempty"`
	// Permute lists other layout differences (see Permutation). A name
	// matching several Transpose or Permute patterns takes the first
	// Transpose one, else the first Permute one.
	Permute []Permutation `json:"permute,omitempty"`
	// Ignore lists regular expressions of file keys that Load skips (a
	// buffer the Kiln model does not have, the second name of a tied
	// weight).
	Ignore []string `json:"ignore,omitempty"`
	// ConvertFloats lets Load convert between floating-point dtypes (a
	// bfloat16 file into a float32 model), as PyTorch's load_state_dict
	// does; by default every dtype must match exactly.
	ConvertFloats bool `json:"convert_floats,omitempty"`
}

// Load loads the weights at path (a safetensors file or a checkpoint
// directory) into model, renaming each file key with m's rules and
// changing layouts as m says, strictly and all or nothing as LoadModel
// does: every model parameter and buffer must receive exactly one tensor
// of its shape and dtype, and every file key not ignored must name one.
// The error names each offending key as the file has it and, where
// renamed, as it maps ("module.fc.weight (as Fc.weight)"); two keys that
// map to the same name are an error too.
func (m NameMap) Load(model any, path string) error {
	cm, err := m.compile(false)
	if err != nil {
		return fmt.Errorf("store: load %s: %w", path, err)
	}
	return cm.load(model, path)
}

// Save writes the parameters and buffers of model to path as a
// safetensors file (metadata {"format": "pt"}), each under the file key
// m's save rules give its Kiln name and in the file's layout, so that the
// PyTorch module the map describes loads it with
// load_state_dict(strict=True). It fails, writing nothing, when two
// names map to the same key, when a name does not load back to itself
// (see SaveRules), when Rules cannot be inverted and SaveRules is nil, or
// on an I/O error.
func (m NameMap) Save(model any, path string) error {
	cm, err := m.compile(true)
	if err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	return cm.save(model, path)
}

// KilnName returns the Kiln name that Load gives the file key, or an
// error for a rule that does not compile.
func (m NameMap) KilnName(key string) (string, error) {
	cm, err := m.compile(false)
	if err != nil {
		return "", err
	}
	return cm.kilnName(key), nil
}

// FileName returns the file key that Save gives the Kiln name, or an
// error for a rule that does not compile or Rules that cannot be inverted.
func (m NameMap) FileName(name string) (string, error) {
	cm, err := m.compile(true)
	if err != nil {
		return "", err
	}
	return cm.fileName(name), nil
}

// compiledRule is a NameRule ready to apply.
type compiledRule struct {
	prefix, to string
	re         *regexp.Regexp
}

func (r compiledRule) apply(name string) string {
	if r.re != nil {
		return r.re.ReplaceAllString(name, r.to)
	}
	if rest, ok := strings.CutPrefix(name, r.prefix); ok {
		return r.to + rest
	}
	return name
}

// compiledPerm is a Permutation (or a Transpose pattern, with nil dims)
// ready to match.
type compiledPerm struct {
	re   *regexp.Regexp
	dims []int // nil: transpose a 2-D tensor
}

// compiledMap is a NameMap with its expressions compiled.
type compiledMap struct {
	loadRules     []compiledRule
	saveRules     []compiledRule
	perms         []compiledPerm
	ignore        []*regexp.Regexp
	convertFloats bool
	checkInverse  bool // save rules were derived from Rules: check the round trip
}

// compile checks and compiles m; forSave also derives the save rules.
func (m NameMap) compile(forSave bool) (*compiledMap, error) {
	cm := &compiledMap{convertFloats: m.ConvertFloats}
	rules := func(what string, rs []NameRule) ([]compiledRule, error) {
		out := make([]compiledRule, len(rs))
		for i, r := range rs {
			if !r.Regexp {
				out[i] = compiledRule{prefix: r.From, to: r.To}
				continue
			}
			re, err := regexp.Compile(r.From)
			if err != nil {
				return nil, fmt.Errorf("name map: %s %d (%q): %v", what, i, r.From, err)
			}
			out[i] = compiledRule{re: re, to: r.To}
		}
		return out, nil
	}
	var err error
	if cm.loadRules, err = rules("rule", m.Rules); err != nil {
		return nil, err
	}
	if forSave {
		if m.SaveRules != nil {
			if cm.saveRules, err = rules("save rule", m.SaveRules); err != nil {
				return nil, err
			}
		} else {
			cm.checkInverse = true
			for i, r := range slices.Backward(m.Rules) {
				if r.Regexp {
					return nil, fmt.Errorf("name map: rule %d (%q) is a regular expression, which cannot be inverted for saving; give SaveRules", i, r.From)
				}
				cm.saveRules = append(cm.saveRules, compiledRule{prefix: r.To, to: r.From})
			}
		}
	}
	for i, p := range m.Transpose {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("name map: transpose pattern %d (%q): %v", i, p, err)
		}
		cm.perms = append(cm.perms, compiledPerm{re: re})
	}
	for i, p := range m.Permute {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("name map: permute pattern %d (%q): %v", i, p.Pattern, err)
		}
		seen := make([]bool, len(p.Dims))
		for _, d := range p.Dims {
			if d < 0 || d >= len(p.Dims) || seen[d] {
				return nil, fmt.Errorf("name map: permute pattern %d (%q): dims %v are not a permutation of 0…%d", i, p.Pattern, p.Dims, len(p.Dims)-1)
			}
			seen[d] = true
		}
		cm.perms = append(cm.perms, compiledPerm{re: re, dims: slices.Clone(p.Dims)})
	}
	for i, p := range m.Ignore {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("name map: ignore pattern %d (%q): %v", i, p, err)
		}
		cm.ignore = append(cm.ignore, re)
	}
	return cm, nil
}

func (cm *compiledMap) kilnName(key string) string {
	for _, r := range cm.loadRules {
		key = r.apply(key)
	}
	return key
}

func (cm *compiledMap) fileName(name string) string {
	for _, r := range cm.saveRules {
		name = r.apply(name)
	}
	return name
}

func (cm *compiledMap) ignored(key string) bool {
	for _, re := range cm.ignore {
		if re.MatchString(key) {
			return true
		}
	}
	return false
}

// layout returns the permutation that turns the file tensor of the Kiln
// name into Kiln's layout (nil when they agree), or an error when a
// matching rule does not fit a tensor of rank dims.
func (cm *compiledMap) layout(name string, dims int) ([]int, error) {
	for _, p := range cm.perms {
		if !p.re.MatchString(name) {
			continue
		}
		if p.dims == nil {
			if dims != 2 {
				return nil, fmt.Errorf("matches transpose pattern %q but has %d dimensions, not 2", p.re, dims)
			}
			return []int{1, 0}, nil
		}
		if len(p.dims) != dims {
			return nil, fmt.Errorf("matches permute pattern %q (dims %v) but has %d dimensions", p.re, p.dims, dims)
		}
		return p.dims, nil
	}
	return nil, nil
}

package nn

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/kiln-ml/kiln/tensor"
)

// ErrModule reports a model that the module functions cannot handle as
// asked, such as a mode-carrying module that is not addressable.
var ErrModule = errors.New("invalid module")

// NamedParam is a Param with its dotted path in the model
// ("Encoder.Layers.0.Attn.Q.Weight").
type NamedParam struct {
	Name  string
	Param *Param
}

// node is one value of a model tree: a module (a struct), a container (a
// slice, array or map of modules or params) or a Param (a leaf).
type node struct {
	name     string        // last path segment; "" for the root
	path     string        // dotted path from the root
	value    reflect.Value // the struct or container itself (pointers followed)
	param    *Param        // set for leaves
	children []*node
	embedded []reflect.Value // embedded structs flattened into this node
}

// walker builds the tree of a model once, visiting every pointer once and
// reporting every Param once, under the first name it is reached by.
type walker struct {
	seen   map[ptrKey]bool
	params map[*Param]bool
}

type ptrKey struct {
	p unsafe.Pointer
	t reflect.Type
}

var (
	paramPtrType   = reflect.TypeFor[*Param]()
	modeSetterType = reflect.TypeFor[ModeSetter]()
	modeGetterType = reflect.TypeFor[interface{ Training() bool }]()
)

// tree returns the model tree of m (nil when m holds nothing to walk).
func tree(m any) *node {
	w := &walker{seen: map[ptrKey]bool{}, params: map[*Param]bool{}}
	root := &node{}
	w.visit(root, "", reflect.ValueOf(m), true)
	if len(root.children) == 1 && root.children[0].name == "" {
		return root.children[0]
	}
	return nil
}

// visit adds the node for v, named name, to parent (isRoot: parent is the
// synthetic node above the model, so the path does not include it).
// Pointers and interfaces are followed.
func (w *walker) visit(parent *node, name string, v reflect.Value, isRoot bool) {
	v, ok := w.deref(v)
	if !ok {
		return
	}
	// yaegi passes an interpreted value to compiled code of interface type
	// (an nn.Module in a Sequential) in a wrapper struct: walk what it
	// holds, under the same name, and keep the wrapper, whose methods are
	// the interpreted value's, for Train, Eval and Summary.
	var wrapper reflect.Value
	if inner, ok := yaegiWrapper(v); ok {
		wrapper = v
		if v, ok = w.deref(inner); !ok {
			return
		}
	}
	if v.Type() == paramPtrType {
		p := (*Param)(v.UnsafePointer())
		if w.params[p] {
			return
		}
		w.params[p] = true
		parent.children = append(parent.children, &node{name: name, path: joinPath(parent, name, isRoot), param: p})
		return
	}
	if !mayHoldModules(v.Type()) && !wrapper.IsValid() {
		return // plain data (a []float32 of a million samples): nothing to find
	}
	n := &node{name: name, path: joinPath(parent, name, isRoot), value: v}
	if wrapper.IsValid() {
		n.embedded = append(n.embedded, wrapper)
	}
	switch v.Kind() {
	case reflect.Struct:
		w.fields(n, v)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.visit(n, strconv.Itoa(i), v.Index(i), false)
		}
	case reflect.Map:
		w.entries(n, v)
	default:
		if !wrapper.IsValid() {
			return
		}
	}
	parent.children = append(parent.children, n)
}

// deref follows pointers and interfaces (and the wrapper yaegi uses for
// interfaces declared in interpreted code) down to a Param, a struct or a
// container. It reports false for nil and for pointers seen before.
func (w *walker) deref(v reflect.Value) (reflect.Value, bool) {
	for v.IsValid() {
		switch v.Kind() {
		case reflect.Interface:
			if v.IsNil() {
				return v, false
			}
			v = v.Elem()
			continue
		case reflect.Pointer:
			if v.IsNil() {
				return v, false
			}
			if v.Type() == paramPtrType {
				return v, true
			}
			k := ptrKey{v.UnsafePointer(), v.Type()}
			if w.seen[k] {
				return v, false
			}
			w.seen[k] = true
			v = v.Elem()
			continue
		case reflect.Map:
			if v.IsNil() {
				return v, false
			}
			k := ptrKey{v.UnsafePointer(), v.Type()}
			if w.seen[k] {
				return v, false
			}
			w.seen[k] = true
		case reflect.Struct:
			if inner, ok := yaegiInterface(v); ok {
				v = inner
				continue
			}
		}
		return v, true
	}
	return v, false
}

// fields visits the exported fields of struct v into n, flattening
// embedded structs and the entries of fields tagged `kiln:",inline"`.
func (w *walker) fields(n *node, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, embedded, ok := fieldName(t, f)
		if !ok {
			continue
		}
		fv := v.Field(i)
		if embedded {
			// Promote the embedded module's fields into n.
			inner, ok := w.deref(fv)
			switch {
			case ok && inner.Kind() == reflect.Struct:
				n.embedded = append(n.embedded, exposed(inner))
				w.fields(n, inner)
			case ok && inner.Kind() == reflect.Map:
				w.entries(n, inner)
			}
			continue
		}
		w.visit(n, name, fv, false)
	}
}

// entries visits the values of map v, keyed by string or integer, in key
// order; maps with other key types are skipped.
func (w *walker) entries(n *node, v reflect.Value) {
	keys := v.MapKeys()
	switch v.Type().Key().Kind() {
	case reflect.String:
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		sort.Slice(keys, func(i, j int) bool { return keys[i].Int() < keys[j].Int() })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		sort.Slice(keys, func(i, j int) bool { return keys[i].Uint() < keys[j].Uint() })
	default:
		return
	}
	for _, k := range keys {
		var name string
		switch k.Kind() {
		case reflect.String:
			name = k.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			name = strconv.FormatInt(k.Int(), 10)
		default:
			name = strconv.FormatUint(k.Uint(), 10)
		}
		w.visit(n, name, v.MapIndex(k), false)
	}
}

// exposed returns an addressable value reached through an unexported
// embedded field as a value whose methods can be called: an embedded
// struct is part of its module (its exported fields are walked, as
// encoding/json does), and its mode must be settable even where Go does not
// promote its methods.
func exposed(v reflect.Value) reflect.Value {
	if !v.CanInterface() && v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	return v
}

func joinPath(parent *node, name string, isRoot bool) string {
	if isRoot || parent.path == "" {
		return name
	}
	return parent.path + "." + name
}

// fieldName returns the path segment of field f of struct type t, whether
// it is an embedded struct to flatten, and whether to visit it at all.
func fieldName(t reflect.Type, f reflect.StructField) (name string, embedded, ok bool) {
	tag, opts, _ := strings.Cut(f.Tag.Get("kiln"), ",")
	if tag == "-" {
		return "", false, false
	}
	ft := f.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct && f.Type != paramPtrType {
		return "", true, true
	}
	if !f.IsExported() {
		return "", false, false
	}
	if opts == "inline" && ft.Kind() == reflect.Map {
		// The entries of an inline map are named as if they were fields of
		// the parent: layers whose parameter names are computed (an LSTM's
		// weight_ih_l0, weight_ih_l1, …) keep them at the top level.
		return "", true, true
	}
	if tag != "" {
		return tag, false, true
	}
	if t.Name() == "" {
		return interpretedFieldName(f.Name), false, true
	}
	return f.Name, false, true
}

// interpretedFieldName undoes yaegi's renaming of unexported fields (see
// "Interpreted models" in the package doc): in an unnamed struct type, a
// leading X followed by an underscore or a letter that is not upper case
// is yaegi's and is dropped.
func interpretedFieldName(s string) string {
	if len(s) < 2 || s[0] != 'X' {
		return s
	}
	r, _ := utf8.DecodeRuneInString(s[1:])
	if r == '_' || (unicode.IsLetter(r) && !unicode.IsUpper(r)) {
		return s[1:]
	}
	return s
}

var holdCache sync.Map // reflect.Type → bool

// mayHoldModules reports whether a value of type t can lead to a Param or
// a module (a type with a mode or a Forward method), so that walks skip
// plain data without visiting every element.
func mayHoldModules(t reflect.Type) bool {
	if v, ok := holdCache.Load(t); ok {
		return v.(bool)
	}
	r := typeMayHold(t, map[reflect.Type]bool{})
	holdCache.Store(t, r)
	return r
}

// typeMayHold is mayHoldModules without the cache; a struct type already
// being examined counts as holding nothing, since a Param below it is found
// along the path that does not loop.
func typeMayHold(t reflect.Type, visiting map[reflect.Type]bool) bool {
	pt := reflect.PointerTo(t)
	if t.Implements(modeSetterType) || pt.Implements(modeSetterType) {
		return true
	}
	if _, ok := pt.MethodByName("Forward"); ok {
		return true
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer:
		return t == paramPtrType || typeMayHold(t.Elem(), visiting)
	case reflect.Slice, reflect.Array:
		return typeMayHold(t.Elem(), visiting)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			return typeMayHold(t.Elem(), visiting)
		}
		return false
	case reflect.Struct:
		if isYaegiInterface(t) {
			return true
		}
		if visiting[t] {
			return false
		}
		visiting[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if _, _, ok := fieldName(t, f); ok && typeMayHold(f.Type, visiting) {
				return true
			}
		}
	}
	return false
}

func isYaegiInterface(t reflect.Type) bool {
	return t.Name() == "valueInterface" && t.PkgPath() == "github.com/traefik/yaegi/interp"
}

// yaegiWrapper returns the value inside v when v is one of the wrapper
// structs yaegi passes interpreted values to compiled code in (generated by
// yaegi extract or written by hand for it): a first field IValue of
// interface type, then only func fields named W followed by a method name.
func yaegiWrapper(v reflect.Value) (reflect.Value, bool) {
	t := v.Type()
	if v.Kind() != reflect.Struct || t.NumField() == 0 || t.Field(0).Name != "IValue" ||
		t.Field(0).Type.Kind() != reflect.Interface {
		return v, false
	}
	for i := 1; i < t.NumField(); i++ {
		if f := t.Field(i); f.Type.Kind() != reflect.Func || !strings.HasPrefix(f.Name, "W") {
			return v, false
		}
	}
	return v.Field(0), true
}

// yaegiInterface unwraps the value yaegi stores for a field or element
// whose type is an interface declared in interpreted code (yaegi's
// unexported interp.valueInterface, which holds the dynamic value in a
// reflect.Value field named "value"). It checks that layout (yaegi
// v0.16.1's) and leaves the value alone when it differs.
func yaegiInterface(v reflect.Value) (reflect.Value, bool) {
	t := v.Type()
	if !isYaegiInterface(t) {
		return v, false
	}
	f, ok := t.FieldByName("value")
	if !ok || f.Type != reflect.TypeFor[reflect.Value]() || !v.CanInterface() {
		return v, false
	}
	if !v.CanAddr() {
		c := reflect.New(t).Elem()
		c.Set(v)
		v = c
	}
	inner := *(*reflect.Value)(unsafe.Add(v.Addr().UnsafePointer(), f.Offset))
	return inner, true
}

// all returns every Param and buffer of m in walk order.
func all(m any) []NamedParam {
	var out []NamedParam
	var collect func(n *node)
	collect = func(n *node) {
		if n.param != nil {
			out = append(out, NamedParam{Name: n.path, Param: n.param})
			return
		}
		for _, c := range n.children {
			collect(c)
		}
	}
	if root := tree(m); root != nil {
		collect(root)
	}
	return out
}

// NamedModule is a module of a model with its dotted path.
type NamedModule struct {
	Name   string // "" for the model itself
	Module any    // a pointer to the module's struct where it is addressable, else the struct
}

// Modules returns m and every module reachable in it (each struct found by
// following fields, pointers, interfaces, slices, arrays and maps, as Params
// does), each under its dotted path, parents before children. A struct
// embedded in a module is listed under its parent's path, since its fields
// and methods are the parent's. A module reached twice is listed once,
// under the first path.
func Modules(m any) []NamedModule {
	var out []NamedModule
	add := func(path string, v reflect.Value) {
		if v.Kind() != reflect.Struct {
			return
		}
		if v.CanAddr() {
			out = append(out, NamedModule{Name: path, Module: v.Addr().Interface()})
		} else if v.CanInterface() {
			out = append(out, NamedModule{Name: path, Module: v.Interface()})
		}
	}
	var collect func(n *node)
	collect = func(n *node) {
		if n.param != nil {
			return
		}
		add(n.path, n.value)
		for _, e := range n.embedded {
			add(n.path, e)
		}
		for _, c := range n.children {
			collect(c)
		}
	}
	if root := tree(m); root != nil {
		collect(root)
	}
	return out
}

func filter(m any, keep func(p *Param) bool) []NamedParam {
	var out []NamedParam
	for _, np := range all(m) {
		if keep(np.Param) {
			out = append(out, np)
		}
	}
	return out
}

// Params returns the parameters of m (trainable and frozen, not buffers)
// with their dotted names, in field order.
//
// m is a model: a struct or pointer to a struct whose exported fields hold
// *Param values, modules (structs, pointers to structs, interfaces holding
// them), or slices, arrays and maps of either. Names are the field names
// joined by dots, with slice and array indices and map keys as segments
// ("Encoder.Layers.0.Attn.Q.Weight"); maps must have string or integer
// keys (others are skipped) and are walked in key order. A field tagged
// `kiln:"name"` is named name; one tagged `kiln:"-"` is skipped, as are
// unexported fields, nil pointers and fields of other types (plain
// *tensor.Tensor fields are not parameters: wrap them with NewParam or
// NewBuffer). Embedded structs are flattened into their parent, as in
// encoding/json, and so are the entries of a map field tagged
// `kiln:",inline"` (their keys become the names, as an LSTM's
// "weight_ih_l0"). Structs declared in interpreted notebook cells work
// too; the package doc says how their field names are recovered.
//
// A pointer reached twice (shared modules, cycles) is walked once, and a
// Param reachable under several names (tied weights) is listed once, under
// the first.
func Params(m any) []NamedParam { return filter(m, func(p *Param) bool { return !p.buffer }) }

// Buffers returns the buffers of m (see NewBuffer) with their dotted names.
func Buffers(m any) []NamedParam { return filter(m, func(p *Param) bool { return p.buffer }) }

// TrainableParams returns the parameters of m an optimizer updates: not
// frozen, not buffers.
func TrainableParams(m any) []NamedParam { return filter(m, (*Param).Trainable) }

// NumParams returns the number of elements in m's parameters, trainable and
// frozen alike (PyTorch's sum of numel over parameters()); buffers are not
// counted.
func NumParams(m any) int {
	n := 0
	for _, np := range Params(m) {
		n += np.Param.NumElements()
	}
	return n
}

// Release releases the tensors of every parameter and buffer of m, freeing
// the model's device memory now rather than when the garbage collector
// finds it. The model must not be used afterwards.
func Release(m any) {
	for _, np := range all(m) {
		np.Param.Release()
	}
}

// Freeze freezes every parameter of m whose dotted name matches pattern
// (see Param.SetFrozen) and returns how many matched, including any that
// were frozen already. Buffers are never matched.
//
// Patterns are matched segment by segment on the dots of the name, each
// segment with path.Match (so * matches within one segment, ? one
// character, [a-z] a class), and a segment that is exactly ** matches any
// number of segments, none included: "Encoder.**" is every parameter
// under Encoder, "**.Bias" every bias, "Layers.*.Attn.*" the direct
// parameters of each layer's Attn. A malformed pattern panics with an error
// wrapping path.ErrBadPattern.
func Freeze(m any, pattern string) int { return setFrozen("nn.Freeze", m, pattern, true) }

// Unfreeze unfreezes the parameters of m whose names match pattern (see
// Freeze) and returns how many matched.
func Unfreeze(m any, pattern string) int { return setFrozen("nn.Unfreeze", m, pattern, false) }

func setFrozen(op string, m any, pattern string, frozen bool) int {
	pat := strings.Split(pattern, ".")
	for _, seg := range pat {
		if _, err := path.Match(seg, ""); err != nil {
			panic(fmt.Errorf("%s: pattern %q: %w", op, pattern, err))
		}
	}
	n := 0
	for _, np := range Params(m) {
		if matchSegments(pat, strings.Split(np.Name, ".")) {
			np.Param.SetFrozen(frozen)
			n++
		}
	}
	return n
}

// matchSegments matches a dotted name against a split pattern (see Freeze).
func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// MatchName reports whether the dotted parameter name matches pattern,
// with the glob rules of Freeze. A malformed pattern matches nothing.
func MatchName(pattern, name string) bool {
	return matchSegments(strings.Split(pattern, "."), strings.Split(name, "."))
}

// ModeSetter is a module with a training mode, like dropout and batch norm,
// whose behaviour differs between training and evaluation. Train and Eval
// call SetTraining on every module of a model that implements it.
type ModeSetter interface {
	SetTraining(training bool)
}

// Mode is a training-mode flag for layers to embed: it implements
// ModeSetter, and its zero value is in training mode, as a new PyTorch
// module is.
//
//	type Dropout struct {
//		nn.Mode
//		P float64
//	}
//
//	func (d *Dropout) Forward(x *tensor.Tensor) *tensor.Tensor {
//		if !d.Training() { return x }
//		...
//	}
type Mode struct {
	eval bool
}

// SetTraining switches training mode on or off.
func (m *Mode) SetTraining(training bool) { m.eval = !training }

// Training reports whether the module is in training mode.
func (m Mode) Training() bool { return !m.eval }

// Train puts every module of m in training mode: it calls SetTraining(true)
// on m and on each module below it (walked as in Params) that implements
// ModeSetter. Modules implement it on their pointer type, so m and
// mode-carrying modules must be addressable: pass a pointer to the model,
// and keep such modules in maps and interfaces by pointer; otherwise Train
// panics with an error wrapping ErrModule. Methods of types declared in
// interpreted code are invisible to reflection, so only compiled modules
// (including compiled ones such as nn.Mode embedded in interpreted
// structs) have their mode set.
func Train(m any) { setMode("nn.Train", m, true) }

// Eval puts every module of m in evaluation mode, the way Train puts them in
// training mode, and fails the same way.
func Eval(m any) { setMode("nn.Eval", m, false) }

func setMode(op string, m any, training bool) {
	root := tree(m)
	if root == nil {
		return
	}
	var walk func(n *node)
	walk = func(n *node) {
		if n.param != nil {
			return
		}
		// A module whose own method set lacks SetTraining may still embed
		// modes: reflect.StructOf, which yaegi uses, promotes no methods of
		// embedded fields, and Go promotes none when two embedded fields
		// both have one.
		targets := []reflect.Value{n.value}
		if !hasMethod(n.value, modeSetterType) {
			targets = append(targets, n.embedded...)
		}
		for _, v := range targets {
			if s, ok := modeSetter(v); ok {
				s.SetTraining(training)
			} else if hasMethod(v, modeSetterType) {
				panic(fmt.Errorf("%s: %s (%s) is not addressable, so its mode cannot be set; "+
					"pass a pointer to the model and keep modules in maps and interfaces by pointer: %w",
					op, displayPath(n.path), typeName(v.Type()), ErrModule))
			}
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(root)
}

// modeSetter returns v (or its address) as a ModeSetter when it is one
// that calling can affect.
func modeSetter(v reflect.Value) (ModeSetter, bool) {
	if v.CanAddr() {
		if pv := v.Addr(); pv.Type().Implements(modeSetterType) && pv.CanInterface() {
			return pv.Interface().(ModeSetter), true
		}
	}
	if v.Type().Implements(modeSetterType) && v.CanInterface() {
		return v.Interface().(ModeSetter), true
	}
	return nil, false
}

// hasMethod reports whether v's type or its pointer type implements iface.
func hasMethod(v reflect.Value, iface reflect.Type) bool {
	return v.Type().Implements(iface) || reflect.PointerTo(v.Type()).Implements(iface)
}

// IsTraining reports whether m is in training mode: the mode of the first
// module, m itself first, then in walk order, that has a Training() bool
// method (as modules embedding Mode do). A model with no such module is in
// training mode, the default.
func IsTraining(m any) bool {
	root := tree(m)
	if root == nil {
		return true
	}
	var find func(n *node) (bool, bool)
	find = func(n *node) (training, found bool) {
		if n.param != nil {
			return false, false
		}
		targets := []reflect.Value{n.value}
		if !hasMethod(n.value, modeGetterType) {
			targets = append(targets, n.embedded...)
		}
		for _, v := range targets {
			if v.CanAddr() && v.Addr().Type().Implements(modeGetterType) && v.Addr().CanInterface() {
				return v.Addr().Interface().(interface{ Training() bool }).Training(), true
			}
			if v.Type().Implements(modeGetterType) && v.CanInterface() {
				return v.Interface().(interface{ Training() bool }).Training(), true
			}
		}
		for _, c := range n.children {
			if t, ok := find(c); ok {
				return t, true
			}
		}
		return false, false
	}
	if t, ok := find(root); ok {
		return t
	}
	return true
}

// ToDevice moves every parameter and buffer of m to dev, keeping their ids
// (through Param.Set): across physical devices it copies, on the same
// device with other flags (dev.Autodiff(), dev.NoGrad()) it only re-views.
// Trainable parameters require gradients on an autodiff dev; frozen ones and
// buffers do not. The new tensors belong to the model, not to any Scope the
// call runs in, and the old ones are released.
//
// Either every tensor moves or none does: ToDevice makes all the copies
// first and returns an error (the device's, such as one wrapping
// tensor.ErrOutOfMemory) without changing m when one fails.
func ToDevice(m any, dev tensor.Device) error {
	entries := all(m)
	moved := make([]*tensor.Tensor, len(entries))
	var err error
	outsideScopes(func() {
		err = tensor.Try(func() {
			for i, np := range entries {
				cur := np.Param.Tensor
				checkTensor("nn.ToDevice", cur)
				if cur.Device() == dev {
					continue
				}
				d := cur.Detach()
				moved[i] = d.ToDevice(dev)
				d.Release()
			}
		})
	})
	if err != nil {
		for _, t := range moved {
			if t != nil {
				t.Release()
			}
		}
		return fmt.Errorf("nn.ToDevice %s: %w", dev, err)
	}
	for i, np := range entries {
		if moved[i] != nil {
			np.Param.Set(moved[i])
		}
	}
	return nil
}

// displayPath names a path in messages, the root included.
func displayPath(p string) string {
	if p == "" {
		return "the model"
	}
	return p
}

// typeName names t for people: package-qualified for named types, with
// the field names for the unnamed structs of interpreted code.
func typeName(t reflect.Type) string {
	if t.Name() != "" {
		return t.String()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + typeName(t.Elem())
	case reflect.Slice:
		return "[]" + typeName(t.Elem())
	case reflect.Array:
		return "[" + strconv.Itoa(t.Len()) + "]" + typeName(t.Elem())
	case reflect.Map:
		return "map[" + typeName(t.Key()) + "]" + typeName(t.Elem())
	case reflect.Struct:
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if len(names) == 3 {
				names = append(names, "…")
				break
			}
			names = append(names, interpretedFieldName(f.Name))
		}
		return "struct{" + strings.Join(names, ", ") + "}"
	}
	return t.String()
}

package optim

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// ErrConfig reports an optimizer or schedule configuration that cannot
// work: a required field left out, a value out of range, a parameter group
// override the optimizer does not have, or a group pattern that is
// malformed or matches no parameter of the model.
var ErrConfig = errors.New("invalid optimizer configuration")

// ErrState reports optimizer or schedule state that does not fit: another
// optimizer's, unknown slots, or tensors whose shapes differ from the
// parameters they are restored into.
var ErrState = errors.New("optimizer state does not fit")

// Optimizer updates a model's parameters from their gradients. Every
// optimizer in this package implements it.
type Optimizer interface {
	// Step updates, in place, every trainable parameter of model
	// (nn.TrainableParams) that has a gradient in grads; parameters without
	// one are left alone and keep their state. It panics with an error
	// wrapping ErrConfig when a parameter group's pattern matches no
	// parameter of model (trainable or frozen), or ErrState when restored
	// state (LoadState) names a parameter model lacks or has the wrong
	// shape.
	Step(model any, grads *tensor.Gradients)
	// StepParams is Step over an explicit list of named parameters (frozen
	// ones and buffers included, if listed); group patterns must each
	// match one of them.
	StepParams(params []nn.NamedParam, grads *tensor.Gradients)
	// ZeroState forgets all per-parameter state (moments, momentum
	// buffers, step counts), releasing its device memory, as a fresh
	// optimizer would have it. The learning rate stays.
	ZeroState()
	// LR returns the current learning rate of parameters outside any
	// group with its own rate (see SetLR).
	LR() float64
	// SetLR sets the learning rate; schedules call it. Groups with their
	// own LR keep their ratio to the configured LR: a group configured at
	// half the base rate runs at half of whatever SetLR sets. It panics
	// with ErrConfig for a negative or non-finite rate.
	SetLR(lr float64)
	// State returns the optimizer's state keyed by parameter name, for
	// checkpoints (see State).
	State() (*State, error)
	// LoadState restores state saved by State, replacing the current one.
	LoadState(s *State) error
}

// MomentumSetter is an optimizer whose momentum a schedule can cycle
// (OneCycleLR): SGD's, RMSProp's and Muon's momentum, the first beta of
// Adam, AdamW and Lion.
type MomentumSetter interface {
	Momentum() float64
	SetMomentum(m float64)
}

// ParamGroup gives the parameters whose dotted names match Pattern their
// own hyper-parameters, as torch.optim's parameter groups do. Pattern uses
// nn.Freeze's glob rules ("**.bias", "Encoder.**", "Layers.*.Norm.*"). A
// parameter takes the first group that matches it; parameters matching
// none use the optimizer's top-level configuration.
//
// The other fields are overrides: nil (or an empty Betas) keeps the
// top-level value. Float makes the pointer: ParamGroup{Pattern: "**.bias",
// WeightDecay: optim.Float(0)}. An override the optimizer does not have
// (Betas for SGD) is a configuration error.
type ParamGroup struct {
	Pattern     string    `json:"pattern"`
	LR          *float64  `json:"lr,omitempty"`           // every optimizer
	WeightDecay *float64  `json:"weight_decay,omitempty"` // every optimizer
	Momentum    *float64  `json:"momentum,omitempty"`     // SGD, RMSProp, Muon
	Betas       []float64 `json:"betas,omitempty"`        // Adam, AdamW, Lion, NAdam, RAdam, Adamax, SparseAdam, Muon's AdamW fallback
	Eps         *float64  `json:"eps,omitempty"`          // Adam, AdamW, RMSProp, AdaGrad, NAdam, RAdam, Adamax, Adan, SparseAdam, Muon's AdamW fallback
	// AdamW (Muon only) updates the group's parameters with Muon's AdamW
	// fallback even when they are matrices, as Muon's authors advise for
	// embeddings and output heads.
	AdamW bool `json:"adamw,omitempty"`
}

// Float returns a pointer to v, for the optional fields of ParamGroup and
// schedule configurations.
func Float(v float64) *float64 { return &v }

// Int returns a pointer to v, for the optional fields of schedule
// configurations.
func Int(v int) *int { return &v }

// hyper holds the hyper-parameters one parameter is updated with: the
// top-level configuration, overridden by its group, scaled by SetLR.
type hyper struct {
	lr, weightDecay, momentum, beta1, beta2, eps float64
	fallback                                     bool // Muon: update with the AdamW fallback
}

// overrides names the ParamGroup fields an optimizer accepts.
type overrides struct{ momentum, betas, eps, adamw bool }

// update computes one parameter's new value: p is a view of the parameter
// outside any graph, g its gradient (already clipped), st its state with
// st.step already counting this step. It returns the new value (nil to
// leave p unchanged, or p itself when it updated p in place) and puts its
// slot tensors in st.slots: new ones, or the old ones updated in place
// (State copies them). It must never modify g, and every slot must be a
// distinct tensor it owns (never g, p or another slot).
type updateFunc func(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor

// updateAllFunc is updateFunc for every parameter of a step at once,
// updating each p in place: optimizers whose update has a multi-tensor
// form (Adam, AdamW) set it, so that a step is one call rather than one
// per parameter.
type updateAllFunc func(ps, gs []*tensor.Tensor, hs []hyper, sts []*paramState)

// paramState is one parameter's optimizer state.
type paramState struct {
	name  string
	step  int
	slots map[string]*tensor.Tensor
}

func (st *paramState) release() {
	for _, t := range st.slots {
		t.Release()
	}
	st.slots = nil
}

// groupEntry caches which group a parameter belongs to.
type groupEntry struct {
	name  string
	group int // −1: none
}

// base is the machinery every optimizer shares: parameter walking, groups,
// clipping, learning-rate scaling and state keyed by Param.ID.
type base struct {
	kind      string
	slotNames []string
	top       hyper // top-level hyper-parameters, defaults applied
	fallback  hyper // Muon's AdamW fallback
	groups    []ParamGroup
	clip      GradClip
	update    updateFunc
	updateAll updateAllFunc // nil: update one parameter at a time
	// fallbackFor (Muon) reports whether a parameter takes the AdamW
	// fallback; nil for the other optimizers.
	fallbackFor func(p *nn.Param, group *ParamGroup) bool

	baseLR      float64 // the configured LR, against which SetLR scales groups
	lr          float64
	hasMomentum bool     // SetMomentum is meaningful
	momentum    *float64 // set by SetMomentum: overrides momentum (or beta1) everywhere

	state   map[uint64]*paramState
	pending map[string]*paramState // restored by LoadState, not yet bound to a parameter
	groupOf map[uint64]groupEntry
}

func newBase(kind string, top hyper, groups []ParamGroup, clip GradClip, allowed overrides, slots []string) base {
	op := "optim.New" + kind
	checkHyper(op, "", top)
	if err := clip.check(); err != nil {
		panic(fmt.Errorf("%s: %w", op, err))
	}
	for i, g := range groups {
		checkGroup(op, i, g, allowed)
	}
	return base{
		kind: kind, slotNames: slots, top: top, groups: append([]ParamGroup(nil), groups...), clip: clip,
		baseLR: top.lr, lr: top.lr,
		state: map[uint64]*paramState{}, groupOf: map[uint64]groupEntry{},
	}
}

func configError(op, format string, args ...any) {
	panic(fmt.Errorf("%s: %s: %w", op, fmt.Sprintf(format, args...), ErrConfig))
}

// checkHyper panics unless h's values are in range (torch.optim's checks).
func checkHyper(op, where string, h hyper) {
	bad := func(name string, v float64) {
		configError(op, "%s%s %v out of range", where, name, v)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(h.lr) || h.lr < 0 {
		bad("LR", h.lr)
	}
	if !finite(h.weightDecay) || h.weightDecay < 0 {
		bad("WeightDecay", h.weightDecay)
	}
	if !finite(h.momentum) || h.momentum < 0 {
		bad("Momentum", h.momentum)
	}
	if !finite(h.eps) || h.eps < 0 {
		bad("Eps", h.eps)
	}
	if !(h.beta1 >= 0 && h.beta1 < 1) || !(h.beta2 >= 0 && h.beta2 < 1) {
		configError(op, "%sBetas [%v %v] outside [0, 1)", where, h.beta1, h.beta2)
	}
}

func checkGroup(op string, i int, g ParamGroup, allowed overrides) {
	where := fmt.Sprintf("group %d (%q): ", i, g.Pattern)
	if g.Pattern == "" {
		configError(op, "group %d has no Pattern", i)
	}
	for _, seg := range strings.Split(g.Pattern, ".") {
		if _, err := path.Match(seg, ""); err != nil {
			configError(op, "%smalformed pattern: %v", where, err)
		}
	}
	refuse := func(field string) {
		configError(op, "%s%s is not a hyper-parameter of this optimizer", where, field)
	}
	if g.Momentum != nil && !allowed.momentum {
		refuse("Momentum")
	}
	if g.Betas != nil && !allowed.betas {
		refuse("Betas")
	}
	if g.Eps != nil && !allowed.eps {
		refuse("Eps")
	}
	if g.AdamW && !allowed.adamw {
		refuse("AdamW")
	}
	if g.Betas != nil && len(g.Betas) != 2 {
		configError(op, "%sBetas needs 2 values, got %d", where, len(g.Betas))
	}
	h := hyper{}
	g.apply(&h)
	checkHyper(op, where, h)
}

// apply overrides h with g's values.
func (g ParamGroup) apply(h *hyper) {
	if g.LR != nil {
		h.lr = *g.LR
	}
	if g.WeightDecay != nil {
		h.weightDecay = *g.WeightDecay
	}
	if g.Momentum != nil {
		h.momentum = *g.Momentum
	}
	if len(g.Betas) == 2 {
		h.beta1, h.beta2 = g.Betas[0], g.Betas[1]
	}
	if g.Eps != nil {
		h.eps = *g.Eps
	}
	if g.AdamW {
		h.fallback = true
	}
}

// betas returns b, or def when b is empty; it panics unless b has two
// values.
func betas(op string, b []float64, def [2]float64) (float64, float64) {
	switch len(b) {
	case 0:
		return def[0], def[1]
	case 2:
		return b[0], b[1]
	}
	configError(op, "Betas needs 2 values, got %d", len(b))
	return 0, 0
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// LR returns the current learning rate (see Optimizer).
func (b *base) LR() float64 { return b.lr }

// SetLR sets the learning rate (see Optimizer).
func (b *base) SetLR(lr float64) {
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		configError("optim."+b.kind+".SetLR", "learning rate %v out of range", lr)
	}
	b.lr = lr
}

func (b *base) setMomentum(m float64) {
	if math.IsNaN(m) || m < 0 || m >= 1 {
		configError("optim."+b.kind+".SetMomentum", "momentum %v outside [0, 1)", m)
	}
	b.momentum = &m
}

func (b *base) currentMomentum(top float64) float64 {
	if b.momentum != nil {
		return *b.momentum
	}
	return top
}

// ZeroState forgets all per-parameter state (see Optimizer).
func (b *base) ZeroState() {
	for _, st := range b.state {
		st.release()
	}
	for _, st := range b.pending {
		st.release()
	}
	b.state = map[uint64]*paramState{}
	b.pending = nil
}

// Step updates model's trainable parameters (see Optimizer).
func (b *base) Step(model any, grads *tensor.Gradients) {
	all := nn.Params(model)
	b.checkGroups("Step", all)
	if len(b.pending) > 0 {
		known := make(map[string]bool, len(all))
		for _, np := range all {
			known[np.Name] = true
		}
		var missing []string
		for name := range b.pending {
			if !known[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			panic(fmt.Errorf("optim.%s.Step: restored state names parameters the model lacks: %s: %w",
				b.kind, strings.Join(missing, ", "), ErrState))
		}
	}
	trainable := all[:0:0]
	for _, np := range all {
		if np.Param.Trainable() {
			trainable = append(trainable, np)
		}
	}
	b.step(trainable, grads)
}

// StepParams updates the listed parameters (see Optimizer).
func (b *base) StepParams(params []nn.NamedParam, grads *tensor.Gradients) {
	b.checkGroups("StepParams", params)
	b.step(params, grads)
}

// groupIndex returns the group of np (−1 for none), from the cache when
// the name is unchanged.
func (b *base) groupIndex(np nn.NamedParam) int {
	id := np.Param.ID()
	if e, ok := b.groupOf[id]; ok && e.name == np.Name {
		return e.group
	}
	gi := -1
	for i, g := range b.groups {
		if nn.MatchName(g.Pattern, np.Name) {
			gi = i
			break
		}
	}
	b.groupOf[id] = groupEntry{name: np.Name, group: gi}
	return gi
}

// checkGroups panics unless every group matches one of params.
func (b *base) checkGroups(method string, params []nn.NamedParam) {
	if len(b.groups) == 0 {
		return
	}
	used := make([]bool, len(b.groups))
	for _, np := range params {
		if np.Param == nil {
			continue
		}
		if gi := b.groupIndex(np); gi >= 0 {
			used[gi] = true
		}
	}
	for i, u := range used {
		if !u {
			configError("optim."+b.kind+"."+method, "group %d's pattern %q matches no parameter "+
				"(names look like %s)", i, b.groups[i].Pattern, exampleNames(params))
		}
	}
}

func exampleNames(params []nn.NamedParam) string {
	var names []string
	for _, np := range params {
		if len(names) == 3 {
			names = append(names, "…")
			break
		}
		names = append(names, fmt.Sprintf("%q", np.Name))
	}
	if len(names) == 0 {
		return "nothing: there are no parameters"
	}
	return strings.Join(names, ", ")
}

// hyperFor returns the hyper-parameters np is updated with this step.
func (b *base) hyperFor(np nn.NamedParam) hyper {
	gi := b.groupIndex(np)
	var g *ParamGroup
	if gi >= 0 {
		g = &b.groups[gi]
	}
	h := b.top
	if b.fallbackFor != nil && b.fallbackFor(np.Param, g) {
		h = b.fallback
		h.fallback = true
	}
	groupLR := false
	if g != nil {
		groupLR = g.LR != nil
		g.apply(&h)
	}
	switch {
	case b.baseLR != 0:
		h.lr *= b.lr / b.baseLR
	case !groupLR && !h.fallback:
		h.lr = b.lr
	}
	if b.momentum != nil && !h.fallback {
		h.momentum = *b.momentum
		h.beta1 = *b.momentum
	}
	return h
}

// stateFor returns np's state, binding state restored by LoadState by name.
func (b *base) stateFor(np nn.NamedParam) *paramState {
	id := np.Param.ID()
	st := b.state[id]
	if st == nil {
		st = b.pending[np.Name]
		if st != nil {
			b.bind(np, st) // may panic, leaving st pending (ZeroState frees it)
			delete(b.pending, np.Name)
		} else {
			st = &paramState{slots: map[string]*tensor.Tensor{}}
		}
		b.state[id] = st
	}
	st.name = np.Name
	return st
}

// bind moves restored slots onto np's device and dtype, checking shapes.
func (b *base) bind(np nn.NamedParam, st *paramState) {
	p := np.Param.Tensor
	for slot, t := range st.slots {
		if !sameInts(t.Shape(), p.Shape()) {
			panic(fmt.Errorf("optim.%s.Step: restored %s.%s has shape %v, the parameter %v: %w",
				b.kind, np.Name, slot, t.Shape(), p.Shape(), ErrState))
		}
	}
	for slot, t := range st.slots {
		if t.Device().Same(p.Device()) && t.DType() == p.DType() {
			continue
		}
		var moved *tensor.Tensor
		tensor.NoScope(func() {
			moved = t.ToDevice(p.Device().Inner())
			if moved.DType() != p.DType() {
				c := moved.To(p.DType())
				moved.Release()
				moved = c
			}
		})
		t.Release()
		st.slots[slot] = moved
	}
}

// step runs the update over params.
func (b *base) step(params []nn.NamedParam, grads *tensor.Gradients) {
	type item struct {
		np nn.NamedParam
		g  *tensor.Tensor
	}
	var items []item
	for _, np := range params {
		if np.Param == nil || np.Param.Tensor == nil {
			continue
		}
		if g := grads.Get(np.Param.Tensor); g != nil {
			if !sameInts(g.Shape(), np.Param.Shape()) {
				panic(&tensor.Error{Op: "optim." + b.kind + ".Step", Err: tensor.ErrShape,
					Msg: fmt.Sprintf("gradient of %s has shape %v, the parameter %v", np.Name, g.Shape(), np.Param.Shape())})
			}
			items = append(items, item{np, g})
		}
	}
	if len(items) == 0 {
		return
	}
	tensor.Scope(func() {
		gs := make([]*tensor.Tensor, len(items))
		for i, it := range items {
			gs[i] = it.g
		}
		gs = b.clip.apply(gs)
		if b.updateAll != nil {
			nps := make([]nn.NamedParam, len(items))
			for i, it := range items {
				nps[i] = it.np
			}
			tensor.NoScope(func() {
				tensor.Scope(func() { b.updateMany(nps, gs) })
			})
			return
		}
		for i, it := range items {
			st := b.stateFor(it.np)
			h := b.hyperFor(it.np)
			g := gs[i]
			tensor.NoScope(func() {
				tensor.Scope(func() { b.updateOne(it.np, g, h, st) })
			})
		}
	})
}

// updateOne runs the update for one parameter inside a Scope whose parent
// belongs to no Scope, so that the new slots, kept, outlive the step.
func (b *base) updateOne(np nn.NamedParam, g *tensor.Tensor, h hyper, st *paramState) {
	old := make(map[string]*tensor.Tensor, len(st.slots))
	for k, t := range st.slots {
		old[k] = t
	}
	st.step++
	p := np.Param.Detach()
	newP := b.update(p, g, h, st)
	if newP != nil && newP != p {
		np.Param.Tensor.Assign(newP)
	}
	b.settleSlots(st, old)
}

// updateMany runs updateAll for every parameter of a step, inside a Scope
// whose parent belongs to no Scope, as updateOne does for one.
func (b *base) updateMany(nps []nn.NamedParam, gs []*tensor.Tensor) {
	ps := make([]*tensor.Tensor, len(nps))
	hs := make([]hyper, len(nps))
	sts := make([]*paramState, len(nps))
	olds := make([]map[string]*tensor.Tensor, len(nps))
	for i, np := range nps {
		sts[i], hs[i] = b.stateFor(np), b.hyperFor(np)
		olds[i] = make(map[string]*tensor.Tensor, len(sts[i].slots))
		for k, t := range sts[i].slots {
			olds[i][k] = t
		}
		sts[i].step++
		ps[i] = np.Param.Detach()
	}
	b.updateAll(ps, gs, hs, sts)
	for i, st := range sts {
		b.settleSlots(st, olds[i])
	}
}

// settleSlots keeps st's new slot tensors (beyond the Scope the update ran
// in) and releases the old ones it no longer holds.
func (b *base) settleSlots(st *paramState, old map[string]*tensor.Tensor) {
	seen := make(map[*tensor.Tensor]string, len(st.slots))
	for k, t := range st.slots {
		if other, dup := seen[t]; dup {
			panic(fmt.Sprintf("optim.%s: slots %s and %s share a tensor", b.kind, other, k))
		}
		seen[t] = k
		if old[k] != t {
			t.Keep()
		}
	}
	for _, t := range old {
		if _, still := seen[t]; !still {
			t.Release()
		}
	}
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// clone returns a copy of t in new storage (x·1 is exact for every float).
func clone(t *tensor.Tensor) *tensor.Tensor { return t.MulScalar(1) }

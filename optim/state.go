package optim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// State is an optimizer's state in a form that outlives the process, keyed
// by parameter name rather than by Param.ID (which a new process numbers
// afresh). It splits the way a checkpoint stores it: Tensors go to a
// safetensors file, the rest, which encoding/json writes without the
// tensors, to JSON.
//
// Tensors holds each parameter's slots under StateKey(name, slot), slot
// being PyTorch's name for the buffer: "momentum_buffer" (SGD, RMSProp,
// Muon), "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (Adam, AdamW, Lion's
// "exp_avg", Muon's AdamW fallback), "square_avg", "grad_avg" (RMSProp),
// "sum" (AdaGrad), "exp_inf" (Adamax), "ax" (ASGD's average),
// "exp_avg_diff" and "neg_pre_grad" (Adan); LBFGS keeps its history under
// "lbfgs.<slot>" keys. Steps counts the steps each parameter has taken; a
// parameter stepped at least once has an entry even with no slots.
//
// Learning-rate schedules keep their own state (Scheduler.State).
type State struct {
	Kind     string                    `json:"kind"`               // the optimizer: "SGD", "AdamW", …
	LR       float64                   `json:"lr"`                 // the current learning rate (after SetLR)
	Momentum *float64                  `json:"momentum,omitempty"` // the momentum set by SetMomentum, if any
	Steps    map[string]int            `json:"steps"`              // steps taken, by parameter name
	Tensors  map[string]*tensor.Tensor `json:"-"`                  // slots, by StateKey(parameter name, slot)
}

// StateKey returns the key of a parameter's slot in State.Tensors: the
// parameter's dotted name, a dot, the slot ("l1.weight.exp_avg").
func StateKey(param, slot string) string { return param + "." + slot }

// SplitStateKey splits a State.Tensors key into the parameter name and the
// slot (slot names have no dots); ok is false for a key without a dot.
func SplitStateKey(key string) (param, slot string, ok bool) {
	i := strings.LastIndexByte(key, '.')
	if i <= 0 || i == len(key)-1 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}

// State returns the optimizer's state: step counts, the learning rate and,
// as copies made on the calling goroutine (so a Scope collects them), the
// slot tensors, which keep the values of this moment (Adam updates its
// moments in place). State restored by LoadState and not yet bound to a
// parameter by a Step is included. It fails when two parameters share a
// name (possible only through StepParams).
func (b *base) State() (*State, error) {
	op := "optim." + b.kind + ".State"
	s := &State{Kind: b.kind, LR: b.lr, Steps: map[string]int{}, Tensors: map[string]*tensor.Tensor{}}
	if b.momentum != nil {
		s.Momentum = Float(*b.momentum)
	}
	var err error
	add := func(st *paramState) {
		if err != nil {
			return
		}
		if _, dup := s.Steps[st.name]; dup {
			err = fmt.Errorf("%s: two parameters are named %q: %w", op, st.name, ErrState)
			return
		}
		s.Steps[st.name] = st.step
		for slot, t := range st.slots {
			if t.Released() {
				err = fmt.Errorf("%s: %s of %s was released: %w", op, slot, st.name, ErrState)
				return
			}
			s.Tensors[StateKey(st.name, slot)] = clone(t)
		}
	}
	for _, st := range b.state {
		add(st)
	}
	for _, st := range b.pending {
		add(st)
	}
	if err != nil {
		for _, t := range s.Tensors {
			t.Release()
		}
		return nil, err
	}
	return s, nil
}

// LoadState replaces the optimizer's state with s (from State, possibly in
// another process): the learning rate and momentum now, the per-parameter
// state at the first Step that sees each named parameter, where slots are
// moved to the parameter's device and dtype and their shapes checked.
// It keeps views of s's tensors rather than copies: do not write into them
// afterwards.
//
// It returns an error wrapping ErrState, and changes nothing, when s is
// another optimizer's, has an out-of-range learning rate, momentum or step
// count, or holds keys with unknown slots or tensors that are nil,
// released or not floating point.
func (b *base) LoadState(s *State) error {
	op := "optim." + b.kind + ".LoadState"
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %w", op, fmt.Sprintf(format, args...), ErrState)
	}
	if s == nil {
		return fail("nil state")
	}
	if s.Kind != b.kind {
		return fail("state of a %q optimizer, not %q", s.Kind, b.kind)
	}
	if math.IsNaN(s.LR) || math.IsInf(s.LR, 0) || s.LR < 0 {
		return fail("learning rate %v out of range", s.LR)
	}
	if s.Momentum != nil && (!b.hasMomentum || math.IsNaN(*s.Momentum) || *s.Momentum < 0 || *s.Momentum >= 1) {
		return fail("momentum %v does not apply", *s.Momentum)
	}
	for name, n := range s.Steps {
		if n < 0 {
			return fail("%s has %d steps", name, n)
		}
	}
	keys := make([]string, 0, len(s.Tensors))
	for key, t := range s.Tensors {
		name, slot, ok := SplitStateKey(key)
		switch {
		case !ok:
			return fail("key %q is not <parameter>.<slot>", key)
		case !slices.Contains(b.slotNames, slot):
			return fail("key %q: %s has no slot %q (it has %s)", key, b.kind, slot, strings.Join(b.slotNames, ", "))
		case t == nil:
			return fail("key %q: nil tensor", key)
		case t.Released():
			return fail("key %q: released tensor", key)
		case !t.DType().IsFloat():
			return fail("key %q: %s tensor, want floating point", key, t.DType())
		}
		_ = name
		keys = append(keys, key)
	}
	pending := map[string]*paramState{}
	get := func(name string) *paramState {
		st := pending[name]
		if st == nil {
			st = &paramState{name: name, slots: map[string]*tensor.Tensor{}}
			pending[name] = st
		}
		return st
	}
	for name, n := range s.Steps {
		get(name).step = n
	}
	tensor.NoScope(func() {
		for _, key := range keys {
			name, slot, _ := SplitStateKey(key)
			get(name).slots[slot] = clone(s.Tensors[key]) // the caller keeps its own
		}
	})
	b.ZeroState()
	b.pending = pending
	b.lr = s.LR
	b.momentum = nil
	if s.Momentum != nil {
		b.momentum = Float(*s.Momentum)
	}
	return nil
}

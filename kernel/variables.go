package kernel

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// The Variables panel of a front end lists the session's variables while a
// long cell runs. The interpreter cannot be read then (the cell may be
// changing the very values), so the session keeps a snapshot: the
// summaries of every variable, taken when a cell finishes, while the
// session still holds the interpreter. Variables answers from it at once
// while a cell runs, and from the live interpreter when idle.
// InspectVariable gives the richer view of one variable, only when idle: a
// busy kernel says so (ErrBusy) instead of making the caller wait.

// ErrBusy is what InspectVariable's error wraps when a cell is running and
// the interpreter cannot be read.
var ErrBusy = errors.New("the kernel is busy running a cell")

// VariablesSnapshot is the session's variables as one cell left them.
type VariablesSnapshot struct {
	// Cell is the number (execution count) of the cell after which the
	// snapshot was taken; 0 before any cell.
	Cell int `json:"cell"`
	// Busy reports that a cell is running now, so the snapshot may be out
	// of date; Running is that cell's number.
	Busy    bool `json:"busy"`
	Running int  `json:"running,omitempty"`
	// Live reports that the snapshot was taken for this request, the
	// kernel being idle.
	Live bool `json:"live"`
	// Taken is when the snapshot was taken.
	Taken time.Time `json:"taken"`
	// Variables are sorted by name.
	Variables []VariableInfo `json:"variables"`
}

// ParameterInfo is one row of a module's parameter table.
type ParameterInfo struct {
	Name      string `json:"name"` // dotted, as nn.Params names it
	Shape     []int  `json:"shape"`
	DType     string `json:"dtype"`
	Device    string `json:"device"`
	Count     int    `json:"count"` // elements
	Trainable bool   `json:"trainable"`
}

// VariableDetail is the richer view of one variable that InspectVariable
// returns: its summary, then, for a tensor, its values as tensor.String
// formats them (large tensors elided in the middle); for a module, its
// parameter table; for a slice, array or map, the summaries of its first
// elements (at most maxElements); for a struct, of its exported fields;
// for anything else its value's text.
type VariableDetail struct {
	VariableInfo
	Values     string          `json:"values,omitempty"`
	Parameters []ParameterInfo `json:"parameters,omitempty"`
	Elements   []VariableInfo  `json:"elements,omitempty"`
	// More is how many elements there are beyond those listed.
	More int `json:"more,omitempty"`
}

// maxElements bounds the elements VariableDetail lists; maxValueText the
// text of a plain value.
const (
	maxElements  = 50
	maxValueText = 4000
)

// variables holds the session's snapshot and the numbers of cells.
type variables struct {
	mu sync.Mutex
	// enabled: take a snapshot at the end of every cell (set by the
	// first request on the variables socket; a Session nobody asks lists
	// its variables live only, at no cost per cell).
	enabled bool
	// next is the number the front end gave the cell about to run
	// (noteCell), 0 when none was given.
	next    int
	running int
	last    int // the number of the last finished cell
	snap    *VariablesSnapshot
}

// noteCell records the number (execution count) the front end gave the
// cell that is about to run; without it cells are numbered by the session.
func (s *Session) noteCell(n int) {
	s.vars.mu.Lock()
	s.vars.next = n
	s.vars.mu.Unlock()
}

// watchVariables makes the session take a snapshot at the end of every
// cell from now on; the first call while idle takes one at once.
func (s *Session) watchVariables() {
	s.vars.mu.Lock()
	was := s.vars.enabled
	s.vars.enabled = true
	s.vars.mu.Unlock()
	if !was {
		s.Variables() // a snapshot now, when idle
	}
}

// beginCell marks cell r as running. Callers hold evalMu.
func (s *Session) beginCell(r *run) {
	s.vars.mu.Lock()
	n := s.vars.next
	s.vars.next = 0
	if n <= 0 {
		n = r.cell
	}
	s.vars.running = n
	s.vars.mu.Unlock()
}

// endCell takes the snapshot after cell r, when enabled. Callers hold
// evalMu, after keepGlobals.
func (s *Session) endCell() {
	s.vars.mu.Lock()
	n, enabled := s.vars.running, s.vars.enabled
	s.vars.running, s.vars.last = 0, n
	s.vars.mu.Unlock()
	if !enabled || s.lingering != nil {
		return
	}
	s.mu.Lock()
	g := s.lastVars
	s.mu.Unlock()
	snap := &VariablesSnapshot{Cell: n, Taken: time.Now(), Variables: describeGlobals(g, false)}
	s.vars.mu.Lock()
	s.vars.snap = snap
	s.vars.mu.Unlock()
}

// idle takes the interpreter when no cell runs or lingers, returning the
// function that gives it back; ok is false when it is busy. It never waits.
func (s *Session) idle() (release func(), ok bool) {
	if !s.evalMu.TryLock() {
		return nil, false
	}
	if s.lingering != nil {
		select {
		case <-s.lingering:
			s.lingering = nil
		default:
			s.evalMu.Unlock()
			return nil, false
		}
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.evalMu.Unlock()
		return nil, false
	}
	return s.evalMu.Unlock, true
}

// Variables lists the session's variables with their summaries (see
// VariableInfo) without waiting for a running cell: when the session is
// idle they are read from the interpreter now (Live); while a cell runs
// they are the snapshot taken when the last cell finished (Busy, with the
// running cell's number), which is empty when no snapshot was taken: none
// is before the first request on the variables socket (see Serve). A
// variable whose summary fails is listed with the failure as its value.
// Tensor values are read only from host memory: a tensor on a GPU shows its
// shape, dtype and device but no values, which would wait for the device.
func (s *Session) Variables() VariablesSnapshot {
	if release, ok := s.idle(); ok {
		g, _ := s.tryGlobals()
		vs := describeGlobals(g, false)
		release()
		s.vars.mu.Lock()
		defer s.vars.mu.Unlock()
		snap := VariablesSnapshot{Cell: s.vars.last, Live: true, Taken: time.Now(), Variables: vs}
		kept := snap
		kept.Live = false
		s.vars.snap = &kept
		return snap
	}
	s.vars.mu.Lock()
	defer s.vars.mu.Unlock()
	snap := VariablesSnapshot{Cell: s.vars.last, Variables: []VariableInfo{}}
	if s.vars.snap != nil {
		snap = *s.vars.snap
	}
	snap.Live = false
	snap.Busy, snap.Running = true, s.vars.running
	return snap
}

// InspectVariable returns the richer view of variable name (see
// VariableDetail). It reads the interpreter, so it fails at once with an
// error wrapping ErrBusy while a cell runs, and with an error naming the
// variable when there is no such variable.
func (s *Session) InspectVariable(name string) (VariableDetail, error) {
	release, ok := s.idle()
	if !ok {
		s.vars.mu.Lock()
		n := s.vars.running
		s.vars.mu.Unlock()
		what := "a cell"
		if n > 0 {
			what = fmt.Sprintf("cell %d", n)
		}
		return VariableDetail{}, fmt.Errorf("kernel: inspect %s: %w (%s); ask again when it finishes", name, ErrBusy, what)
	}
	defer release()
	g, _ := s.tryGlobals()
	v, found := g[name]
	if !found || hiddenVariable(name) {
		return VariableDetail{}, fmt.Errorf("kernel: inspect %s: no variable named %s in the session", name, name)
	}
	return inspectValue(name, v), nil
}

// hiddenVariable reports names the session declares itself.
func hiddenVariable(n string) bool {
	return n == "ctx" || n == "Display" || n == "_" || strings.HasPrefix(n, reserved) || strings.Contains(n, "__v")
}

// describeGlobals summarises the user's variables in g, sorted by name.
// sync allows reading tensor values from a device's memory.
func describeGlobals(g map[string]reflect.Value, sync bool) []VariableInfo {
	out := make([]VariableInfo, 0, len(g))
	for n, v := range g {
		if hiddenVariable(n) {
			continue
		}
		out = append(out, describeVariable(n, v, sync))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// describeVariable summarises one variable; a panic while doing so (a
// String method failing, a half-built value) becomes its value's text.
func describeVariable(name string, v reflect.Value, sync bool) (info VariableInfo) {
	info.Name = name
	defer func() {
		if r := recover(); r != nil {
			if info.Type == "" {
				info.Type = "?"
			}
			info.Kind, info.Value = "error", fmt.Sprintf("cannot describe: %v", r)
		}
	}()
	info.Type, info.Value = describeValue(v, sync)
	info.Kind = variableKind(v)
	if !v.IsValid() || !v.CanInterface() {
		return info
	}
	x := v.Interface()
	if t, ok := x.(*tensor.Tensor); ok {
		if t != nil {
			_ = tensor.Try(func() {
				info.Shape, info.DType, info.Device = t.Shape(), t.DType().String(), t.Device().String()
				info.Bytes = int64(t.NumElements()) * int64(t.DType().Size())
			})
			if info.Shape == nil && info.DType != "" {
				info.Shape = []int{}
			}
		}
		return info
	}
	if v.Kind() != reflect.Func && mayHoldParams(v.Type()) {
		info.Params = paramCount(x)
		if info.Params > 0 {
			info.Kind = "module"
		}
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Chan, reflect.Array:
		info.Len = new(int)
		*info.Len = v.Len()
	}
	return info
}

// variableKind names what a value is for a front end: tensor, module (set by
// describeVariable), slice, map, func, struct, pointer, or value.
func variableKind(v reflect.Value) string {
	if !v.IsValid() {
		return "value"
	}
	if v.Type() == reflect.TypeOf((*tensor.Tensor)(nil)) {
		return "tensor"
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		return "slice"
	case reflect.Map:
		return "map"
	case reflect.Func:
		return "func"
	case reflect.Chan:
		return "chan"
	case reflect.Struct:
		return "struct"
	case reflect.Pointer, reflect.Interface:
		return "pointer"
	}
	return "value"
}

// mayHoldParams reports whether a value of type t could hold an nn.Param:
// a []float64 or map[string]int is never walked (a million elements would
// be walked at the end of every cell).
func mayHoldParams(t reflect.Type) bool {
	for {
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Pointer, reflect.Chan:
			t = t.Elem()
		case reflect.Map:
			return mayHoldParams(t.Key()) || mayHoldParams(t.Elem())
		case reflect.Struct, reflect.Interface:
			return true
		default:
			return false
		}
	}
}

// inspectValue builds the detail of one variable (see VariableDetail).
func inspectValue(name string, v reflect.Value) (d VariableDetail) {
	d.VariableInfo = describeVariable(name, v, true)
	defer func() {
		if r := recover(); r != nil {
			d.Values = fmt.Sprintf("cannot inspect: %v", r)
		}
	}()
	if !v.IsValid() || !v.CanInterface() {
		return d
	}
	x := v.Interface()
	if t, ok := x.(*tensor.Tensor); ok {
		if t != nil {
			if err := tensor.Try(func() { d.Values = t.String() }); err != nil {
				d.Values = err.Error()
			}
		}
		return d
	}
	if d.Params > 0 {
		_ = tensor.Try(func() {
			for _, p := range nn.Params(x) {
				row := ParameterInfo{Name: p.Name, Trainable: p.Param.Trainable()}
				if t := p.Param.Tensor; t != nil {
					row.Shape, row.DType, row.Device, row.Count = t.Shape(), t.DType().String(), t.Device().String(), t.NumElements()
				}
				d.Parameters = append(d.Parameters, row)
			}
		})
		return d
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return d
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len() && i < maxElements; i++ {
			d.Elements = append(d.Elements, describeVariable(fmt.Sprintf("[%d]", i), v.Index(i), true))
		}
		d.More = max(0, v.Len()-maxElements)
	case reflect.Map:
		keys := v.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = fmt.Sprintf("[%v]", k)
		}
		order := make([]int, len(keys))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return names[order[a]] < names[order[b]] })
		for _, i := range order[:min(len(order), maxElements)] {
			d.Elements = append(d.Elements, describeVariable(names[i], v.MapIndex(keys[i]), true))
		}
		d.More = max(0, len(keys)-maxElements)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField() && len(d.Elements) < maxElements; i++ {
			if f := t.Field(i); f.IsExported() {
				d.Elements = append(d.Elements, describeVariable(f.Name, v.Field(i), true))
			}
		}
	case reflect.Func, reflect.Chan:
	default:
		d.Values = cut(fmt.Sprint(v.Interface()), maxValueText)
	}
	return d
}

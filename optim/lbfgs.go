package optim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// LBFGSConfig configures LBFGS; the zero value of each field is
// torch.optim.LBFGS's default.
type LBFGSConfig struct {
	LR            float64 `json:"lr,omitempty"`             // step length (the line search's first trial); default 1 (0 cannot be set)
	MaxIter       int     `json:"max_iter,omitempty"`       // iterations per StepClosure; default 20
	MaxEval       int     `json:"max_eval,omitempty"`       // loss evaluations per StepClosure; default MaxIter·5/4
	ToleranceGrad float64 `json:"tolerance_grad,omitempty"` // stop when max |gradient| ≤ this; default 1e-7 (0 cannot be set)
	// ToleranceChange stops when the step or the loss change falls below
	// it; default 1e-9 (0 cannot be set).
	ToleranceChange float64 `json:"tolerance_change,omitempty"`
	HistorySize     int     `json:"history_size,omitempty"` // curvature pairs kept; default 100
	// LineSearch is "" (a fixed step of LR) or "strong_wolfe" (a line
	// search satisfying the strong Wolfe conditions, torch's only one).
	LineSearch string `json:"line_search,omitempty"`
}

// LBFGS is the limited-memory BFGS quasi-Newton method, step for step as
// torch.optim.LBFGS (PyTorch 1.13, itself a port of minFunc): each
// StepClosure runs up to MaxIter iterations, each building a direction
// from the last HistorySize curvature pairs (the two-loop recursion) and
// moving along it by LR or by a strong-Wolfe line search, re-evaluating
// the loss through the closure as often as it needs.
//
// As in torch, all the parameters form one vector (in the order of
// nn.TrainableParams) and there are no parameter groups. That vector's
// algebra (the history, dot products, the line search) runs on the host
// in float64: each evaluation reads the gradients back, each move writes
// the parameters, which suits the small, deterministic problems LBFGS is
// meant for (full-batch fitting, style transfer, physics) and keeps
// float32 parameters' iterates in float64 precision between moves.
// The history takes 2·HistorySize·(number of parameters)·8 bytes of host
// memory.
//
// LBFGS does not implement Optimizer: its step needs a closure. It has
// Optimizer's LR, SetLR, ZeroState, State and LoadState.
type LBFGS struct {
	cfg                      LBFGSConfig
	lr                       float64
	maxIter, maxEval, memory int
	tolGrad, tolChange       float64
	strongWolfe              bool

	// State kept between StepClosure calls, as torch's.
	nIter, funcEvals int
	d                []float64 // the last direction
	t                float64   // the last step length
	oldDirs, oldStps [][]float64
	ro               []float64
	hDiag            float64
	prevFlatGrad     []float64
	prevLoss         float64
	size             int // the length of the vectors above (0: none yet)
}

// NewLBFGS returns an LBFGS optimizer. It panics with an error wrapping
// ErrConfig for a negative or non-finite LR or tolerance, a negative
// MaxIter, MaxEval or HistorySize, or an unknown LineSearch.
func NewLBFGS(cfg LBFGSConfig) *LBFGS {
	const op = "optim.NewLBFGS"
	o := &LBFGS{cfg: cfg, lr: orDefault(cfg.LR, 1), maxIter: cfg.MaxIter, maxEval: cfg.MaxEval, memory: cfg.HistorySize,
		tolGrad: orDefault(cfg.ToleranceGrad, 1e-7), tolChange: orDefault(cfg.ToleranceChange, 1e-9), hDiag: 1}
	for _, v := range []struct {
		name  string
		value float64
	}{{"LR", o.lr}, {"ToleranceGrad", o.tolGrad}, {"ToleranceChange", o.tolChange}} {
		if !(v.value >= 0) || math.IsInf(v.value, 0) {
			configError(op, "%s %v out of range", v.name, v.value)
		}
	}
	for _, v := range []struct {
		name  string
		value int
	}{{"MaxIter", cfg.MaxIter}, {"MaxEval", cfg.MaxEval}, {"HistorySize", cfg.HistorySize}} {
		if v.value < 0 {
			configError(op, "%s %d is negative", v.name, v.value)
		}
	}
	if o.maxIter == 0 {
		o.maxIter = 20
	}
	if o.maxEval == 0 {
		o.maxEval = o.maxIter * 5 / 4
	}
	if o.memory == 0 {
		o.memory = 100
	}
	switch cfg.LineSearch {
	case "":
	case "strong_wolfe":
		o.strongWolfe = true
	default:
		configError(op, "LineSearch %q: want \"\" or \"strong_wolfe\"", cfg.LineSearch)
	}
	return o
}

// Config returns the configuration o was made with.
func (o *LBFGS) Config() LBFGSConfig { return o.cfg }

// LR returns the current learning rate.
func (o *LBFGS) LR() float64 { return o.lr }

// SetLR sets the learning rate. It panics with ErrConfig for a negative or
// non-finite rate.
func (o *LBFGS) SetLR(lr float64) {
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		configError("optim.LBFGS.SetLR", "learning rate %v out of range", lr)
	}
	o.lr = lr
}

// ZeroState forgets the history, as a fresh optimizer would have it. The
// learning rate stays.
func (o *LBFGS) ZeroState() {
	lr := o.lr
	*o = *NewLBFGS(o.cfg)
	o.lr = lr
}

// StepClosure runs one torch.optim.LBFGS step on model's trainable
// parameters (nn.TrainableParams) and returns the loss at the start.
// closure must compute the loss, a scalar on an autodiff device, from the
// parameters' current values; StepClosure calls Backward on it itself and
// releases what each evaluation allocates. Parameters the loss does not
// reach count as having zero gradient.
//
// It panics with an error wrapping ErrConfig for a nil closure,
// ErrState when the parameters do not match the restored or previous
// state (another count of values), and with a *tensor.Error (ErrShape)
// when the closure's loss is not a single value.
func (o *LBFGS) StepClosure(model any, closure func() *tensor.Tensor) float64 {
	return o.StepClosureParams(nn.TrainableParams(model), closure)
}

// StepClosureParams is StepClosure over an explicit list of parameters
// (frozen ones included, if listed).
func (o *LBFGS) StepClosureParams(params []nn.NamedParam, closure func() *tensor.Tensor) float64 {
	const op = "optim.LBFGS.StepClosure"
	if closure == nil {
		configError(op, "nil closure: LBFGS re-evaluates the loss through it")
	}
	var ps []*nn.Param
	size := 0
	for _, np := range params {
		if np.Param != nil && np.Param.Tensor != nil {
			ps = append(ps, np.Param)
			size += np.Param.NumElements()
		}
	}
	if o.size != 0 && o.size != size {
		panic(fmt.Errorf("%s: the parameters hold %d values, the LBFGS state %d: %w", op, size, o.size, ErrState))
	}
	if size == 0 {
		return 0
	}
	ev := &lbfgsProblem{params: ps, closure: closure}

	origLoss, flatGrad := ev.evaluate()
	o.size = size
	loss := origLoss
	currentEvals := 1
	o.funcEvals++
	if maxAbs(flatGrad) <= o.tolGrad {
		return origLoss
	}
	d, t := o.d, o.t
	for nIter := 1; nIter <= o.maxIter; nIter++ {
		o.nIter++
		if o.nIter == 1 {
			d = scaled(flatGrad, -1)
			o.oldDirs, o.oldStps, o.ro, o.hDiag = nil, nil, nil, 1
		} else {
			d = o.direction(flatGrad, d, t)
		}
		o.prevFlatGrad = append(o.prevFlatGrad[:0], flatGrad...)
		o.prevLoss = loss

		if o.nIter == 1 {
			t = math.Min(1, 1/sumAbs(flatGrad)) * o.lr
		} else {
			t = o.lr
		}
		gtd := dot(flatGrad, d)
		if gtd > -o.tolChange {
			break
		}
		evals := 0
		optimal := false
		if o.strongWolfe {
			x := ev.read()
			loss, flatGrad, t, evals = strongWolfe(func(step float64) (float64, []float64) {
				ev.move(step, d)
				f, g := ev.evaluate()
				ev.write(x)
				return f, g
			}, t, d, loss, flatGrad, gtd)
			ev.move(t, d)
			optimal = maxAbs(flatGrad) <= o.tolGrad
		} else {
			ev.move(t, d)
			if nIter != o.maxIter {
				// Re-evaluate only when another iteration follows (as torch:
				// in a stochastic setting the last one would be wasted).
				loss, flatGrad = ev.evaluate()
				optimal = maxAbs(flatGrad) <= o.tolGrad
				evals = 1
			}
		}
		currentEvals += evals
		o.funcEvals += evals

		if nIter == o.maxIter || currentEvals >= o.maxEval || optimal {
			break
		}
		if maxAbs(scaled(d, t)) <= o.tolChange || math.Abs(loss-o.prevLoss) < o.tolChange {
			break
		}
	}
	o.d, o.t = d, t
	return origLoss
}

// direction updates the curvature history with the last step (d·t) and
// gradient change, and returns the new direction −H·g by the two-loop
// recursion.
func (o *LBFGS) direction(flatGrad, d []float64, t float64) []float64 {
	y := make([]float64, len(flatGrad))
	for i := range y {
		y[i] = flatGrad[i] - o.prevFlatGrad[i]
	}
	s := scaled(d, t)
	if ys := dot(y, s); ys > 1e-10 {
		if len(o.oldDirs) == o.memory {
			o.oldDirs, o.oldStps, o.ro = o.oldDirs[1:], o.oldStps[1:], o.ro[1:]
		}
		o.oldDirs = append(o.oldDirs, y)
		o.oldStps = append(o.oldStps, s)
		o.ro = append(o.ro, 1/ys)
		o.hDiag = ys / dot(y, y)
	}
	n := len(o.oldDirs)
	al := make([]float64, n)
	q := scaled(flatGrad, -1)
	for i := n - 1; i >= 0; i-- {
		al[i] = dot(o.oldStps[i], q) * o.ro[i]
		axpy(q, -al[i], o.oldDirs[i])
	}
	r := scaled(q, o.hDiag)
	for i := range n {
		be := dot(o.oldDirs[i], r) * o.ro[i]
		axpy(r, al[i]-be, o.oldStps[i])
	}
	return r
}

// lbfgsProblem evaluates the closure and moves the parameters, as one
// flat vector.
type lbfgsProblem struct {
	params  []*nn.Param
	closure func() *tensor.Tensor
}

// evaluate runs the closure and Backward, returning the loss and the flat
// gradient; everything they allocate is released.
func (e *lbfgsProblem) evaluate() (loss float64, grad []float64) {
	tensor.Scope(func() {
		l := e.closure()
		if l == nil || l.NumElements() != 1 {
			shape := []int(nil)
			if l != nil {
				shape = l.Shape()
			}
			panic(&tensor.Error{Op: "optim.LBFGS.StepClosure", Err: tensor.ErrShape,
				Msg: fmt.Sprintf("the closure must return the loss as a single value, got shape %v", shape)})
		}
		loss = l.Item()
		grads := l.Backward()
		for _, p := range e.params {
			if g := grads.Get(p.Tensor); g != nil {
				grad = append(grad, g.Float64s()...)
			} else {
				grad = append(grad, make([]float64, p.NumElements())...)
			}
		}
	})
	return loss, grad
}

// read returns the parameters' values as one vector.
func (e *lbfgsProblem) read() []float64 {
	var x []float64
	for _, p := range e.params {
		x = append(x, p.Float64s()...)
	}
	return x
}

// write sets the parameters from one vector.
func (e *lbfgsProblem) write(x []float64) {
	off := 0
	tensor.Scope(func() {
		for _, p := range e.params {
			n := p.NumElements()
			v := tensor.FromFloat64s(p.Device().Inner(), x[off:off+n], p.Shape()...)
			if v.DType() != p.DType() {
				v = v.To(p.DType())
			}
			p.Tensor.Assign(v)
			off += n
		}
	})
}

// move adds t·d to the parameters.
func (e *lbfgsProblem) move(t float64, d []float64) {
	x := e.read()
	for i := range x {
		x[i] += t * d[i]
	}
	e.write(x)
}

// strongWolfe is torch.optim.lbfgs._strong_wolfe: a line search along d
// from step t satisfying the strong Wolfe conditions (c₁ 1e-4, c₂ 0.9, at
// most 25 evaluations). obj evaluates the loss and gradient at step t. As
// in torch, its bracket tolerance is 1e-9 whatever ToleranceChange is.
func strongWolfe(obj func(t float64) (float64, []float64), t float64, d []float64, f float64, g []float64,
	gtd float64) (float64, []float64, float64, int) {
	const c1, c2, tolChange, maxLS = 1e-4, 0.9, 1e-9, 25
	dNorm := maxAbs(d)
	fNew, gNew := obj(t)
	evals := 1
	gtdNew := dot(gNew, d)

	tPrev, fPrev, gPrev, gtdPrev := 0.0, f, g, gtd
	done := false
	lsIter := 0
	var bracket, bracketF, bracketGtd []float64
	var bracketG [][]float64
	for lsIter < maxLS {
		armijoFails := fNew > f+c1*t*gtd || (lsIter > 1 && fNew >= fPrev)
		if !armijoFails && math.Abs(gtdNew) <= -c2*gtd {
			bracket, bracketF, bracketG, bracketGtd = []float64{t}, []float64{fNew}, [][]float64{gNew}, []float64{gtdNew}
			done = true
			break
		}
		if armijoFails || gtdNew >= 0 {
			bracket, bracketF, bracketG, bracketGtd = []float64{tPrev, t}, []float64{fPrev, fNew},
				[][]float64{gPrev, gNew}, []float64{gtdPrev, gtdNew}
			break
		}
		// Extrapolate.
		minStep, maxStep := t+0.01*(t-tPrev), t*10
		tmp := t
		t = cubicInterpolate(tPrev, fPrev, gtdPrev, t, fNew, gtdNew, &[2]float64{minStep, maxStep})
		tPrev, fPrev, gPrev, gtdPrev = tmp, fNew, gNew, gtdNew
		fNew, gNew = obj(t)
		evals++
		gtdNew = dot(gNew, d)
		lsIter++
	}
	if lsIter == maxLS {
		bracket, bracketF, bracketG, bracketGtd = []float64{0, t}, []float64{f, fNew}, [][]float64{g, gNew},
			[]float64{gtd, gtdNew}
	}

	// Zoom: refine the bracket until a point satisfies the conditions.
	insufficient := false
	low, high := 0, 1
	if !(bracketF[0] <= bracketF[len(bracketF)-1]) {
		low, high = 1, 0
	}
	for !done && lsIter < maxLS {
		if math.Abs(bracket[1]-bracket[0])*dNorm < tolChange {
			break
		}
		t = cubicInterpolate(bracket[0], bracketF[0], bracketGtd[0], bracket[1], bracketF[1], bracketGtd[1], nil)
		hi, lo := math.Max(bracket[0], bracket[1]), math.Min(bracket[0], bracket[1])
		eps := 0.1 * (hi - lo)
		if math.Min(hi-t, t-lo) < eps {
			// Too close to a boundary: move 0.1 of the bracket away from it
			// when the last trial was close too or t is outside.
			if insufficient || t >= hi || t <= lo {
				if math.Abs(t-hi) < math.Abs(t-lo) {
					t = hi - eps
				} else {
					t = lo + eps
				}
				insufficient = false
			} else {
				insufficient = true
			}
		} else {
			insufficient = false
		}
		fNew, gNew = obj(t)
		evals++
		gtdNew = dot(gNew, d)
		lsIter++
		if fNew > f+c1*t*gtd || fNew >= bracketF[low] {
			bracket[high], bracketF[high], bracketG[high], bracketGtd[high] = t, fNew, gNew, gtdNew
			if bracketF[0] <= bracketF[1] {
				low, high = 0, 1
			} else {
				low, high = 1, 0
			}
			continue
		}
		if math.Abs(gtdNew) <= -c2*gtd {
			done = true
		} else if gtdNew*(bracket[high]-bracket[low]) >= 0 {
			bracket[high], bracketF[high], bracketG[high], bracketGtd[high] =
				bracket[low], bracketF[low], bracketG[low], bracketGtd[low]
		}
		bracket[low], bracketF[low], bracketG[low], bracketGtd[low] = t, fNew, gNew, gtdNew
	}
	return bracketF[low], bracketG[low], bracket[low], evals
}

// cubicInterpolate returns the minimiser of the cubic through (x1, f1)
// and (x2, f2) with slopes g1 and g2, clamped to bounds (default: between
// x1 and x2), or the bounds' middle when the cubic has none (torch's
// _cubic_interpolate, from minFunc's polyinterp).
func cubicInterpolate(x1, f1, g1, x2, f2, g2 float64, bounds *[2]float64) float64 {
	lo, hi := x1, x2
	switch {
	case bounds != nil:
		lo, hi = bounds[0], bounds[1]
	case x1 > x2:
		lo, hi = x2, x1
	}
	d1 := g1 + g2 - 3*(f1-f2)/(x1-x2)
	d2sq := d1*d1 - g1*g2
	if d2sq >= 0 {
		d2 := math.Sqrt(d2sq)
		var minPos float64
		if x1 <= x2 {
			minPos = x2 - (x2-x1)*((g2+d2-d1)/(g2-g1+2*d2))
		} else {
			minPos = x1 - (x1-x2)*((g1+d2-d1)/(g1-g2+2*d2))
		}
		return pyMin(pyMax(minPos, lo), hi)
	}
	return (lo + hi) / 2
}

// pyMax and pyMin are Python's max and min of two numbers (NaN first wins).
func pyMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

func pyMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// axpy sets y = y + a·x.
func axpy(y []float64, a float64, x []float64) {
	for i := range y {
		y[i] += a * x[i]
	}
}

func scaled(x []float64, a float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * a
	}
	return out
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		if a := math.Abs(v); a > m || math.IsNaN(a) {
			m = a
		}
	}
	return m
}

func sumAbs(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += math.Abs(v)
	}
	return s
}

// LBFGS state keys: State.Tensors holds "lbfgs.<slot>" vectors (float64,
// on the CPU) and State.Steps the counters "n_iter" and "func_evals".
const lbfgsPrefix = "lbfgs"

// State returns LBFGS's state, torch's names: Steps holds "n_iter" and
// "func_evals"; Tensors, under StateKey("lbfgs", slot), the float64
// vectors "d", "prev_flat_grad", "old_dirs_<i>", "old_stps_<i>" and "ro",
// and "scalars" = [t, H_diag, prev_loss]. The tensors are new CPU tensors
// created on the calling goroutine. It never fails.
func (o *LBFGS) State() (*State, error) {
	s := &State{Kind: "LBFGS", LR: o.lr, Steps: map[string]int{"n_iter": o.nIter, "func_evals": o.funcEvals},
		Tensors: map[string]*tensor.Tensor{}}
	if o.size == 0 || o.d == nil {
		return s, nil
	}
	vec := func(slot string, v []float64) {
		s.Tensors[StateKey(lbfgsPrefix, slot)] = tensor.FromFloat64s(tensor.CPU(), append([]float64(nil), v...), len(v))
	}
	vec("d", o.d)
	vec("prev_flat_grad", o.prevFlatGrad)
	vec("ro", o.ro)
	vec("scalars", []float64{o.t, o.hDiag, o.prevLoss})
	for i := range o.oldDirs {
		vec("old_dirs_"+strconv.Itoa(i), o.oldDirs[i])
		vec("old_stps_"+strconv.Itoa(i), o.oldStps[i])
	}
	return s, nil
}

// LoadState restores state saved by State, replacing the current one. It
// returns an error wrapping ErrState, and changes nothing, when s is
// another optimizer's, has an out-of-range learning rate or counter, or
// its vectors are missing, of other lengths, or more than HistorySize.
// The parameter count is checked at the next StepClosure.
func (o *LBFGS) LoadState(s *State) error {
	const op = "optim.LBFGS.LoadState"
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %w", op, fmt.Sprintf(format, args...), ErrState)
	}
	if s == nil {
		return fail("nil state")
	}
	if s.Kind != "LBFGS" {
		return fail("state of a %q optimizer, not \"LBFGS\"", s.Kind)
	}
	if math.IsNaN(s.LR) || math.IsInf(s.LR, 0) || s.LR < 0 {
		return fail("learning rate %v out of range", s.LR)
	}
	for k, n := range s.Steps {
		if (k != "n_iter" && k != "func_evals") || n < 0 {
			return fail("counter %q = %d", k, n)
		}
	}
	vecs := map[string][]float64{}
	for key, t := range s.Tensors {
		name, slot, ok := SplitStateKey(key)
		if !ok || name != lbfgsPrefix {
			return fail("key %q is not lbfgs.<slot>", key)
		}
		if t == nil || t.Released() || !t.DType().IsFloat() || t.Dims() != 1 {
			return fail("key %q: want a live floating-point vector", key)
		}
		vecs[slot] = t.Float64s()
	}
	n := NewLBFGS(o.cfg)
	n.lr, n.nIter, n.funcEvals = s.LR, s.Steps["n_iter"], s.Steps["func_evals"]
	if len(vecs) > 0 {
		n.d, n.prevFlatGrad, n.ro = vecs["d"], vecs["prev_flat_grad"], vecs["ro"]
		sc := vecs["scalars"]
		if len(sc) != 3 || n.d == nil || len(n.prevFlatGrad) != len(n.d) || len(n.ro) > n.memory {
			return fail("incomplete or inconsistent history")
		}
		n.t, n.hDiag, n.prevLoss = sc[0], sc[1], sc[2]
		for i := range n.ro {
			y, st := vecs["old_dirs_"+strconv.Itoa(i)], vecs["old_stps_"+strconv.Itoa(i)]
			if len(y) != len(n.d) || len(st) != len(n.d) {
				return fail("curvature pair %d missing or of the wrong length", i)
			}
			n.oldDirs, n.oldStps = append(n.oldDirs, y), append(n.oldStps, st)
		}
		for slot := range vecs {
			if i := strings.LastIndexByte(slot, '_'); i > 0 && (strings.HasPrefix(slot, "old_dirs_") || strings.HasPrefix(slot, "old_stps_")) {
				if k, err := strconv.Atoi(slot[i+1:]); err != nil || k >= len(n.ro) {
					return fail("unexpected slot %q", slot)
				}
			}
		}
		n.size = len(n.d)
	}
	*o = *n
	return nil
}

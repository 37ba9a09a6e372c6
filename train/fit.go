package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// Learner is what Fit trains: a model (any struct nn.Params walks), its
// optimizer, and an optional schedule stepped after every optimizer step.
//
// Stepper, when set, computes the loss instead of Model's own methods. In
// yaegi notebooks set it for a model type declared in a cell: compiled code
// cannot see an interpreted type's methods through Model (an any), but the
// interpreter wraps a value assigned to an interface-typed field. yaegi
// v0.16.1 does so in an assignment statement (l.Stepper = model; likewise
// s.Observers = append(s.Observers, obs)), not in a composite literal,
// which panics.
type Learner struct {
	Model     any
	Optimizer optim.Optimizer
	Scheduler *optim.Scheduler // optional
	Stepper   TrainStepper     // optional; see above
}

// Config is the plain, JSON-serializable part of a training run; Fit writes
// it to the run directory's config.json and the start event.
type Config struct {
	Epochs           int            `json:"epochs"`                      // epochs to run; 0 means 1
	LogEvery         int            `json:"log_every,omitempty"`         // optimizer steps between step events and log lines; 0 means 50
	GradAccumulation int            `json:"grad_accumulation,omitempty"` // batches per optimizer step; 0 means 1
	GradClip         optim.GradClip `json:"grad_clip,omitempty"`         // clipping applied before each optimizer step
	RunDir           string         `json:"run_dir,omitempty"`           // where config.json and events.jsonl go; "" writes no files
}

// TrainStepper is a model that computes its own loss: TrainStep runs the
// forward pass on a batch and returns the scalar loss and the outputs that
// metrics are fed (outputs may be nil when no metric needs them). Models
// without it must be nn.Modules: their loss is nn.CrossEntropy of
// Forward(x) against y.
type TrainStepper interface {
	TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor)
}

// ValidStepper is a model with a validation step of its own; without it,
// validation uses TrainStep (or the nn.Module default) on a NoGrad view of
// the batch.
type ValidStepper interface {
	ValidStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor)
}

// Position is where a run stands, handed to a Checkpointer.
type Position struct {
	Epoch int // epochs completed
	Step  int // optimizer steps taken
}

// Checkpointer is the hook for checkpoint strategies: Fit calls Checkpoint
// after every epoch (after validation and the stop rule), with the epoch's
// train and valid metric values. An error ends the run with StopFailed.
type Checkpointer interface {
	Checkpoint(ctx context.Context, l *Learner, pos Position, train, valid Values) error
}

// Supervised is a supervised training run. Only Train is required.
type Supervised struct {
	Config
	Train        *data.DataLoader
	Valid        *data.DataLoader // optional: validated after every epoch
	Metrics      []metrics.Metric // fed the training outputs and targets; reset every epoch
	ValidMetrics []metrics.Metric // fed the validation outputs and targets (not the same objects as Metrics)
	Stop         StopRule         // optional, e.g. NewEarlyStopping("loss", 3)
	Observers    []Observer
	Log          io.Writer    // plain log lines (one per LogEvery steps and per epoch); nil for none
	Checkpoint   Checkpointer // optional hook, see Checkpointer
}

// Result is the outcome of Fit.
type Result struct {
	Reason        StopReason
	Why           string   // details, e.g. the early-stopping rule's message
	Epochs        int      // epochs completed
	Steps         int      // optimizer steps taken
	Train         []Values // per completed epoch: training metric values ("loss" always)
	Valid         []Values // per completed epoch: validation values (empty without Valid)
	DroppedEvents int      // events slow observers missed
}

// run is the state of one Fit call.
type run struct {
	s       *Supervised
	l       *Learner
	ctx     context.Context
	out     *fanout
	log     *eventLog
	start   time.Time
	step    int
	loss    *metrics.Loss
	vloss   *metrics.Loss
	logErr  error
	lastLog int
	warned  bool // a mode warning was logged
}

// Fit trains l. It runs Epochs epochs over Train (each optimizer step in a
// tensor.Scope, after GradAccumulation batches), steps the schedule after
// each optimizer step, validates on Valid after each epoch (the model in
// nn.Eval mode, batches on a NoGrad view), asks Stop whether to go on and
// calls Checkpoint. Cancelling ctx stops the run after the current
// optimizer step: Fit then returns a Result with Reason StopCancelled and a
// nil error. It returns an error (and Reason StopFailed) for a missing
// loader or learner, a failed batch, a tensor error panicking in a step, or
// a run directory it cannot write. Other panics in a model's step (bugs)
// propagate, after the end event is written and the observers closed.
func (s *Supervised) Fit(ctx context.Context, l *Learner) (res Result, err error) {
	if s.Train == nil || l == nil || l.Model == nil || l.Optimizer == nil {
		return Result{Reason: StopFailed}, errors.New("train: Fit needs Train, a Learner, its Model and its Optimizer")
	}
	cfg := s.Config
	if cfg.Epochs <= 0 {
		cfg.Epochs = 1
	}
	if cfg.LogEvery <= 0 {
		cfg.LogEvery = 50
	}
	if cfg.GradAccumulation <= 0 {
		cfg.GradAccumulation = 1
	}
	r := &run{s: s, l: l, ctx: ctx, start: time.Now(), loss: metrics.NewLoss(), vloss: metrics.NewLoss()}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return Result{Reason: StopFailed}, fmt.Errorf("train: config: %w", err)
	}
	if cfg.RunDir != "" {
		if r.log, err = openEventLog(cfg.RunDir, cfgJSON); err != nil {
			return Result{Reason: StopFailed}, err
		}
	}
	r.out = newFanout(s.Observers)
	r.emit(Event{Version: EventLogVersion, Kind: EventStart, Config: cfgJSON, Batches: s.Train.Len()})
	defer func() {
		// A panic that is not a *tensor.Error (a bug in a model's step)
		// goes on up with its stack, after the end event is logged and the
		// observers and the log are closed.
		if p := recover(); p != nil {
			r.emit(Event{Kind: EventEnd, Reason: StopFailed, Error: fmt.Sprintf("panic: %v", p)})
			r.out.close()
			if r.log != nil {
				_ = r.log.close()
			}
			panic(p)
		}
	}()
	res = r.loop(cfg)
	if res.Reason == StopFailed {
		err = errors.New(res.Why)
	}
	end := Event{Kind: EventEnd, Epoch: res.Epochs, Reason: res.Reason}
	if res.Reason == StopFailed {
		end.Error = res.Why
	}
	r.emit(end)
	r.out.close()
	res.DroppedEvents = r.out.dropped
	if r.log != nil {
		if cerr := r.log.close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if r.logErr != nil && err == nil {
		err = r.logErr
	}
	return res, err
}

func (r *run) emit(e Event) {
	e.Time = time.Now()
	e.Step = r.step
	e.Elapsed = time.Since(r.start).Seconds()
	if r.log != nil {
		if err := r.log.write(e); err != nil && r.logErr == nil {
			r.logErr = err
		}
	}
	r.out.publish(e)
}

func (r *run) logf(format string, args ...any) {
	if r.s.Log != nil {
		_, _ = fmt.Fprintf(r.s.Log, format+"\n", args...)
	}
}

func (r *run) loop(cfg Config) Result {
	var res Result
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		train, stop, why := r.trainEpoch(cfg, epoch)
		if stop != "" && stop != StopCancelled {
			res.Reason, res.Why = stop, why
			return res
		}
		res.Steps = r.step
		if stop == StopCancelled {
			res.Reason, res.Why = StopCancelled, why
			return res
		}
		res.Train = append(res.Train, train)
		r.emit(Event{Kind: EventEpoch, Epoch: epoch, Split: "train", Metrics: train.clone(), LR: r.l.Optimizer.LR()})
		line := fmt.Sprintf("epoch %d/%d train %s", epoch, cfg.Epochs, train)
		var valid Values
		if r.s.Valid != nil {
			var reason StopReason
			valid, reason, why = r.validate(epoch)
			if reason != "" {
				res.Reason, res.Why = reason, why
				return res
			}
			res.Valid = append(res.Valid, valid)
			r.emit(Event{Kind: EventEpoch, Epoch: epoch, Split: "valid", Metrics: valid.clone()})
			line += " | valid " + valid.String()
		}
		res.Epochs = epoch
		r.logf("%s (%.1fs)", line, time.Since(r.start).Seconds())
		if r.s.Checkpoint != nil {
			if err := r.s.Checkpoint.Checkpoint(r.ctx, r.l, Position{Epoch: epoch, Step: r.step}, train, valid); err != nil {
				res.Reason, res.Why = StopFailed, fmt.Sprintf("train: checkpoint after epoch %d: %v", epoch, err)
				return res
			}
		}
		if r.s.Stop != nil {
			if ok, why := r.s.Stop.ShouldStop(epoch, train, valid); ok {
				r.logf("stopping early: %s", why)
				res.Reason, res.Why = StopEarly, why
				return res
			}
		}
		if r.ctx.Err() != nil {
			res.Reason, res.Why = StopCancelled, r.ctx.Err().Error()
			return res
		}
	}
	res.Reason = StopCompleted
	return res
}

// setMode calls nn.Train or nn.Eval. It returns the error of a model
// whose mode cannot be set (a mode-carrying module that is not
// addressable); models without mode-carrying modules are fine.
func setMode(model any, training bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); ok {
				err = e
				return
			}
			err = fmt.Errorf("%v", p)
		}
	}()
	if training {
		nn.Train(model)
	} else {
		nn.Eval(model)
	}
	return nil
}

// forward runs the learner's step on a batch: Stepper's when set, else
// the model's.
func forward(l *Learner, x, y *tensor.Tensor, valid bool) (loss, outputs *tensor.Tensor) {
	var model any = l.Model
	if l.Stepper != nil {
		model = l.Stepper
	}
	if valid {
		if v, ok := model.(ValidStepper); ok {
			return v.ValidStep(x, y)
		}
	}
	switch m := model.(type) {
	case TrainStepper:
		return m.TrainStep(x, y)
	case nn.Module:
		out := m.Forward(x)
		return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
	}
	panic(&tensor.Error{Op: "train.Fit", Err: tensor.ErrArgument,
		Msg: fmt.Sprintf("model %T has neither TrainStep(x, y) (loss, outputs) nor Forward(x)", model)})
}

// batchSize returns the size of the batch's first dimension.
func batchSize(x *tensor.Tensor) int {
	if s := x.Shape(); len(s) > 0 {
		return s[0]
	}
	return 1
}

// update feeds ms the outputs and targets.
func update(ms []metrics.Metric, outputs, y *tensor.Tensor) error {
	if outputs == nil {
		return nil
	}
	for _, m := range ms {
		if err := m.Update(outputs, y); err != nil && !errors.Is(err, metrics.ErrNotTensor) {
			return err
		}
	}
	return nil
}

func snapshot(loss *metrics.Loss, ms []metrics.Metric) Values {
	v := Values{"loss": loss.Value()}
	for _, m := range ms {
		if mv, ok := m.(metrics.MultiValued); ok {
			for k, x := range mv.Values() {
				v[k] = x
			}
			continue
		}
		v[m.Name()] = m.Value()
	}
	return v
}

func (v Values) clone() Values {
	c := make(Values, len(v))
	for k, x := range v {
		c[k] = x
	}
	return c
}

// String formats v as "loss 0.1234 accuracy 0.9", loss first, then by name.
func (v Values) String() string {
	keys := make([]string, 0, len(v))
	for k := range v {
		if k != "loss" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if _, ok := v["loss"]; ok {
		keys = append([]string{"loss"}, keys...)
	}
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s %.4g", k, v[k])
	}
	return s
}

// trainEpoch runs one epoch of training. It returns the epoch's metric
// values, or a stop reason (StopCancelled or StopFailed) and its details.
func (r *run) trainEpoch(cfg Config, epoch int) (Values, StopReason, string) {
	r.loss.Reset()
	metrics.ResetAll(r.s.Metrics...)
	if err := setMode(r.l.Model, true); err != nil && !r.warned {
		r.warned = true
		r.logf("warning: %v", err)
	}
	it := r.s.Train.Iter(r.ctx, epoch-1)
	defer it.Close()
	nb := r.s.Train.Len()
	samples := 0 // training samples of this epoch so far, for step events
	done := false
	for b := 0; !done; {
		var reason StopReason
		var why string
		n := 0
		err := tensor.Try(func() {
			tensor.Scope(func() {
				var total *tensor.Tensor
				var batches []*data.Batch
				defer func() {
					for _, bt := range batches {
						bt.Release()
					}
				}()
				for n < cfg.GradAccumulation {
					if !it.Next() {
						done = true
						break
					}
					bt := it.Batch()
					batches = append(batches, bt)
					samples += batchSize(bt.X)
					loss, out := forward(r.l, bt.X, bt.Y, false)
					if err := r.loss.UpdateLoss(loss.Item(), batchSize(bt.X)); err != nil {
						reason, why = StopFailed, fmt.Sprintf("train: epoch %d batch %d: loss: %v", epoch, b, err)
						return
					}
					if err := update(r.s.Metrics, out, bt.Y); err != nil {
						reason, why = StopFailed, fmt.Sprintf("train: epoch %d batch %d: metrics: %v", epoch, b, err)
						return
					}
					if total == nil {
						total = loss
					} else {
						total = total.Add(loss)
					}
					n++
					b++
				}
				if n == 0 {
					return
				}
				if n > 1 {
					total = total.MulScalar(1 / float64(n))
				}
				grads := total.Backward()
				defer grads.Release()
				r.clip(cfg.GradClip, grads)
				r.l.Optimizer.Step(r.l.Model, grads)
				if r.l.Scheduler != nil {
					r.l.Scheduler.Step()
				}
				r.step++
			})
		})
		if err != nil {
			return nil, StopFailed, fmt.Sprintf("train: epoch %d step %d: %v", epoch, r.step+1, err)
		}
		if reason != "" {
			return nil, reason, why
		}
		if n > 0 && (r.step-r.lastLog >= cfg.LogEvery) {
			r.lastLog = r.step
			vals := snapshot(r.loss, r.s.Metrics)
			lr := r.l.Optimizer.LR()
			r.emit(Event{Kind: EventStep, Epoch: epoch, Split: "train", Metrics: vals, LR: lr,
				Batches: nb, Batch: b, Samples: samples})
			r.logf("epoch %d/%d batch %d/%d step %d %s lr %.4g", epoch, cfg.Epochs, b, nb, r.step, vals, lr)
		}
		if r.ctx.Err() != nil {
			return nil, StopCancelled, r.ctx.Err().Error()
		}
	}
	if err := it.Err(); err != nil {
		if r.ctx.Err() != nil {
			return nil, StopCancelled, r.ctx.Err().Error()
		}
		return nil, StopFailed, fmt.Sprintf("train: epoch %d: %v", epoch, err)
	}
	return snapshot(r.loss, r.s.Metrics), "", ""
}

// clip applies c to grads in place.
func (r *run) clip(c optim.GradClip, grads *tensor.Gradients) {
	if c.Value > 0 {
		optim.ClipGradValue(grads, r.l.Model, c.Value)
	}
	if c.MaxNorm > 0 {
		p := c.NormType
		if p == 0 {
			p = 2
		}
		optim.ClipGradNorm(grads, r.l.Model, c.MaxNorm, p)
	}
}

// validate runs the model over Valid in eval mode without recording
// gradients.
func (r *run) validate(epoch int) (Values, StopReason, string) {
	r.vloss.Reset()
	metrics.ResetAll(r.s.ValidMetrics...)
	if err := setMode(r.l.Model, false); err != nil && !r.warned {
		r.warned = true
		r.logf("warning: validating in training mode: %v", err)
	}
	defer func() { _ = setMode(r.l.Model, true) }()
	it := r.s.Valid.Iter(r.ctx, epoch-1)
	defer it.Close()
	var failure string
	for it.Next() {
		bt := it.Batch()
		err := tensor.Try(func() {
			tensor.Scope(func() {
				defer bt.Release()
				x := bt.X.ToDevice(bt.X.Device().NoGrad())
				y := bt.Y.ToDevice(bt.Y.Device().NoGrad())
				loss, out := forward(r.l, x, y, true)
				if err := r.vloss.UpdateLoss(loss.Item(), batchSize(x)); err != nil {
					failure = err.Error()
					return
				}
				if err := update(r.s.ValidMetrics, out, bt.Y); err != nil {
					failure = err.Error()
				}
			})
		})
		if err != nil {
			failure = err.Error()
		}
		if failure != "" {
			return nil, StopFailed, fmt.Sprintf("train: validation after epoch %d: %s", epoch, failure)
		}
	}
	if err := it.Err(); err != nil {
		if r.ctx.Err() != nil {
			return nil, StopCancelled, r.ctx.Err().Error()
		}
		return nil, StopFailed, fmt.Sprintf("train: validation after epoch %d: %v", epoch, err)
	}
	return snapshot(r.vloss, r.s.ValidMetrics), "", ""
}

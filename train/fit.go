package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/dist"
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

// Position is where a run stands: what a checkpoint records and Resume
// goes on from. Epoch is the number of epochs completed (trained,
// validated and shown to the stop rule); Batch is the number of batches of
// the next epoch already trained on, 0 at an epoch's end (it equals
// Train.Len() when that epoch's training finished but its validation did
// not: resuming then validates); Step is the number of optimizer steps.
type Position struct {
	Epoch int `json:"epochs"`
	Batch int `json:"batch"`
	Step  int `json:"step"`
}

// Checkpointer is the hook for checkpoint strategies; Checkpoints is this
// package's. Fit calls Checkpoint on its own goroutine at every moment a
// checkpoint could be taken: after each optimizer step inside an epoch,
// at each epoch's end (after validation and the stop rule), and, when the
// run stops, at a final moment (Moment.Final) which is the epoch's end
// moment when the run stops there. The strategy decides whether to write
// and writes with Moment.Save. An error ends the run with StopFailed.
//
// At a final moment ctx is never cancelled (it is detached from Fit's), so
// that a cancelled run still gets its last checkpoint written. Fit calls
// Checkpoint after every step, so deciding not to write must be cheap.
type Checkpointer interface {
	Checkpoint(ctx context.Context, m *Moment) error
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
	Log          io.Writer // plain log lines (one per LogEvery steps and per epoch); nil for none
	// Checkpoint is the checkpoint strategy. Nil means NewCheckpoints()
	// when RunDir is set (keep the last 2 and the best, one per epoch) and
	// none otherwise; NoCheckpoints turns checkpoints off.
	Checkpoint Checkpointer
	// Comm, when set with Size > 1, trains data-parallel: this process is
	// one rank of Comm's group, and every rank calls Fit with the same
	// model, config and loaders (see "Data-parallel training" in the
	// package doc). Nil, or a group of one, is a single-process run.
	Comm dist.Communicator
}

// Result is the outcome of Fit or Resume. After a Resume it covers the
// whole run, the epochs and steps before the checkpoint included.
type Result struct {
	Reason        StopReason
	Why           string   // details, e.g. the early-stopping rule's message
	Epochs        int      // epochs completed
	Steps         int      // optimizer steps taken
	Train         []Values // per completed epoch: training metric values ("loss" always)
	Valid         []Values // per completed epoch: validation values (empty without Valid)
	DroppedEvents int      // events slow observers missed
}

// run is the state of one Fit or Resume call.
type run struct {
	s       *Supervised
	l       *Learner
	cfg     Config
	cfgJSON json.RawMessage
	ctx     context.Context
	out     *fanout
	log     *eventLog
	lock    *runLock // the run directory's ProcessFile, held until the run ends
	ck      Checkpointer
	dev     tensor.Device // the model's device: its random stream goes into checkpoints
	sys     *systemSampler
	start   time.Time
	resumed bool // a Resume, not a Fit

	comm    dist.Communicator // non-nil only with Size > 1
	buckets *buckets          // the gradient buckets of comm's all-reduce, built at the first step
	stopErr error             // with comm: the cancellation the ranks agreed on (see cancelErr)
	train   *data.DataLoader  // Train, or this rank's shard of it

	epoch   int         // epochs completed
	batch   int         // batches of epoch+1 trained on
	step    int         // optimizer steps taken
	loss    runningLoss // the training loss of the epoch so far
	vloss   runningLoss
	hist    history
	lastLog int // step of the last step event
	logErr  error
	warned  bool // a mode warning was logged
}

// history holds the metric values of the epochs completed.
type history struct {
	Train []Values `json:"train,omitempty"`
	Valid []Values `json:"valid,omitempty"`
}

// runningLoss is the size-weighted mean of batch losses, as metrics.Loss
// computes it, with sums a checkpoint can save and restore exactly.
type runningLoss struct{ sum, count float64 }

func (l *runningLoss) add(loss float64, n int) {
	l.sum += loss * float64(n)
	l.count += float64(n)
}

func (l *runningLoss) value() float64 {
	if l.count == 0 {
		return math.NaN()
	}
	return l.sum / l.count
}

// Fit trains l. It runs Epochs epochs over Train (each optimizer step in a
// tensor.Scope, after GradAccumulation batches), steps the schedule after
// each optimizer step, validates on Valid after each epoch (the model in
// nn.Eval mode, batches on a NoGrad view), asks Stop whether to go on and
// offers the Checkpoint strategy every step and epoch (see Checkpointer).
// Cancelling ctx stops the run after the current optimizer step (whose
// batches are all read first), or during validation: the strategy is then
// offered a final moment at that position (the default one writes it),
// and Fit returns a Result with Reason StopCancelled and a nil error.
// Resume continues such a run. Fit returns an error (and Reason
// StopFailed) for a missing loader or learner, a failed batch, a tensor
// error panicking in a step, a checkpoint that cannot be written or a run
// directory it cannot write. Other panics in a model's step (bugs)
// propagate, after the end event is written and the observers closed.
//
// With RunDir set, Fit replaces the files of an earlier run there:
// config.json, events.jsonl and, with a Checkpoints strategy, the
// checkpoints it wrote. It first takes the directory's ProcessFile, and
// fails with ErrRunDirInUse while another live run holds it.
func (s *Supervised) Fit(ctx context.Context, l *Learner) (Result, error) {
	ctx, unwatch := watchStopFile(ctx, s.stopFileDir(s.Config.RunDir))
	defer unwatch()
	r, err := s.newRun(ctx, l)
	if err != nil {
		return Result{Reason: StopFailed}, err
	}
	defer func() { r.lock.release() }() // after the end record, also when a panic goes on up
	if err := r.prepare(nil); err != nil {
		return Result{Reason: StopFailed}, err
	}
	return r.execute(nil)
}

// newRun checks s and l and fills in the defaults.
func (s *Supervised) newRun(ctx context.Context, l *Learner) (*run, error) {
	if s.Train == nil || l == nil || l.Model == nil || l.Optimizer == nil {
		return nil, errors.New("train: a run needs Train, a Learner, its Model and its Optimizer")
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
	r := &run{s: s, l: l, cfg: cfg, ctx: ctx, start: time.Now(), dev: modelDevice(l.Model), ck: s.Checkpoint, train: s.Train}
	if r.ck == nil && cfg.RunDir != "" {
		r.ck = NewCheckpoints()
	}
	if s.Comm != nil && s.Comm.Size() > 1 {
		if err := r.distribute(s.Comm); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// prepare readies the run directory and the checkpoint strategy: afresh
// for Fit, or, for Resume (res non-nil), continuing the run there.
func (r *run) prepare(res *resumed) error {
	var err error
	if r.cfgJSON, err = json.Marshal(r.cfg); err != nil {
		return fmt.Errorf("train: config: %w", err)
	}
	if r.cfg.RunDir != "" {
		// Before anything of an earlier run is replaced: a run still
		// writing there keeps its directory.
		if r.lock, err = lockRun(r.cfg.RunDir); err != nil {
			return err
		}
	}
	if c, ok := r.ck.(*Checkpoints); ok {
		if err := c.begin(r, r.resumed); err != nil {
			return err
		}
	}
	if r.cfg.RunDir != "" {
		if res == nil {
			r.log, err = openEventLog(r.cfg.RunDir, r.cfgJSON)
		} else {
			r.log, err = appendEventLog(r.cfg.RunDir, r.cfgJSON)
		}
		if err != nil {
			return err
		}
		if err := RegisterRun(r.cfg.RunDir); err != nil {
			r.logf("warning: %v", err) // the run goes on; workbenches may not list it
		}
	}
	return nil
}

// execute runs the loop between the first and the end event. res is the
// checkpoint a Resume continues from.
func (r *run) execute(res *resumed) (out Result, err error) {
	obs := r.s.Observers
	if r.comm != nil && r.comm.Rank() != 0 {
		obs = nil // rank 0 alone publishes
	}
	if hooked := r.applyHook(); hooked != nil {
		obs = append(slices.Clone(obs), hooked)
	}
	r.out = newFanout(obs)
	r.sys = newSystemSampler(r.dev)
	if res == nil || r.log != nil && r.log.fresh {
		r.emit(Event{Version: EventLogVersion, Kind: EventStart, Config: r.cfgJSON, Batches: r.train.Len(), WorldSize: r.worldSize()})
	}
	if res != nil {
		pos := r.position()
		r.emit(Event{Kind: EventResume, Epoch: r.epoch, Path: res.path, Position: &pos, Config: r.cfgJSON,
			Error: strings.Join(res.skipped, "; ")})
		r.logf("resuming from %s: epoch %d batch %d step %d", res.path, r.epoch, r.batch, r.step)
	}
	defer func() {
		// A panic that is not a *tensor.Error (a bug in a model's step)
		// goes on up with its stack, after the end event is logged and the
		// observers and the log are closed.
		if p := recover(); p != nil {
			r.emit(Event{Kind: EventEnd, Epoch: r.epoch, Reason: StopFailed, Error: fmt.Sprintf("panic: %v", p)})
			r.out.close()
			if r.log != nil {
				_ = r.log.close()
			}
			panic(p)
		}
	}()
	out = r.loop(res)
	if out.Reason == StopFailed {
		err = errors.New(out.Why)
	}
	end := Event{Kind: EventEnd, Epoch: out.Epochs, Reason: out.Reason}
	if out.Reason == StopFailed {
		end.Error = out.Why
	}
	r.emit(end)
	r.out.close()
	out.DroppedEvents = r.out.dropped
	if r.log != nil {
		if cerr := r.log.close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if r.logErr != nil && err == nil {
		err = r.logErr
	}
	return out, err
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

func (r *run) position() Position { return Position{Epoch: r.epoch, Batch: r.batch, Step: r.step} }

// result is the Result so far.
func (r *run) result(reason StopReason, why string) Result {
	return Result{Reason: reason, Why: why, Epochs: r.epoch, Steps: r.step,
		Train: slices.Clone(r.hist.Train), Valid: slices.Clone(r.hist.Valid)}
}

// moment offers the checkpoint strategy the run's position. When ctx is
// cancelled during a moment that was not final, the strategy is offered
// the same position again as final, since the run stops there.
func (r *run) moment(epochEnd, final bool, train, valid Values) error {
	if r.ck == nil {
		return nil
	}
	for {
		ctx := r.ctx
		if final {
			ctx = context.WithoutCancel(ctx)
		}
		m := &Moment{Position: r.position(), EpochEnd: epochEnd, Final: final, run: r, train: train, valid: valid}
		if err := r.ck.Checkpoint(ctx, m); err != nil {
			return fmt.Errorf("train: checkpoint at epoch %d batch %d step %d: %w", r.epoch, r.batch, r.step, err)
		}
		if final || r.cancelErr() == nil {
			return nil
		}
		final = true
	}
}

func (r *run) loop(res *resumed) Result {
	if r.comm != nil {
		if err := r.broadcastParams(); err != nil {
			return r.result(StopFailed, err.Error())
		}
	}
	if res != nil {
		if stop, why := r.replayStopRule(); stop {
			return r.result(StopEarly, why)
		}
	}
	for epoch := r.epoch + 1; epoch <= r.cfg.Epochs; epoch++ {
		train, stop, why := r.trainEpoch(epoch)
		if stop != "" {
			return r.result(stop, why)
		}
		r.emit(Event{Kind: EventEpoch, Epoch: epoch, Split: "train", Metrics: train.clone(), LR: r.l.Optimizer.LR(),
			System: r.sys.sample(true)})
		line := fmt.Sprintf("epoch %d/%d train %s", epoch, r.cfg.Epochs, train)
		var valid Values
		if r.s.Valid != nil {
			var reason StopReason
			valid, reason, why = r.validate(epoch)
			if reason == StopCancelled {
				if err := r.moment(false, true, nil, nil); err != nil {
					return r.result(StopFailed, err.Error())
				}
			}
			if reason != "" {
				return r.result(reason, why)
			}
			r.emit(Event{Kind: EventEpoch, Epoch: epoch, Split: "valid", Metrics: valid.clone()})
			line += " | valid " + valid.String()
		}
		r.epoch, r.batch = epoch, 0
		r.hist.Train = append(r.hist.Train, train)
		if r.s.Valid != nil {
			r.hist.Valid = append(r.hist.Valid, valid)
		}
		r.logf("%s (%.1fs)", line, time.Since(r.start).Seconds())
		stopEarly, why := false, ""
		if r.s.Stop != nil {
			if stopEarly, why = r.s.Stop.ShouldStop(epoch, train, valid); stopEarly {
				r.logf("stopping early: %s", why)
			}
		}
		final := stopEarly || epoch == r.cfg.Epochs || r.cancelErr() != nil
		if err := r.moment(true, final, train, valid); err != nil {
			return r.result(StopFailed, err.Error())
		}
		if stopEarly {
			return r.result(StopEarly, why)
		}
		if r.cancelErr() != nil {
			return r.result(StopCancelled, r.cancelErr().Error())
		}
	}
	return r.result(StopCompleted, "")
}

// modelDevice returns the plain device of model's first parameter or
// buffer, or the CPU for a model without any.
func modelDevice(model any) (dev tensor.Device) {
	defer func() {
		if recover() != nil {
			dev = tensor.CPU()
		}
	}()
	for _, list := range [][]nn.NamedParam{nn.Params(model), nn.Buffers(model)} {
		for _, np := range list {
			if np.Param != nil && np.Param.Tensor != nil {
				return np.Param.Device().Inner()
			}
		}
	}
	return tensor.CPU()
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

func snapshot(loss float64, ms []metrics.Metric) Values {
	v := Values{"loss": loss}
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

// trainEpoch runs epoch's training from batch r.batch (0 unless a resumed
// run continues inside the epoch). It returns the epoch's metric values,
// or a stop reason (StopCancelled or StopFailed) and its details; when it
// returns StopCancelled the final moment has been offered.
//
// The loader reads on a context detached from Fit's, so that a step whose
// batches are being read when ctx is cancelled still gets all of them
// (with GradAccumulation, a cut-short step would not be the step an
// uninterrupted run takes); ctx is checked between steps.
func (r *run) trainEpoch(epoch int) (Values, StopReason, string) {
	cfg := r.cfg
	if r.batch == 0 {
		r.loss = runningLoss{}
	}
	// After a resume inside the epoch the loss sums are the checkpoint's;
	// other metrics start empty and cover the batches from here on.
	metrics.ResetAll(r.s.Metrics...)
	if err := setMode(r.l.Model, true); err != nil && !r.warned {
		r.warned = true
		r.logf("warning: %v", err)
	}
	nb := r.train.Len()
	samples := 0 // training samples of this epoch so far, for step events
	it := r.train.IterFrom(context.WithoutCancel(r.ctx), epoch-1, r.batch)
	defer it.Close()
	cancelled := func() (Values, StopReason, string) {
		why := r.cancelErr().Error()
		if err := r.moment(false, true, nil, nil); err != nil {
			return nil, StopFailed, err.Error()
		}
		return nil, StopCancelled, why
	}
	for done := false; !done; {
		if r.cancelErr() != nil {
			return cancelled()
		}
		var reason StopReason
		var why string
		n := 0
		stepped := false // an optimizer step was taken
		err := tensor.Try(func() {
			tensor.Scope(func() {
				var total *tensor.Tensor
				var local runningLoss // this rank's share of the step, with Comm
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
					if r.comm != nil {
						local.add(loss.Item(), batchSize(bt.X))
					} else {
						r.loss.add(loss.Item(), batchSize(bt.X))
					}
					if err := update(r.s.Metrics, out, bt.Y); err != nil {
						reason, why = StopFailed, fmt.Sprintf("train: epoch %d batch %d: metrics: %v", epoch, r.batch+n, err)
						return
					}
					if total == nil {
						total = loss
					} else {
						total = total.Add(loss)
					}
					n++
				}
				if n > 1 {
					total = total.MulScalar(1 / float64(n))
				}
				weight := 1.0
				if r.comm != nil {
					var global float64
					var extra *data.Batch
					var err error
					total, weight, global, extra, err = r.syncStep(epoch, total, local)
					if extra != nil {
						batches = append(batches, extra)
					}
					if err != nil {
						reason, why = StopFailed, err.Error()
						return
					}
					done = global == 0 // every rank's shard is used up
					samples += int(global - local.count)
				}
				if total == nil {
					return
				}
				var grads *tensor.Gradients
				if r.comm != nil {
					red := r.startReduction(weight)
					func() {
						ok := false
						defer func() {
							if !ok { // a failed pass: the buckets queued still end
								red.abandon()
							}
						}()
						grads = total.BackwardNotify(red.b.params, red.final)
						ok = true
					}()
					defer grads.Release()
					if err := red.finish(); err != nil {
						reason, why = StopFailed, fmt.Sprintf("train: epoch %d step %d: %v", epoch, r.step+1, err)
						return
					}
				} else {
					grads = total.Backward()
					defer grads.Release()
				}
				r.clip(cfg.GradClip, grads)
				r.l.Optimizer.Step(r.l.Model, grads)
				if r.l.Scheduler != nil {
					r.l.Scheduler.Step()
				}
				r.step++
				r.batch += n
				stepped = true
			})
		})
		if err != nil {
			return nil, StopFailed, fmt.Sprintf("train: epoch %d step %d: %v", epoch, r.step+1, err)
		}
		if reason != "" {
			return nil, reason, why
		}
		if !stepped {
			continue
		}
		if r.step-r.lastLog >= cfg.LogEvery {
			r.lastLog = r.step
			vals, err := r.trainValues()
			if err != nil {
				return nil, StopFailed, fmt.Sprintf("train: epoch %d step %d: %v", epoch, r.step, err)
			}
			lr := r.l.Optimizer.LR()
			r.emit(Event{Kind: EventStep, Epoch: epoch, Split: "train", Metrics: vals, LR: lr, System: r.sys.sample(false),
				Batches: nb, Batch: r.batch, Samples: samples})
			r.logf("epoch %d/%d batch %d/%d step %d %s lr %.4g", epoch, cfg.Epochs, r.batch, nb, r.step, vals, lr)
		}
		if r.cancelErr() != nil {
			return cancelled()
		}
		// The step that ends the epoch is offered at the epoch's end,
		// after validation.
		if r.batch < nb {
			if err := r.moment(false, false, nil, nil); err != nil {
				return nil, StopFailed, err.Error()
			}
			if r.cancelErr() != nil { // the final moment was offered
				return nil, StopCancelled, r.cancelErr().Error()
			}
		}
	}
	if err := it.Err(); err != nil {
		return nil, StopFailed, fmt.Sprintf("train: epoch %d: %v", epoch, err)
	}
	vals, err := r.trainValues()
	if err != nil {
		return nil, StopFailed, fmt.Sprintf("train: epoch %d: %v", epoch, err)
	}
	return vals, "", ""
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
	r.vloss = runningLoss{}
	metrics.ResetAll(r.s.ValidMetrics...)
	if err := setMode(r.l.Model, false); err != nil && !r.warned {
		r.warned = true
		r.logf("warning: validating in training mode: %v", err)
	}
	defer func() { _ = setMode(r.l.Model, true) }()
	// With several ranks a cancellation takes effect only at a step they
	// agree on (cancelErr), so a rank's validation runs to its end.
	vctx := r.ctx
	if r.comm != nil {
		vctx = context.WithoutCancel(vctx)
	}
	it := r.s.Valid.Iter(vctx, epoch-1)
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
				r.vloss.add(loss.Item(), batchSize(x))
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
		if r.cancelErr() != nil {
			return nil, StopCancelled, r.cancelErr().Error()
		}
		return nil, StopFailed, fmt.Sprintf("train: validation after epoch %d: %v", epoch, err)
	}
	return snapshot(r.vloss.value(), r.s.ValidMetrics), "", ""
}

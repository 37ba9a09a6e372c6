package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// resumed says which checkpoint a Resume continues from.
type resumed struct {
	path    string
	skipped []string // corrupt checkpoints passed over, with their errors
}

// Resume continues a run from a checkpoint that Fit (or an earlier Resume)
// wrote, and trains on to Epochs as Fit would have: the model's weights,
// the optimizer's state, the schedule, the random stream of the model's
// device and the loader's position (epoch and batch) are restored, so that
// on the same device and data the rest of the run computes the same
// numbers as an uninterrupted run, bit for bit.
//
// dir is a checkpoint directory, or a run directory (or its checkpoints
// directory), whose last checkpoint is taken (the one its "last" file
// names, else the newest by step); when that one is corrupt
// (store.ErrCorrupt: a checksum mismatch, a missing or truncated file)
// Resume says so in a log line and the resume event and falls back to the
// next newest. A corrupt checkpoint named directly is an error naming the
// file.
//
// s and l must be built as for the run being resumed: the same kinds of
// model, optimizer and schedule, the same loaders (Epochs may be raised to
// train longer). The model is loaded strictly (nn.LoadStateDict: no
// missing or unexpected keys, the same shapes), the optimizer state must
// name only parameters of the model with their shapes, and a schedule
// state needs a Scheduler and the reverse; everything is loaded and
// checked before anything is assigned, so on any error the learner is
// left as it was and Resume returns the error with Reason StopFailed.
//
// With RunDir empty, a checkpoint inside <run>/checkpoints continues run
// <run>: Resume appends to its events.jsonl (a resume event, see the
// package documentation) and, unless s.Checkpoint says otherwise, keeps
// checkpointing there with the default strategy, taking over the
// checkpoints already there up to the one it resumes from (later ones,
// from a course the run no longer follows, are left out of the index and
// written again, or deleted by the next Fit). A Stop rule is first shown the metric values
// of the epochs before the checkpoint (after Reset, for a rule that has
// one), so that EarlyStopping's patience carries over; a run that had
// stopped early then stops at once.
//
// With a Comm of several ranks, every rank calls Resume with the same dir
// and reads the checkpoint itself (so dir must be visible to every rank:
// one machine, or a shared file system); the ranks check that they
// restored the same position and fail together, naming the rank, when one
// could not. A checkpoint written at an epoch's end resumes on any number
// of ranks (one process included), and a single process's on several;
// one written inside an epoch resumes only on as many ranks as wrote it,
// since its position counts the batches of one rank's shard. A schedule
// counts optimizer steps, so on another number of ranks (with the same
// per-rank BatchSize) the epochs left take another number of steps than
// the schedule was planned for. Of the training metrics of an epoch
// resumed inside, "loss" covers the whole epoch (its sums are in the
// checkpoint) and the others only the batches after the resume.
func (s *Supervised) Resume(ctx context.Context, dir string, l *Learner) (Result, error) {
	cands, runDir, findErr := findCheckpoints(dir)
	if findErr != nil && (s.Comm == nil || s.Comm.Size() < 2) {
		return Result{Reason: StopFailed}, findErr
	} // with several ranks, they first agree (agreeRestored)
	// The StopFile of the run directory the run writes, which may be the
	// one the checkpoint lies in.
	stopDir := s.Config.RunDir
	if stopDir == "" {
		stopDir = runDir
	}
	ctx, unwatch := watchStopFile(ctx, s.stopFileDir(stopDir))
	defer unwatch()
	r, err := s.newRun(ctx, l)
	if err != nil {
		return Result{Reason: StopFailed}, err
	}
	r.resumed = true
	defer func() { r.lock.release() }()
	if r.cfg.RunDir == "" && runDir != "" && (r.comm == nil || r.comm.Rank() == 0) {
		r.cfg.RunDir = runDir
		if r.ck == nil {
			r.ck = NewCheckpoints()
		}
	}
	res, err := (*resumed)(nil), findErr
	if err == nil {
		res, err = r.restore(cands)
	}
	if r.comm != nil {
		err = r.agreeRestored(err)
	}
	if err != nil {
		return Result{Reason: StopFailed}, err
	}
	if err := r.prepare(res); err != nil {
		return Result{Reason: StopFailed}, err
	}
	return r.execute(res)
}

// findCheckpoints returns the checkpoint directories to try for dir,
// and the run directory they belong to ("" when not inside one's
// checkpoints directory). For a run directory they are the checkpoint the
// "last" file names, then the others, newest (by step) first.
func findCheckpoints(dir string) (cands []string, runDir string, err error) {
	dir = filepath.Clean(dir)
	runOf := func(ckDir string) string {
		if filepath.Base(ckDir) == CheckpointsDir {
			return filepath.Dir(ckDir)
		}
		return ""
	}
	if isCheckpointDir(dir) {
		return []string{dir}, runOf(filepath.Dir(dir)), nil
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, "", fmt.Errorf("train: resume: %w", err)
	}
	ckDir := filepath.Join(dir, CheckpointsDir)
	if fi, err := os.Stat(ckDir); err != nil || !fi.IsDir() {
		ckDir = dir
	}
	entries, err := os.ReadDir(ckDir)
	if err != nil {
		return nil, "", fmt.Errorf("train: resume: %w", err)
	}
	type cand struct {
		name        string
		epoch, step int
	}
	var list []cand
	for _, e := range entries {
		if epoch, step, ok := parseCheckpointName(e.Name()); ok && e.IsDir() {
			list = append(list, cand{e.Name(), epoch, step})
		}
	}
	if len(list) == 0 {
		return nil, "", fmt.Errorf("train: resume: no checkpoint in %s", dir)
	}
	// The "last" file names the newest checkpoint of the run's current
	// course: after a Resume from an older checkpoint, newer ones from
	// before it may still lie about until they are written again.
	last := ""
	if b, err := os.ReadFile(filepath.Join(ckDir, LastCheckpointFile)); err == nil {
		last = strings.TrimSpace(string(b))
	}
	slices.SortFunc(list, func(a, b cand) int {
		switch {
		case a.name == last:
			return -1
		case b.name == last:
			return 1
		case a.step != b.step:
			return b.step - a.step
		}
		return b.epoch - a.epoch
	})
	for _, c := range list {
		cands = append(cands, filepath.Join(ckDir, c.name))
	}
	return cands, runOf(ckDir), nil
}

// restore loads the first loadable candidate into the learner and the
// run's state.
func (r *run) restore(cands []string) (*resumed, error) {
	res := &resumed{}
	for i, path := range cands {
		ck, err := store.LoadCheckpoint(path, r.dev)
		if err != nil {
			if errors.Is(err, store.ErrCorrupt) && i+1 < len(cands) {
				r.logf("train: resume: %v; falling back to %s", err, cands[i+1])
				res.skipped = append(res.skipped, err.Error())
				continue
			}
			return nil, fmt.Errorf("train: resume: %w", err)
		}
		err = r.apply(ck)
		ck.Release()
		if err != nil {
			return nil, fmt.Errorf("train: resume from %s: %w", path, err)
		}
		res.path = path
		return res, nil
	}
	return nil, errors.New("train: resume: no checkpoint") // not reached: cands is never empty
}

// apply checks a loaded checkpoint against the learner and the loaders,
// then assigns it: the optimizer's state first (it can be put back), then
// the model (nn.LoadStateDict loads all or nothing; on failure the
// optimizer's previous state is put back), then what cannot fail.
func (r *run) apply(ck *store.Checkpoint) (err error) {
	l := r.l
	var ls loopState
	if ck.Extra != nil {
		if err := json.Unmarshal(ck.Extra, &ls); err != nil {
			return fmt.Errorf("loop state: %w", err)
		}
	}
	if was, now := max(ls.WorldSize, 1), max(r.worldSize(), 1); was != now && ls.Batch > 0 {
		return fmt.Errorf("the checkpoint is %d batches into epoch %d of a run on %d ranks; inside an epoch it resumes only on %d ranks (a checkpoint at an epoch's end resumes on any number)",
			ls.Batch, ck.Epoch+1, was, was)
	}
	if nb := r.train.Len(); ls.Batch < 0 || ls.Batch > nb {
		return fmt.Errorf("the checkpoint is %d batches into epoch %d, but the Train loader has %d batches an epoch", ls.Batch, ck.Epoch+1, nb)
	}
	if ck.OptimizerJSON == nil {
		return fmt.Errorf("no optimizer state: %w", optim.ErrState)
	}
	var ost optim.State
	if err := json.Unmarshal(ck.OptimizerJSON, &ost); err != nil {
		return fmt.Errorf("optimizer state: %w", err)
	}
	ost.Tensors = ck.Optimizer
	if err := checkOptimizerState(l.Model, &ost); err != nil {
		return err
	}
	var sst optim.SchedulerState
	switch {
	case ck.Schedule != nil && l.Scheduler == nil:
		return fmt.Errorf("the checkpoint has a schedule's state but the Learner has no Scheduler: %w", optim.ErrState)
	case ck.Schedule == nil && l.Scheduler != nil:
		return fmt.Errorf("the Learner has a Scheduler but the checkpoint has no schedule state: %w", optim.ErrState)
	case ck.Schedule != nil:
		if err := json.Unmarshal(ck.Schedule, &sst); err != nil {
			return fmt.Errorf("schedule state: %w", err)
		}
		if sst.Step < 0 {
			return fmt.Errorf("schedule state: step %d: %w", sst.Step, optim.ErrState)
		}
	}
	terr := tensor.Try(func() {
		tensor.Scope(func() { // collects the views of the previous optimizer state
			prev, perr := l.Optimizer.State()
			if perr != nil {
				err = perr
				return
			}
			if err = l.Optimizer.LoadState(&ost); err != nil {
				return
			}
			if _, _, err = nn.LoadStateDict(l.Model, ck.Model); err != nil {
				if rerr := l.Optimizer.LoadState(prev); rerr != nil {
					err = fmt.Errorf("%w (and restoring the optimizer's previous state failed: %v)", err, rerr)
				}
			}
		})
	})
	if terr != nil {
		return terr
	}
	if err != nil {
		return err
	}
	if l.Scheduler != nil {
		if err := l.Scheduler.LoadState(sst); err != nil {
			return err // not reached: the step was checked
		}
	}
	r.dev.SetRNGState(ck.RNG.Seed, ck.RNG.Position)
	r.epoch, r.batch, r.step = ck.Epoch, ls.Batch, ck.Step
	r.loss = runningLoss{sum: ls.Loss["sum"], count: ls.Loss["count"]}
	r.lastLog = ls.LastLog
	r.hist = ls.History
	return nil
}

// checkOptimizerState checks that st names only parameters of model, with
// their shapes, so that a mismatch fails the Resume rather than the first
// step after it.
func checkOptimizerState(model any, st *optim.State) error {
	shapes := map[string][]int{}
	for _, np := range nn.Params(model) {
		shapes[np.Name] = np.Param.Shape()
	}
	var bad []string
	for name := range st.Steps {
		if _, ok := shapes[name]; !ok {
			bad = append(bad, fmt.Sprintf("%s is not a parameter of the model", name))
		}
	}
	for key, t := range st.Tensors {
		name, _, ok := optim.SplitStateKey(key)
		want, known := shapes[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("key %q is not <parameter>.<slot>", key))
		case !known:
			bad = append(bad, fmt.Sprintf("%s: %s is not a parameter of the model", key, name))
		case t != nil && !slices.Equal(t.Shape(), want):
			bad = append(bad, fmt.Sprintf("%s: shape %v, parameter has %v", key, t.Shape(), want))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("optimizer state does not fit the model: %s: %w", strings.Join(bad, "; "), optim.ErrState)
	}
	return nil
}

// replayStopRule shows the Stop rule the metric values of the epochs
// before the checkpoint, in order, after resetting a rule with a Reset
// method. It reports a stop when the rule asked to stop at the last of
// them, the epoch the checkpoint closes.
func (r *run) replayStopRule() (bool, string) {
	if r.s.Stop == nil || len(r.hist.Train) == 0 {
		return false, ""
	}
	if rs, ok := r.s.Stop.(interface{ Reset() }); ok {
		rs.Reset()
	}
	stop, why := false, ""
	for i, train := range r.hist.Train {
		var valid Values
		if i < len(r.hist.Valid) {
			valid = r.hist.Valid[i]
		}
		stop, why = r.s.Stop.ShouldStop(i+1, train, valid)
	}
	if stop && r.batch == 0 && len(r.hist.Train) == r.epoch {
		r.logf("stopping early: %s", why)
		return true, why
	}
	return false, ""
}

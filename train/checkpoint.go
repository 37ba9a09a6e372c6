package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// The files of a checkpoints directory (<RunDir>/checkpoints by default)
// besides the checkpoint directories themselves.
const (
	CheckpointsDir      = "checkpoints" // the default checkpoints directory's name, inside RunDir
	CheckpointIndexFile = "index.json"  // CheckpointIndex: every checkpoint kept, with its position and metrics
	LastCheckpointFile  = "last"        // the newest checkpoint's directory name and a newline
	BestCheckpointFile  = "best"        // the best checkpoint's (see Checkpoints.Keep) name and a newline
)

// Moment is a point of a run at which a checkpoint can be taken, handed to
// a Checkpointer. It is valid only during the Checkpoint call.
type Moment struct {
	Position Position
	EpochEnd bool // the moment closes an epoch: Train is the epoch's, Valid its validation
	Final    bool // the run stops after this moment: it completed, stopped early or was cancelled

	run          *run
	train, valid Values
}

// Train returns the training metric values: the whole epoch's at an
// epoch's end, else those of the epoch so far (nil before its first
// batch). After a Resume inside an epoch, "loss" covers the whole epoch
// so far and other metrics the batches since the resume.
func (m *Moment) Train() Values {
	if m.train == nil && m.run != nil && (m.EpochEnd || m.Position.Batch > 0) {
		m.train = snapshot(m.run.loss.value(), m.run.s.Metrics)
	}
	return m.train
}

// Valid returns the epoch's validation values at an epoch's end of a run
// with a Valid loader, else nil.
func (m *Moment) Valid() Values { return m.valid }

// RunDir returns the run directory (Config.RunDir, "" for none).
func (m *Moment) RunDir() string {
	if m.run == nil {
		return ""
	}
	return m.run.cfg.RunDir
}

// loopState is what a checkpoint's Extra holds: the loop's state beyond
// what store.Checkpoint has fields for.
type loopState struct {
	Batch    int     `json:"batch"`               // Position.Batch
	Loss     Values  `json:"loss"`                // "sum" and "count" of the epoch's running training loss
	LastLog  int     `json:"last_log"`            // the step of the last step event
	EpochEnd bool    `json:"epoch_end,omitempty"` // written at an epoch's end
	History  history `json:"history"`             // metric values of the epochs completed
	// WorldSize is the number of data-parallel ranks that wrote it (0 for
	// one process): Batch counts the batches of one rank's shard.
	WorldSize int `json:"world_size,omitempty"`
}

// Save writes a checkpoint of the run at this moment to the directory dir
// with store.SaveCheckpoint (atomically, replacing a checkpoint already
// there), then publishes an EventCheckpoint. The checkpoint holds the
// model's state dict (nn.StateDict), the optimizer's State (its tensors,
// and the rest as JSON), the scheduler's State as JSON (none without a
// Scheduler), the random stream of the model's device, Position.Epoch and
// Step as its Epoch and Step, the run's Config as JSON, the metrics (the
// training values as "train.<name>", the validation values as
// "valid.<name>") and, in Extra, the loop's own state: Position.Batch, the
// epoch's running loss sums, the metric values of every epoch completed
// and the step of the last step event. Resume reads it all back.
//
// It fails on a Moment not handed out by Fit, on an optimizer whose State
// fails, or on an I/O error (see store.SaveCheckpoint).
func (m *Moment) Save(dir string) (err error) {
	r := m.run
	if r == nil {
		return errors.New("train: Moment.Save: not a moment of a running Fit")
	}
	train, valid := m.Train(), m.Valid()
	ls := loopState{Batch: m.Position.Batch, Loss: Values{"sum": r.loss.sum, "count": r.loss.count},
		LastLog: r.lastLog, EpochEnd: m.EpochEnd, History: r.hist, WorldSize: r.worldSize()}
	extra, err := json.Marshal(ls)
	if err != nil {
		return fmt.Errorf("train: checkpoint %s: loop state: %w", dir, err)
	}
	seed, pos := r.dev.RNGState()
	ck := store.Checkpoint{
		RNG:     store.RNGState{Seed: seed, Position: pos},
		Epoch:   m.Position.Epoch,
		Step:    m.Position.Step,
		Config:  r.cfgJSON,
		Metrics: checkpointMetrics(train, valid),
		Extra:   extra,
	}
	if r.l.Scheduler != nil {
		if ck.Schedule, err = json.Marshal(r.l.Scheduler.State()); err != nil {
			return fmt.Errorf("train: checkpoint %s: schedule: %w", dir, err)
		}
	}
	terr := tensor.Try(func() {
		tensor.Scope(func() { // collects the state dict's and the optimizer state's views
			ck.Model = nn.StateDict(r.l.Model)
			st, serr := r.l.Optimizer.State()
			if serr != nil {
				err = fmt.Errorf("train: checkpoint %s: %w", dir, serr)
				return
			}
			ck.Optimizer = st.Tensors
			if ck.OptimizerJSON, err = json.Marshal(st); err != nil {
				err = fmt.Errorf("train: checkpoint %s: optimizer: %w", dir, err)
				return
			}
			err = store.SaveCheckpoint(dir, ck)
		})
	})
	if terr != nil {
		return fmt.Errorf("train: checkpoint %s: %w", dir, terr)
	}
	if err != nil {
		return err
	}
	p := m.Position
	r.emit(Event{Kind: EventCheckpoint, Epoch: p.Epoch, Path: dir, Position: &p, Metrics: ck.Metrics})
	return nil
}

// checkpointMetrics flattens the splits' values into one map with
// "train." and "valid." prefixes.
func checkpointMetrics(train, valid Values) Values {
	out := Values{}
	for k, v := range train {
		out["train."+k] = v
	}
	for k, v := range valid {
		out["valid."+k] = v
	}
	return out
}

// NoCheckpoints is a Checkpointer that writes nothing: set
// Supervised.Checkpoint to it to run with a RunDir but without
// checkpoints.
var NoCheckpoints Checkpointer = noCheckpoints{}

type noCheckpoints struct{}

func (noCheckpoints) Checkpoint(context.Context, *Moment) error { return nil }

// Checkpoints is the package's checkpoint strategy. It writes checkpoint
// directories (see Moment.Save) into Dir, named for their position:
// "epoch-0003-step-000450", the epoch being the one the position is in
// (the epoch just completed at an epoch's end, the epoch under way
// inside one) and the step the optimizer steps taken. It writes
//
//   - after every EveryEpochs epochs,
//   - after every EverySteps optimizer steps (inside an epoch too; a step
//     that ends an epoch is written at the epoch's end, after validation),
//   - and at the final moment of a run that completes, stops early or is
//     cancelled, so a cancelled run can always be resumed where it
//     stopped.
//
// After each write it applies Keep: a checkpoint stays when any Retention
// in Keep keeps it (nil Keep keeps all), and the newest always stays; the
// others are deleted. It maintains three files in Dir: index.json (a
// CheckpointIndex), "last" and "best" (each the directory name of that
// checkpoint and a newline; "best" by the first KeepBest in Keep, absent
// without one), each replaced atomically.
//
// At the start of a Fit, Checkpoints deletes the checkpoints an earlier
// run left in Dir (directories named as above holding a manifest.json,
// and the three files), as Fit replaces the earlier run's event log; at
// the start of a Resume it takes them over instead. A Checkpoints value
// serves one run at a time.
type Checkpoints struct {
	Dir         string      // where checkpoints go; "" means <RunDir>/checkpoints
	EveryEpochs int         // write after every N epochs; 0 means 1, negative never
	EverySteps  int         // write after every N optimizer steps; 0 never
	Keep        []Retention // which checkpoints stay; see above

	run  *run // the run begun for
	dir  string
	list []CheckpointInfo // oldest first
}

// NewCheckpoints returns the default strategy: a checkpoint after every
// epoch; keep the last two and the one with the best (lowest) validation
// loss, or training loss without validation.
func NewCheckpoints() *Checkpoints {
	return &Checkpoints{Keep: []Retention{KeepLast{N: 2}, KeepBest{Metric: "loss"}}}
}

// CheckpointInfo describes one checkpoint in a CheckpointIndex.
type CheckpointInfo struct {
	Name     string    `json:"name"` // the directory's name in the checkpoints directory
	Position Position  `json:"position"`
	EpochEnd bool      `json:"epoch_end,omitempty"` // written at an epoch's end: Train and Valid are the epoch's
	Train    Values    `json:"train,omitempty"`     // training values (the epoch so far, inside an epoch)
	Valid    Values    `json:"valid,omitempty"`     // validation values, at an epoch's end
	Time     time.Time `json:"time"`
}

// CheckpointIndex is the content of a checkpoints directory's index.json:
// the checkpoints kept, oldest first, and the names of the newest and the
// best.
type CheckpointIndex struct {
	Last        string           `json:"last,omitempty"`
	Best        string           `json:"best,omitempty"`
	Checkpoints []CheckpointInfo `json:"checkpoints"`
}

// ReadCheckpointIndex reads the index.json of dir, a run directory or its
// checkpoints directory. It returns the file's error (os.ErrNotExist when
// the run wrote no checkpoint) or a JSON error.
func ReadCheckpointIndex(dir string) (*CheckpointIndex, error) {
	path := filepath.Join(dir, CheckpointsDir, CheckpointIndexFile)
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(dir, CheckpointIndexFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("train: checkpoint index: %w", err)
	}
	var idx CheckpointIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("train: checkpoint index %s: %w", path, err)
	}
	return &idx, nil
}

// Retention decides which checkpoints a Checkpoints strategy keeps.
type Retention interface {
	// Keep reports, for each checkpoint of list (oldest first), whether
	// this policy keeps it.
	Keep(list []CheckpointInfo) []bool
}

// KeepLast keeps the N newest checkpoints (N ≤ 0 means 1).
type KeepLast struct {
	N int
}

// Keep implements Retention.
func (k KeepLast) Keep(list []CheckpointInfo) []bool {
	keep := make([]bool, len(list))
	for i := max(0, len(list)-max(k.N, 1)); i < len(list); i++ {
		keep[i] = true
	}
	return keep
}

// KeepBest keeps the N best checkpoints by a metric (N ≤ 0 means 1),
// among those written at an epoch's end (the values inside an epoch are
// running values of part of it, not comparable). Split "" takes the
// validation value where the checkpoint has one and the training value
// otherwise; checkpoints without the metric, or with NaN, are not ranked.
// Ties go to the older checkpoint.
type KeepBest struct {
	Metric   string // e.g. "loss", "accuracy"
	Split    string // "valid", "train" or "" (see above)
	Maximize bool   // higher is better (accuracy); default lower (loss)
	N        int
}

// Keep implements Retention.
func (k KeepBest) Keep(list []CheckpointInfo) []bool {
	keep := make([]bool, len(list))
	for i, j := range k.rank(list) {
		if i >= max(k.N, 1) {
			break
		}
		keep[j] = true
	}
	return keep
}

// value returns the checkpoint's value of the metric.
func (k KeepBest) value(c CheckpointInfo) (float64, bool) {
	if !c.EpochEnd {
		return 0, false
	}
	var v float64
	var ok bool
	switch k.Split {
	case "valid":
		v, ok = c.Valid[k.Metric]
	case "train":
		v, ok = c.Train[k.Metric]
	default:
		if v, ok = c.Valid[k.Metric]; !ok {
			v, ok = c.Train[k.Metric]
		}
	}
	return v, ok && !math.IsNaN(v)
}

// rank returns the indices of the ranked checkpoints of list, best first.
func (k KeepBest) rank(list []CheckpointInfo) []int {
	var idx []int
	for i, c := range list {
		if _, ok := k.value(c); ok {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		va, _ := k.value(list[a])
		vb, _ := k.value(list[b])
		if k.Maximize {
			va, vb = vb, va
		}
		switch {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return 0
	})
	return idx
}

// checkpointName names the checkpoint directory of a position.
func checkpointName(p Position) string {
	epoch := p.Epoch
	if p.Batch > 0 {
		epoch++
	}
	return fmt.Sprintf("epoch-%04d-step-%06d", epoch, p.Step)
}

// parseCheckpointName returns the epoch and step of a name checkpointName
// wrote; ok is false for any other name.
func parseCheckpointName(name string) (epoch, step int, ok bool) {
	if _, err := fmt.Sscanf(name, "epoch-%d-step-%d", &epoch, &step); err != nil || epoch < 0 || step < 0 {
		return 0, 0, false
	}
	return epoch, step, fmt.Sprintf("epoch-%04d-step-%06d", epoch, step) == name
}

// isCheckpointDir reports whether dir holds a checkpoint's manifest.
func isCheckpointDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "manifest.json"))
	return err == nil && fi.Mode().IsRegular()
}

// begin readies c for run r: resolves the directory, then deletes an
// earlier run's checkpoints (a fresh run) or takes them over (a resumed
// one).
func (c *Checkpoints) begin(r *run, resume bool) error {
	dir := c.Dir
	if dir == "" {
		if r.cfg.RunDir == "" {
			return errors.New("train: Checkpoints needs Dir or Config.RunDir")
		}
		dir = filepath.Join(r.cfg.RunDir, CheckpointsDir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: checkpoints: %w", err)
	}
	c.run, c.dir, c.list = r, dir, nil
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("train: checkpoints: %w", err)
	}
	if !resume {
		for _, e := range entries {
			name := e.Name()
			_, _, ours := parseCheckpointName(name)
			if hidden, ok := strings.CutPrefix(name, "."); ok && (strings.Contains(hidden, ".tmp-") || strings.Contains(hidden, ".old-")) {
				_, _, ours = parseCheckpointName(hidden[:strings.IndexByte(hidden, '.')])
			} else if ours {
				ours = isCheckpointDir(filepath.Join(dir, name))
			}
			if ours {
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					return fmt.Errorf("train: checkpoints of an earlier run: %w", err)
				}
			}
		}
		for _, f := range []string{CheckpointIndexFile, LastCheckpointFile, BestCheckpointFile} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("train: checkpoints of an earlier run: %w", err)
			}
		}
		return nil
	}
	// Resumed: the index's entries whose directories exist, plus
	// directories the index misses (written just before a crash), up to
	// the step resumed from: later ones belong to a course the run no
	// longer follows (it resumed from an older checkpoint, or passed over
	// a corrupt one) and are written again as the run gets there.
	if idx, err := ReadCheckpointIndex(dir); err == nil {
		for _, ci := range idx.Checkpoints {
			if _, _, ok := parseCheckpointName(ci.Name); ok && ci.Position.Step <= r.step && isCheckpointDir(filepath.Join(dir, ci.Name)) {
				c.list = append(c.list, ci)
			}
		}
	}
	for _, e := range entries {
		epoch, step, ok := parseCheckpointName(e.Name())
		if !ok || step > r.step || !isCheckpointDir(filepath.Join(dir, e.Name())) ||
			slices.ContainsFunc(c.list, func(ci CheckpointInfo) bool { return ci.Name == e.Name() }) {
			continue
		}
		// The name does not say whether the epoch was complete; such a
		// checkpoint is never ranked by KeepBest (EpochEnd is false).
		c.list = append(c.list, CheckpointInfo{Name: e.Name(), Position: Position{Epoch: epoch, Step: step}})
	}
	sortCheckpoints(c.list)
	return nil
}

// sortCheckpoints orders list oldest first: by step, then epoch, then batch.
func sortCheckpoints(list []CheckpointInfo) {
	slices.SortStableFunc(list, func(a, b CheckpointInfo) int {
		if d := a.Position.Step - b.Position.Step; d != 0 {
			return d
		}
		if d := a.Position.Epoch - b.Position.Epoch; d != 0 {
			return d
		}
		return a.Position.Batch - b.Position.Batch
	})
}

// due reports whether the policy writes at m.
func (c *Checkpoints) due(m *Moment) bool {
	if m.Final {
		return true
	}
	if c.EverySteps > 0 && m.Position.Step%c.EverySteps == 0 && m.Position.Step > 0 {
		return true
	}
	every := c.EveryEpochs
	if every == 0 {
		every = 1
	}
	return m.EpochEnd && every > 0 && m.Position.Epoch%every == 0
}

// Checkpoint implements Checkpointer: it writes a checkpoint when the
// policy says so and one at this position is not already there, then
// deletes those Keep does not keep and updates the index and pointers.
func (c *Checkpoints) Checkpoint(ctx context.Context, m *Moment) error {
	if m == nil || m.run == nil {
		return errors.New("train: Checkpoints.Checkpoint: not a moment of a running Fit")
	}
	if c.run != m.run {
		if err := c.begin(m.run, m.run.resumed); err != nil {
			return err
		}
	}
	if !c.due(m) || slices.ContainsFunc(c.list, func(ci CheckpointInfo) bool { return ci.Position == m.Position }) {
		return nil
	}
	name := checkpointName(m.Position)
	if err := m.Save(filepath.Join(c.dir, name)); err != nil {
		return err
	}
	c.list = slices.DeleteFunc(c.list, func(ci CheckpointInfo) bool { return ci.Name == name })
	c.list = append(c.list, CheckpointInfo{Name: name, Position: m.Position, EpochEnd: m.EpochEnd,
		Train: m.Train(), Valid: m.Valid(), Time: time.Now().UTC()})
	sortCheckpoints(c.list)
	return c.prune(name)
}

// prune writes the index and the pointer files listing the checkpoints
// some Retention keeps (and newest), then deletes the others: a crash in
// between leaves directories the next Fit deletes, never a pointer to a
// deleted checkpoint.
func (c *Checkpoints) prune(newest string) error {
	keep := make([]bool, len(c.list))
	if len(c.Keep) == 0 {
		for i := range keep {
			keep[i] = true
		}
	}
	for _, rt := range c.Keep {
		if rt == nil {
			continue
		}
		for i, k := range rt.Keep(slices.Clone(c.list)) {
			if i < len(keep) && k {
				keep[i] = true
			}
		}
	}
	var kept, dropped []CheckpointInfo
	for i, ci := range c.list {
		if keep[i] || ci.Name == newest {
			kept = append(kept, ci)
		} else {
			dropped = append(dropped, ci)
		}
	}
	c.list = kept
	idx := CheckpointIndex{Last: newest, Checkpoints: c.list}
	for _, rt := range c.Keep {
		if kb, ok := rt.(KeepBest); ok {
			if r := kb.rank(c.list); len(r) > 0 {
				idx.Best = c.list[r[0]].Name
			}
			break
		}
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("train: checkpoint index: %w", err)
	}
	if err := writeAtomic(filepath.Join(c.dir, CheckpointIndexFile), append(b, '\n')); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(c.dir, LastCheckpointFile), []byte(newest+"\n")); err != nil {
		return err
	}
	bestPath := filepath.Join(c.dir, BestCheckpointFile)
	if idx.Best != "" {
		err = writeAtomic(bestPath, []byte(idx.Best+"\n"))
	} else if rerr := os.Remove(bestPath); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("train: checkpoints: %w", err)
	}
	for _, ci := range dropped {
		// A checkpoint that cannot be deleted is not worth ending the run.
		if err := os.RemoveAll(filepath.Join(c.dir, ci.Name)); err != nil {
			c.run.logf("warning: could not delete an old checkpoint: %v", err)
		}
	}
	return nil
}

// writeAtomic replaces path with data: written to a temporary sibling,
// synced, then renamed over it.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

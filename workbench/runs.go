package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/train"
)

// eventsFile is the event log a run directory holds.
const eventsFile = "events.jsonl"

// rescanEvery is how often the run directories and the run registry are
// scanned besides the file-system notifications (which can be lost, or
// unsupported), and the processes of running runs checked: a killed
// process writes nothing that would tell.
const rescanEvery = 2 * time.Second

// pollEvery is how often the logs of runs that have not ended are read
// besides the file-system notifications, so that a run's status follows
// its log within a second even where those are lost.
const pollEvery = 500 * time.Millisecond

// runLog is one followed run: the records of its event log so far.
type runLog struct {
	dir  string
	real string // dir with its symbolic links resolved: the same run under two names is one
	// registered: found through the run registry, outside the followed
	// directories
	registered bool
	records    []json.RawMessage
	offset     int64  // bytes of the log consumed
	partial    []byte // a last line without its newline yet (being written)
	size       int64
	mod        time.Time
	ended      bool            // the log has an end record after its last start or resume record
	live       *train.Liveness // the process of a running run, as last checked; nil before
	state      runState        // what the records so far say, for runs.list
}

// runState is what a run's records say about it, kept up to date as they
// are read so that runs.list costs nothing per record.
type runState struct {
	status    string // "running", or the end record's reason
	started   time.Time
	ended     time.Time
	epochs    int
	step      int
	worldSize int
	err       string
}

// apply updates the state with one record and returns its kind.
func (st *runState) apply(rec json.RawMessage) train.EventKind {
	var e struct {
		Kind   train.EventKind `json:"kind"`
		Time   time.Time       `json:"time"`
		Epoch  int             `json:"epoch"`
		Step   int             `json:"step"`
		Reason string          `json:"reason"`
		Error  string          `json:"error"`
		Ranks  int             `json:"world_size"`
	}
	if json.Unmarshal(rec, &e) != nil {
		return ""
	}
	switch e.Kind {
	case train.EventStart:
		st.status, st.started, st.worldSize = "running", e.Time, e.Ranks
		st.ended, st.err = time.Time{}, ""
	case train.EventResume:
		st.status, st.ended, st.err = "running", time.Time{}, ""
	case train.EventEnd:
		st.status, st.ended, st.err = string(e.Reason), e.Time, e.Error
		if st.status == "" {
			st.status = "ended"
		}
	}
	if e.Step > 0 {
		st.step = e.Step
	}
	if e.Kind == train.EventEpoch || e.Kind == train.EventEnd || e.Kind == train.EventCheckpoint {
		st.epochs = e.Epoch
	}
	return e.Kind
}

// runFollower follows the event logs of every run in its directories and
// of every run in the run registry (train.RegisteredRuns), wherever it is.
type runFollower struct {
	dirs     []string
	registry string // the run registry's directory; "" when it is off
	publish  func(string, any)
	mu       sync.Mutex
	runs     map[string]*runLog
	done     chan struct{}
	checker  train.LivenessChecker // judges the processes of running runs
}

// newRunFollower follows the runs in dirs and, unless registry is "", the
// runs of the run registry (its directory, train.RegistryDir; the entries
// are read with train.RegisteredRuns, which reads the same environment).
func newRunFollower(ctx context.Context, dirs []string, registry string, publish func(string, any)) *runFollower {
	f := &runFollower{registry: registry, publish: publish, runs: map[string]*runLog{}, done: make(chan struct{})}
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			f.dirs = append(f.dirs, abs)
		}
	}
	if registry != "" {
		// Created now so that it can be watched: the first run a notebook
		// registers then shows at once.
		os.MkdirAll(registry, 0o755)
	}
	f.scan()
	go f.follow(ctx)
	return f
}

// wait blocks until the follower has stopped (its context ended).
func (f *runFollower) wait() { <-f.done }

// follow rescans on file-system events and on a timer until ctx ends.
func (f *runFollower) follow(ctx context.Context) {
	defer close(f.done)
	w, err := fsnotify.NewWatcher()
	var events chan fsnotify.Event
	if err == nil {
		defer w.Close()
		events = w.Events
		go func() {
			for range w.Errors { // dropped events are caught by the rescan
			}
		}()
	}
	watched := map[string]bool{}
	watch := func() {
		if w == nil {
			return
		}
		f.mu.Lock()
		dirs := append([]string(nil), f.dirs...)
		if f.registry != "" {
			dirs = append(dirs, f.registry)
		}
		for d := range f.runs {
			dirs = append(dirs, d)
		}
		f.mu.Unlock()
		for _, d := range dirs {
			if !watched[d] && w.Add(d) == nil {
				watched[d] = true
			}
		}
	}
	watch()
	tick := time.NewTicker(rescanEvery)
	defer tick.Stop()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			if f.readUnended() {
				f.publish("runs.changed", map[string]any{})
			}
		case ev := <-events:
			if filepath.Base(ev.Name) == train.ProcessFile {
				continue // a heartbeat: liveness is checked on the timer
			}
			if filepath.Base(ev.Name) == eventsFile {
				f.mu.Lock()
				r := f.runs[filepath.Dir(ev.Name)]
				f.mu.Unlock()
				if r != nil {
					if f.read(r) { // a new run replaced the log
						f.publish("runs.changed", map[string]any{})
					}
					continue
				}
			}
			f.scan()
			watch()
		case <-tick.C:
			f.scan()
			watch()
		}
	}
}

// scan finds runs (directories holding an events.jsonl: a followed
// directory itself or its subdirectories, and the registry's runs) and
// reads what their logs added. Runs whose log is gone (the directory was
// deleted) are dropped; a registered run already followed under another
// name (a symbolic link) is not followed twice.
func (f *runFollower) scan() {
	var found []string
	for _, d := range f.dirs {
		if isRun(d) {
			found = append(found, d)
			continue
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			// A link to a run directory elsewhere counts as one.
			if sub := filepath.Join(d, e.Name()); (e.IsDir() || e.Type()&fs.ModeSymlink != 0) && isRun(sub) {
				found = append(found, sub)
			}
		}
	}
	var registered []string
	if f.registry != "" {
		// Entries whose directory is gone are skipped (and removed) by
		// RegisteredRuns; an unreadable registry lists none.
		entries, _ := train.RegisteredRuns()
		for _, e := range entries {
			registered = append(registered, filepath.Clean(e.Dir))
		}
	}
	changed := false
	var all []*runLog
	f.mu.Lock()
	known := map[string]bool{} // the resolved directories of the runs found
	kept := map[string]bool{}  // the runs found, by the name they are followed under
	add := func(d string, registered bool) {
		r, ok := f.runs[d]
		if !ok {
			real := resolve(d)
			if registered && known[real] {
				return // a run of a followed directory, by another name
			}
			r = &runLog{dir: d, real: real, registered: registered}
			f.runs[d] = r
			changed = true
		}
		if known[r.real] {
			return
		}
		if !registered {
			r.registered = false // in a followed directory after all
		}
		known[r.real], kept[d] = true, true
		all = append(all, r)
	}
	for _, d := range found {
		add(d, false)
	}
	var gone []string // runs not found this time, to check
	for d := range f.runs {
		if !kept[d] {
			gone = append(gone, d)
		}
	}
	f.mu.Unlock()
	// Registered runs are added after the folders' (a run in a followed
	// folder is listed under that name); a run not found again is dropped
	// when its log is gone or another name of it is followed.
	var regRuns []string
	for _, d := range registered {
		if isRun(d) {
			regRuns = append(regRuns, d)
		}
	}
	var deleted []string
	for _, d := range gone {
		if !isRun(d) {
			deleted = append(deleted, d)
		}
	}
	f.mu.Lock()
	for _, d := range regRuns {
		add(d, true)
	}
	for _, d := range deleted {
		if !kept[d] {
			delete(f.runs, d)
			changed = true
		}
	}
	for _, d := range gone {
		if r, ok := f.runs[d]; ok && !kept[d] && known[r.real] {
			delete(f.runs, d) // followed under another name
			changed = true
		}
	}
	f.mu.Unlock()
	for _, r := range all {
		if f.read(r) {
			changed = true
		}
	}
	if f.checkLiveness() {
		changed = true
	}
	if changed {
		f.publish("runs.changed", map[string]any{})
	}
}

func isRun(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, eventsFile))
	return err == nil && st.Mode().IsRegular()
}

// resolve returns dir with its symbolic links resolved, or dir itself when
// that fails.
func resolve(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}

// readUnended reads what the logs of runs that have not ended gained,
// publishing their new records; it reports whether one started over.
func (f *runFollower) readUnended() (restarted bool) {
	var open []*runLog
	f.mu.Lock()
	for _, r := range f.runs {
		if !r.ended {
			open = append(open, r)
		}
	}
	f.mu.Unlock()
	for _, r := range open {
		if f.read(r) {
			restarted = true
		}
	}
	return restarted
}

// read consumes what r's log gained since the last read, publishing each
// new record; it reports whether the run started over (its log was
// replaced by a new run's).
func (f *runFollower) read(r *runLog) (restarted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := filepath.Join(r.dir, eventsFile)
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	if st.Size() < r.offset { // a new run replaced the log
		r.records, r.offset, r.partial = nil, 0, nil
		r.ended, r.live, r.state = false, nil, runState{}
		restarted = true
	}
	r.size, r.mod = st.Size(), st.ModTime()
	if st.Size() == r.offset {
		return restarted
	}
	file, err := os.Open(path)
	if err != nil {
		return restarted
	}
	defer file.Close()
	if _, err := file.Seek(r.offset, io.SeekStart); err != nil {
		return restarted
	}
	b, err := io.ReadAll(io.LimitReader(file, 64<<20))
	if err != nil {
		return restarted
	}
	r.offset += int64(len(b))
	b = append(r.partial, b...)
	r.partial = nil
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.partial = append([]byte(nil), b...)
			break
		}
		line := bytes.TrimSpace(b[:i])
		b = b[i+1:]
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			// a damaged line (a crash mid-write): shown as an error record
			line, _ = json.Marshal(map[string]any{"kind": "damaged", "error": "unreadable record: " + truncate(string(line), 120)})
		}
		rec := json.RawMessage(append([]byte(nil), line...))
		r.records = append(r.records, rec)
		switch r.state.apply(rec) {
		case train.EventStart, train.EventResume:
			r.ended = false
		case train.EventEnd:
			r.ended, r.live = true, nil
		}
		f.publish("run.update", map[string]any{"dir": r.dir, "index": len(r.records) - 1, "record": rec})
	}
	return restarted
}

// checkLiveness judges the process of every run whose log says it runs,
// and reports whether one's state changed (a process died, or a stale run
// came back to life).
func (f *runFollower) checkLiveness() (changed bool) {
	type check struct {
		r   *runLog
		mod time.Time
	}
	var checks []check
	f.mu.Lock()
	for _, r := range f.runs {
		if !r.ended {
			checks = append(checks, check{r, r.mod})
		}
	}
	f.mu.Unlock()
	for _, c := range checks {
		if f.judge(c.r, c.mod) {
			changed = true
		}
	}
	return changed
}

// judge checks the process of r, whose log was last modified at mod, and
// reports whether its state changed.
func (f *runFollower) judge(r *runLog, mod time.Time) (changed bool) {
	l := f.checker.CheckRunning(r.dir, mod) // reads files: outside f.mu
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.ended {
		return false // it ended meanwhile
	}
	before := train.LivenessRunning
	if r.live != nil {
		before = r.live.State
	}
	r.live = &l
	return l.State != before
}

// summary describes a run for runs.list: status is the log's (running, or
// an end record's reason) unless the process of a running run was found
// dead, when it is "killed" or "stale" and why says how that was judged
// (see train.RunLiveness); pid, host and heartbeat describe the process of
// a running run when its ProcessFile tells (rank 0's, in a data-parallel
// run, whose world_size, the number of ranks, its start record gives);
// registered marks a run found through the run registry rather than in a
// followed directory.
func (r *runLog) summary() map[string]any {
	st := r.state
	s := map[string]any{"dir": r.dir, "name": filepath.Base(r.dir), "status": "running", "epochs": st.epochs, "step": st.step,
		"records": len(r.records)}
	if st.status != "" {
		s["status"] = st.status
	}
	if !st.started.IsZero() {
		s["started"] = st.started
	}
	if !st.ended.IsZero() {
		s["ended"] = st.ended
	}
	if st.err != "" {
		s["error"] = st.err
	}
	if st.worldSize > 1 {
		s["world_size"] = st.worldSize
	}
	if r.registered {
		s["registered"] = true
	}
	if s["status"] == "running" && r.live != nil {
		if r.live.State != train.LivenessRunning {
			s["status"], s["why"] = string(r.live.State), r.live.Why
		}
		if r.live.PID != 0 {
			s["pid"], s["host"] = r.live.PID, r.live.Host
		}
		if !r.live.Heartbeat.IsZero() {
			s["heartbeat"] = r.live.Heartbeat
		}
	}
	return s
}

// lookup finds a followed run by its directory.
func (f *runFollower) lookup(dir string) (*runLog, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	r, ok := f.runs[abs]
	f.mu.Unlock()
	if !ok {
		f.scan()
		f.mu.Lock()
		r, ok = f.runs[abs]
		f.mu.Unlock()
	}
	if !ok {
		return nil, fmt.Errorf("%s is not a run the workbench follows (%s)", dir, f.watching())
	}
	return r, nil
}

// watching says where the follower finds runs.
func (f *runFollower) watching() string {
	s := "runs are followed under " + strings.Join(f.dirs, ", ")
	if f.registry != "" {
		s += " and wherever the run registry " + f.registry + " lists them"
	}
	return s
}

// within reports whether path lies under one of the followed directories
// or in a followed run's directory (one from the registry).
func (f *runFollower) within(path string) bool {
	under := func(d string) bool {
		rel, err := filepath.Rel(d, path)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	for _, d := range f.dirs {
		if under(d) {
			return true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := range f.runs {
		if under(d) {
			return true
		}
	}
	return false
}

func (s *Server) runMethods() map[string]method {
	f := s.runs
	type dirParams struct {
		Dir string `json:"dir"`
	}
	return map[string]method{
		"runs.list": func(context.Context, json.RawMessage) (any, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			list := []map[string]any{}
			for _, r := range f.runs {
				list = append(list, r.summary())
			}
			sort.Slice(list, func(i, j int) bool { return list[i]["dir"].(string) < list[j]["dir"].(string) })
			return list, nil
		},
		"runs.snapshot": func(_ context.Context, params json.RawMessage) (any, error) {
			var p dirParams
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			r, err := f.lookup(p.Dir)
			if err != nil {
				return nil, err
			}
			// Read the log now: a client asks for a snapshot when it learns
			// of a run (often from the run's own start event), which may be
			// before the file-system event that would have read it.
			if f.read(r) {
				f.publish("runs.changed", map[string]any{})
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			recs := append([]json.RawMessage{}, r.records...)
			return map[string]any{"dir": r.dir, "records": recs, "next": len(recs), "summary": r.summary()}, nil
		},
		"runs.stop": func(_ context.Context, params json.RawMessage) (any, error) {
			var p dirParams
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			r, err := f.lookup(p.Dir)
			if err != nil {
				return nil, err
			}
			f.read(r)
			f.mu.Lock()
			running, mod := !r.ended, r.mod
			f.mu.Unlock()
			if running && f.judge(r, mod) { // judged now, not as of the last tick
				f.publish("runs.changed", map[string]any{})
			}
			f.mu.Lock()
			sum := r.summary()
			f.mu.Unlock()
			status := sum["status"]
			if status == string(train.LivenessKilled) || status == string(train.LivenessStale) {
				// Nobody would read a STOP file.
				return nil, fmt.Errorf("run %s is not running: %v", r.dir, sum["why"])
			}
			if status != "running" {
				// A STOP file would wait there for nothing (a new run removes it).
				return nil, fmt.Errorf("%s is not running (%v)", r.dir, status)
			}
			if err := os.WriteFile(filepath.Join(r.dir, train.StopFile), []byte("stopped from the workbench\n"), 0o644); err != nil {
				return nil, err
			}
			return map[string]any{}, nil
		},
		"checkpoints.list": func(_ context.Context, params json.RawMessage) (any, error) {
			var p dirParams
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			r, err := f.lookup(p.Dir)
			if err != nil {
				return nil, err
			}
			return listCheckpoints(r.dir), nil
		},
		"checkpoints.export": func(_ context.Context, params json.RawMessage) (any, error) {
			var p exportRequest
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			return s.exportCheckpoint(p)
		},
	}
}

// listCheckpoints lists a run's checkpoints, newest last, each verified
// (a damaged one is listed with its error instead of failing the list).
func listCheckpoints(runDir string) []map[string]any {
	list := []map[string]any{}
	ckDir := filepath.Join(runDir, train.CheckpointsDir)
	idx, idxErr := train.ReadCheckpointIndex(runDir)
	var names []string
	info := map[string]train.CheckpointInfo{}
	if idxErr == nil {
		for _, c := range idx.Checkpoints {
			names = append(names, c.Name)
			info[c.Name] = c
		}
	} else if entries, err := os.ReadDir(ckDir); err == nil {
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
	}
	for _, name := range names {
		path := filepath.Join(ckDir, name)
		entry := map[string]any{"path": path, "name": name}
		checkpointGraph(runDir, entry)
		if c, ok := info[name]; ok {
			metrics := map[string]float64{}
			for k, v := range c.Train {
				metrics["train."+k] = v
			}
			for k, v := range c.Valid {
				metrics["valid."+k] = v
			}
			entry["epoch"], entry["step"], entry["metrics"] = c.Position.Epoch, c.Position.Step, metrics
			if idx.Best == name {
				entry["best"] = true
			}
		}
		rd, err := store.OpenCheckpoint(path)
		if err != nil {
			entry["error"] = err.Error()
		} else {
			if _, ok := entry["epoch"]; !ok {
				entry["epoch"], entry["step"], entry["metrics"] = rd.Info.Epoch, rd.Info.Step, rd.Info.Metrics
			}
			rd.Close()
		}
		list = append(list, entry)
	}
	return list
}

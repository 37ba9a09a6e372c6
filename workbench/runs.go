package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// rescanEvery is how often the run directories are scanned besides the
// file-system notifications (which can be lost, or unsupported), and the
// processes of running runs checked: a killed process writes nothing that
// would tell.
const rescanEvery = 2 * time.Second

// runLog is one followed run: the records of its event log so far.
type runLog struct {
	dir     string
	records []json.RawMessage
	offset  int64  // bytes of the log consumed
	partial []byte // a last line without its newline yet (being written)
	size    int64
	mod     time.Time
	ended   bool            // the log has an end record after its last start or resume record
	live    *train.Liveness // the process of a running run, as last checked; nil before
}

// runFollower follows the event logs of every run in its directories.
type runFollower struct {
	dirs    []string
	publish func(string, any)
	mu      sync.Mutex
	runs    map[string]*runLog
	done    chan struct{}
	checker train.LivenessChecker // judges the processes of running runs
}

func newRunFollower(ctx context.Context, dirs []string, publish func(string, any)) *runFollower {
	f := &runFollower{publish: publish, runs: map[string]*runLog{}, done: make(chan struct{})}
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			f.dirs = append(f.dirs, abs)
		}
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
	for {
		select {
		case <-ctx.Done():
			return
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
// directory itself or its subdirectories) and reads what their logs added.
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
			if sub := filepath.Join(d, e.Name()); e.IsDir() && isRun(sub) {
				found = append(found, sub)
			}
		}
	}
	changed := false
	var all []*runLog
	f.mu.Lock()
	for _, d := range found {
		r, ok := f.runs[d]
		if !ok {
			r = &runLog{dir: d}
			f.runs[d] = r
			changed = true
		}
		all = append(all, r)
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
		r.ended, r.live = false, nil
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
		var kind struct {
			Kind train.EventKind `json:"kind"`
		}
		if json.Unmarshal(rec, &kind) == nil {
			switch kind.Kind {
			case train.EventStart, train.EventResume:
				r.ended = false
			case train.EventEnd:
				r.ended, r.live = true, nil
			}
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
// run, whose world_size, the number of ranks, its start record gives).
func (r *runLog) summary() map[string]any {
	s := map[string]any{"dir": r.dir, "name": filepath.Base(r.dir), "status": "running", "epochs": 0, "step": 0,
		"records": len(r.records)}
	for _, raw := range r.records {
		var e struct {
			Kind   string    `json:"kind"`
			Time   time.Time `json:"time"`
			Epoch  int       `json:"epoch"`
			Step   int       `json:"step"`
			Reason string    `json:"reason"`
			Error  string    `json:"error"`
			Ranks  int       `json:"world_size"`
		}
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		switch e.Kind {
		case "start":
			s["started"], s["status"] = e.Time, "running"
			delete(s, "world_size")
			if e.Ranks > 1 {
				s["world_size"] = e.Ranks
			}
		case "resume":
			s["status"] = "running"
		case "end":
			s["status"], s["ended"] = e.Reason, e.Time
			if e.Error != "" {
				s["error"] = e.Error
			}
		}
		if e.Step > 0 {
			s["step"] = e.Step
		}
		if e.Kind == "epoch" || e.Kind == "end" || e.Kind == "checkpoint" {
			s["epochs"] = e.Epoch
		}
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
		return nil, fmt.Errorf("%s is not a run the workbench follows (runs are followed under %s)", dir, strings.Join(f.dirs, ", "))
	}
	return r, nil
}

// within reports whether path lies under one of the followed directories.
func (f *runFollower) within(path string) bool {
	for _, d := range f.dirs {
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
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
			var p struct {
				Path   string `json:"path"`
				Format string `json:"format"`
				Out    string `json:"out"`
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			return s.exportCheckpoint(p.Path, p.Format, p.Out)
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

// exportCheckpoint writes a checkpoint's weights to out (relative paths
// are under the root) in format, after verifying the checkpoint.
func (s *Server) exportCheckpoint(path, format, out string) (any, error) {
	if format == "" {
		format = "safetensors"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if !s.runs.within(abs) {
		return nil, fmt.Errorf("%s is not a checkpoint of a followed run", path)
	}
	if out == "" {
		return nil, errors.New("no output path given")
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(s.cfg.Root, out)
	}
	switch format {
	case "safetensors":
	case "onnx":
		return nil, errors.New("a checkpoint holds weights, not the model's code: export ONNX from a cell, with onnx.Export(model, input, path)")
	default:
		return nil, fmt.Errorf("format %q: the workbench exports safetensors", format)
	}
	rd, err := store.OpenCheckpoint(abs) // verifies every file's checksum
	if err != nil {
		return nil, err
	}
	src := filepath.Join(rd.Info.Dir, "model.safetensors")
	rd.Close()
	n, err := copyAtomic(src, out)
	if err != nil {
		return nil, fmt.Errorf("export to %s: %w", out, err)
	}
	return map[string]any{"out": out, "bytes": n}, nil
}

// copyAtomic copies src to dst through a temporary file renamed into place.
func copyAtomic(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return n, os.Rename(tmp.Name(), dst)
}

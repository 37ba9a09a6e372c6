package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// FollowWait is how long Follow waits for a run directory's event log to
// appear before it gives up with ErrNoEventLog.
const FollowWait = 2 * time.Minute

// followPoll is how often a follower looks at the event log for records.
const followPoll = 100 * time.Millisecond

// ErrNoEventLog is the error of Follow and FollowCommand when no event
// log appeared in the run directory within FollowWait.
var ErrNoEventLog = errors.New("train: no event log appeared in the run directory")

// Follow follows the run that another process writes in runDir (a `kiln
// demo`, a program under `kiln launch`, a run of another notebook): it
// reads events.jsonl from its first record as the file grows and hands
// each Event to obs (nil for none), as Fit does to its Observers (each on a
// goroutine of its own, in order), until the run's end event. Unlike Fit,
// Follow waits for a slow observer instead of dropping events for it. (obs
// is a slice, not variadic, because yaegi v0.16.1 cannot pass an Observer
// declared in a notebook cell as a variadic argument after others.) It returns the run's Result, built from the events (Train and
// Valid from the epoch events), and, like Fit, an error when the run
// failed.
//
// A log that does not exist yet is waited for, at most FollowWait
// (ErrNoEventLog); a last line without its newline is a record being
// written, read once it is whole. A log that has already ended returns at
// once, every record handed to obs first. A line that is not an Event (a
// record cut short by a crash) is skipped.
//
// Follow is seen by the process's RunHook (SetRunHook) when the run's
// first record arrives, with RunInfo.Followed set, so that a host shows it
// as it shows its own runs (the notebook kernel's live dashboard).
// Follow never changes the run: to stop it, write its StopFile (the
// workbench's Stop button does). Cancelling ctx, or the context the hook
// returned, stops following at once: the observers get an end event made
// up by Follow (Reason StopCancelled, Error saying that following stopped;
// it is not in the log), and Follow returns the Result so far with the
// context's error, while the run goes on in its process.
func Follow(ctx context.Context, runDir string, obs []Observer) (Result, error) {
	f := &follower{dir: runDir, obs: obs, wait: FollowWait, poll: followPoll}
	return f.run(ctx)
}

// follower reads a run directory's event log as it grows.
type follower struct {
	dir  string
	obs  []Observer
	wait time.Duration // how long to wait for the log to appear
	poll time.Duration

	// stale is the start time of an earlier run's log in dir: such a log
	// is ignored until a new run replaces it (FollowCommand).
	stale time.Time
	// stopRun, when set (FollowCommand), asks the run's processes to stop
	// (ctx or the hook's context was cancelled); kill ends them now (no log
	// appeared). Without them (Follow) the run is left alone.
	stopRun func()
	kill    func()
	// exited, when set, is closed when the process writing the run has
	// exited; exitErr then says how it ended, and the follower reads
	// what the log holds and ends (with an end event of its own if the
	// log has none).
	exited  <-chan struct{}
	exitErr func() error

	ctx     context.Context // the caller's, which the run hook wraps
	file    *os.File
	offset  int64
	partial []byte
	seen    bool // a record of the run was read
	ended   bool // the last record read is an end record
	out     *fanout
	hookCtx context.Context
	stopped bool // stopRun was called
	res     Result
	last    Event // the latest record
	trainBy []Values
	validBy []Values
}

// run follows the log until the run's end, the process's exit or ctx's end.
func (f *follower) run(ctx context.Context) (Result, error) {
	f.ctx = ctx
	defer func() {
		if f.file != nil {
			f.file.Close()
		}
	}()
	deadline := time.Now().Add(f.wait)
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	exited := f.exited
	var stopAsked <-chan struct{}
	for {
		if err := f.read(); err != nil {
			return f.finish(StopFailed, err.Error(), err)
		}
		if f.ended {
			return f.finish("", "", nil)
		}
		if stopAsked == nil && f.hookCtx != nil && !f.stopped {
			stopAsked = f.hookCtx.Done()
		}
		if !f.seen && f.file == nil && time.Now().After(deadline) {
			err := fmt.Errorf("%w: no %s in %s after %v", ErrNoEventLog, EventsFile, f.dir, f.wait)
			if f.kill != nil {
				f.kill()
			}
			return f.finish(StopFailed, err.Error(), err)
		}
		select {
		case <-ctx.Done():
			return f.cancelled(ctx)
		case <-stopAsked:
			if ctx.Err() != nil || f.stopRun == nil { // the hook's context is ctx's child
				return f.cancelled(ctx)
			}
			stopAsked = nil
			f.stopped = true
			f.stopRun()
		case <-exited:
			exited = nil
			if err := f.read(); err != nil {
				return f.finish(StopFailed, err.Error(), err)
			}
			if f.ended {
				return f.finish("", "", nil)
			}
			return f.exitedEarly()
		case <-tick.C:
		}
	}
}

// cancelled ends a follow whose ctx (or, for Follow, the hook's context)
// was cancelled. FollowCommand's run is asked to stop, and the follow
// ends at once, not after the processes are gone: an interrupted notebook
// cell gives its calls a moment only to say how the run ended.
func (f *follower) cancelled(ctx context.Context) (Result, error) {
	if ctx.Err() == nil {
		ctx = f.hookCtx
	}
	cause := context.Cause(ctx)
	err := fmt.Errorf("train: follow %s: %w", f.dir, cause)
	why := "stopped following the run (" + cause.Error() + "); it goes on in its process"
	if f.stopRun != nil {
		if !f.stopped {
			f.stopped = true
			f.stopRun()
		}
		why = fmt.Sprintf("asked its processes to stop (%v); they stop in the background, writing the run's final checkpoint and end record in %s", cause, f.dir)
	}
	return f.finish(StopCancelled, why, err)
}

// exitedEarly ends a follow whose process exited without the run's end
// record.
func (f *follower) exitedEarly() (Result, error) {
	how := "exited"
	if err := f.exitErr(); err != nil {
		how = err.Error()
	}
	if !f.seen {
		err := fmt.Errorf("train: the run's process ended before writing %s in %s: %s", EventsFile, f.dir, how)
		return f.finish(StopFailed, err.Error(), err)
	}
	if f.stopped {
		return f.finish(StopCancelled, "stopped: its processes ended ("+how+") without an end record", nil)
	}
	err := fmt.Errorf("train: the run's process ended without an end record in %s: %s", filepath.Join(f.dir, EventsFile), how)
	return f.finish(StopFailed, err.Error(), err)
}

// open opens the log once it exists (and, with stale set, once a new run
// has replaced the earlier one).
func (f *follower) open() error {
	file, err := os.Open(filepath.Join(f.dir, EventsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("train: follow: %w", err)
	}
	if !f.stale.IsZero() {
		if t, ok := firstStart(file); !ok || t.Equal(f.stale) {
			file.Close() // the earlier run's log, or a new one being started
			return nil
		}
		f.stale = time.Time{}
	}
	f.file = file
	return nil
}

// firstStart returns the time of the start record on f's first line, if
// it is one and whole.
func firstStart(f *os.File) (time.Time, bool) {
	b := make([]byte, 64<<10)
	n, _ := f.ReadAt(b, 0)
	line, _, whole := bytes.Cut(b[:n], []byte{'\n'})
	var e struct {
		Kind EventKind `json:"kind"`
		Time time.Time `json:"time"`
	}
	if !whole || json.Unmarshal(line, &e) != nil || e.Kind != EventStart {
		return time.Time{}, false
	}
	return e.Time, true
}

// read reads the records the log gained and hands them on. An end record
// followed by more records in the same read (a resumed run's log) is not
// handed on: the run went on.
func (f *follower) read() error {
	if f.file == nil {
		if err := f.open(); err != nil || f.file == nil {
			return err
		}
	}
	st, err := f.file.Stat()
	if err != nil {
		return fmt.Errorf("train: follow: %w", err)
	}
	if st.Size() < f.offset {
		return fmt.Errorf("train: follow: %s was replaced by another run's while it was followed", filepath.Join(f.dir, EventsFile))
	}
	if st.Size() == f.offset {
		return nil
	}
	b, err := io.ReadAll(io.NewSectionReader(f.file, f.offset, st.Size()-f.offset))
	if err != nil {
		return fmt.Errorf("train: follow: %w", err)
	}
	f.offset += int64(len(b))
	b = append(f.partial, b...)
	f.partial = nil
	var evs []Event
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			f.partial = append([]byte(nil), b...)
			break
		}
		line := bytes.TrimSpace(b[:i])
		b = b[i+1:]
		var e Event
		if len(line) == 0 || json.Unmarshal(line, &e) != nil || e.Kind == "" {
			continue
		}
		if !f.seen && e.Version > EventLogVersion {
			return fmt.Errorf("train: follow %s: event log version %d is newer than %d", f.dir, e.Version, EventLogVersion)
		}
		evs = append(evs, e)
	}
	for i, e := range evs {
		f.record(e)
		if e.Kind == EventEnd && i < len(evs)-1 {
			continue
		}
		f.deliver(e)
	}
	return nil
}

// record folds e into the result.
func (f *follower) record(e Event) {
	f.seen, f.last = true, e
	switch e.Kind {
	case EventStart:
		f.trainBy, f.validBy, f.ended = nil, nil, false
	case EventResume:
		f.ended = false
		if e.Position != nil {
			f.trainBy = f.trainBy[:min(len(f.trainBy), e.Position.Epoch)]
			f.validBy = f.validBy[:min(len(f.validBy), e.Position.Epoch)]
		}
	case EventEpoch:
		if e.Epoch < 1 {
			break
		}
		by := &f.trainBy
		if e.Split == "valid" {
			by = &f.validBy
		}
		for len(*by) < e.Epoch {
			*by = append(*by, nil)
		}
		(*by)[e.Epoch-1] = e.Metrics
	case EventEnd:
		f.ended = true
		f.res.Reason, f.res.Why = e.Reason, e.Error
		f.res.Epochs, f.res.Steps = e.Epoch, e.Step
	}
}

// deliver hands e to the observers, calling the run hook first if e is
// the first record.
func (f *follower) deliver(e Event) {
	if f.out == nil {
		obs := f.obs
		if hooked := f.applyHook(e); hooked != nil {
			obs = append(append([]Observer(nil), obs...), hooked)
		}
		f.out = newFanout(obs)
	}
	f.out.publishWait(f.ctx, e)
}

// publishWait is publish for a reader of a log, which may wait: it hands e
// to every observer, waiting for a slow one unless ctx is done (then e is
// dropped for it, and counted), except the end event, which it always
// waits to deliver.
func (o *fanout) publishWait(ctx context.Context, e Event) {
	for _, ch := range o.chans {
		if e.Kind == EventEnd {
			ch <- e
			continue
		}
		select {
		case ch <- e:
		case <-ctx.Done():
			o.dropped++
		}
	}
}

// applyHook calls the run hook, if any, for the followed run whose first
// record is first.
func (f *follower) applyHook(first Event) Observer {
	p := runHook.Load()
	if p == nil {
		return nil
	}
	info := RunInfo{Resume: first.Kind == EventResume, RunDir: f.dir, WorldSize: first.WorldSize, Followed: true}
	if len(first.Config) > 0 {
		_ = json.Unmarshal(first.Config, &info.Config)
	}
	ctx, obs := (*p)(f.ctx, info)
	f.hookCtx = ctx
	return obs
}

// finish ends the follow: a run that has not ended (reason set) gets an
// end event of the follower's own for the observers; the observers are
// closed and the Result returned with err, or with the run's error when
// it failed.
func (f *follower) finish(reason StopReason, why string, err error) (Result, error) {
	if !f.ended && f.seen {
		f.res.Reason, f.res.Why = reason, why
		f.res.Epochs = len(f.validBy) // epochs validated, or trained without validation
		if f.res.Epochs == 0 {
			f.res.Epochs = len(f.trainBy)
		}
		f.res.Steps = f.last.Step
		f.deliver(Event{Kind: EventEnd, Time: time.Now(), Epoch: f.res.Epochs, Step: f.res.Steps,
			Elapsed: f.last.Elapsed, Reason: reason, Error: why})
	} else if !f.seen {
		f.res.Reason, f.res.Why = reason, why
	}
	n := f.res.Epochs
	f.res.Train = clipValues(f.trainBy, n)
	f.res.Valid = clipValues(f.validBy, n)
	if f.out != nil {
		f.out.close()
		f.res.DroppedEvents = f.out.dropped
	}
	if err == nil && f.res.Reason == StopFailed {
		err = errors.New(f.res.Why)
	}
	return f.res, err
}

// clipValues returns the first n of vs (those of completed epochs).
func clipValues(vs []Values, n int) []Values {
	if len(vs) > n {
		vs = vs[:n]
	}
	if len(vs) == 0 {
		return nil
	}
	return append([]Values(nil), vs...)
}

// tail keeps the last bytes written to it: what a child process said
// last, for an error message.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

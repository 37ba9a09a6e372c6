package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/viz"
)

// Live training.
//
// While a session is open it is the process's train.RunHook: every Fit or
// Resume that a cell starts, and every run a cell follows (train.Follow,
// train.FollowCommand: a run written by another process, such as `kiln
// demo -np 2`), gets a viz.LiveDashboard shown in the cell's
// output and updated in place (update_display_data under one display_id),
// at most 4 times a second, each series thinned to 500 points until the
// final update, which holds every point (and whose metadata says
// kiln_dashboard final). Each update is the whole dashboard (the
// viz.DashboardUpdate itself): a header with the run's progress, epoch,
// step, elapsed time, ETA, samples/s and system use, the constant series
// as values, and the charts. The chart library goes out once per session,
// in an output of its own (viz.Session.Preload), so that the updates stay
// small. The smoothing a user picks with the dashboard's slider is kept in
// the page under the display_id, so that later updates keep it.
//
// The hook also gives each run a context of its own, so that an interrupt
// can stop the cell's runs gracefully first, even when the cell passed
// context.Background(): each run finishes its optimizer step, writes its
// final checkpoint and says where; then the cell itself is interrupted.
// A second interrupt, or LiveGrace without the runs ending, interrupts the
// cell at once. A followed run stops as train.Follow and FollowCommand
// say: Follow stops following, FollowCommand asks the run's processes to
// stop (its STOP file, then signals to mpirun and the ranks).

// LiveGrace is how long an interrupt waits for a cell's training runs to
// stop gracefully before it interrupts the cell regardless.
const LiveGrace = 30 * time.Second

// liveRun is one training run started by a cell.
type liveRun struct {
	s      *Session
	cell   *run
	cancel context.CancelFunc
	dash   *viz.LiveDashboard
	id     string        // the dashboard's display_id
	done   chan struct{} // closed after the end event was shown

	followed bool // written by another process (train.Follow, train.FollowCommand)

	mu         sync.Mutex
	stopping   bool   // cancelled by an interrupt
	checkpoint string // the last checkpoint written
}

// live is the session's state for live training.
type live struct {
	mu        sync.Mutex
	runs      map[*liveRun]bool
	grace     time.Duration // LiveGrace; shorter in tests
	stopping  *run          // the cell whose runs an interrupt is stopping
	prevHook  train.RunHook
	prevOwner *Session
}

// hookOwner is the session whose runHook is the process's run hook.
var (
	hookMu    sync.Mutex
	hookOwner *Session
)

// startLive makes the session the process's run hook.
func (s *Session) startLive() {
	s.live.runs = map[*liveRun]bool{}
	if s.live.grace == 0 {
		s.live.grace = LiveGrace
	}
	hookMu.Lock()
	defer hookMu.Unlock()
	s.live.prevHook = train.SetRunHook(s.runHook)
	s.live.prevOwner, hookOwner = hookOwner, s
}

// stopLive puts the previous run hook back, unless a later session has
// taken over (its own stopLive will put back this session's hook, which
// does nothing for a closed session).
func (s *Session) stopLive() {
	hookMu.Lock()
	defer hookMu.Unlock()
	if hookOwner == s {
		train.SetRunHook(s.live.prevHook)
		hookOwner = s.live.prevOwner
	}
}

// runHook is the session's train.RunHook. Runs started outside a cell (by
// a goroutine a finished cell left behind) are left alone.
func (s *Session) runHook(ctx context.Context, info train.RunInfo) (context.Context, train.Observer) {
	s.mu.Lock()
	cell, closed := s.running, s.closed
	s.mu.Unlock()
	if cell == nil || closed {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	lr := &liveRun{s: s, cell: cell, cancel: cancel, id: "kiln-run-" + newSuffix(), done: make(chan struct{})}
	lr.followed = info.Followed
	lr.dash = viz.NewLiveDashboard(lr, viz.DashboardConfig{Title: liveTitle(info)})
	s.live.mu.Lock()
	s.live.runs[lr] = true
	s.live.mu.Unlock()
	return ctx, lr
}

// liveTitle is the title of a run's dashboard: what it is, its directory
// and, for a data-parallel run, its ranks.
func liveTitle(info train.RunInfo) string {
	title := "training"
	if info.Followed {
		title = "following"
	}
	if info.RunDir != "" {
		title += ": " + info.RunDir
	}
	if info.Resume {
		title = "resumed " + title
	}
	if info.WorldSize > 1 {
		title += fmt.Sprintf(" · data-parallel, %d ranks", info.WorldSize)
	}
	return title
}

// OnEvent implements train.Observer: the dashboard draws the event; the end
// event finishes the run's display and, after an interrupt, says where the
// final checkpoint is.
func (lr *liveRun) OnEvent(e train.Event) {
	if e.Kind == train.EventCheckpoint {
		lr.mu.Lock()
		lr.checkpoint = e.Path
		lr.mu.Unlock()
	}
	lr.dash.OnEvent(e)
	if e.Kind != train.EventEnd {
		return
	}
	lr.mu.Lock()
	stopping, ck := lr.stopping, lr.checkpoint
	lr.mu.Unlock()
	// A Jupyter interrupt cancels the cell's context before the session
	// hears of it: a followed run's follow then ends at once (with an end
	// event of its own, Error saying why), maybe before stopRunsGracefully
	// marked it.
	interrupted := lr.cell.ctx.Err() != nil && e.Reason == train.StopCancelled
	switch {
	case lr.followed && (stopping || interrupted) && e.Error != "":
		where := ""
		if ck != "" {
			where = "; its last checkpoint so far: " + ck
		}
		lr.s.router.write(Stderr, []byte(fmt.Sprintf("interrupted at step %d of the followed run: %s%s\n", e.Step, e.Error, where)))
	case lr.followed && (stopping || interrupted):
		where := "no checkpoint was written"
		if ck != "" {
			where = "final checkpoint: " + ck
		}
		lr.s.router.write(Stderr, []byte(fmt.Sprintf("the followed run stopped at the interrupt, at step %d (%s); %s\n", e.Step, e.Reason, where)))
	case stopping:
		where := "no checkpoint was written (set Config.RunDir or a Checkpoint strategy)"
		if ck != "" {
			where = "final checkpoint: " + ck
		}
		lr.s.router.write(Stderr, []byte(fmt.Sprintf("training stopped by the interrupt at step %d (%s); %s\n", e.Step, e.Reason, where)))
	}
	s := lr.s
	s.live.mu.Lock()
	delete(s.live.runs, lr)
	last := stopping && s.live.stopping == lr.cell
	for other := range s.live.runs {
		if other.cell == lr.cell && other.stopping {
			last = false
		}
	}
	if last {
		s.live.stopping = nil
	}
	s.live.mu.Unlock()
	lr.cancel()
	close(lr.done)
	if last {
		// Interrupt the cell now, before Fit (or Follow) returns to it, so
		// that none of its later statements run: another goroutine
		// (Session.execute) stops the interpreter, so wait, briefly, until
		// it has.
		s.mu.Lock()
		note := s.stopNote
		s.mu.Unlock()
		before := lr.cell.ctx.Err()
		s.interruptNow(lr.cell)
		if before == nil && lr.cell.ctx.Err() != nil {
			select {
			case <-note:
			case <-time.After(2 * time.Second):
			}
		}
	}
}

// Update implements viz.DashboardSink: the first update is shown, the later
// ones replace it.
func (lr *liveRun) Update(u viz.DashboardUpdate) {
	s := lr.s
	if pre := s.charts.Preload(); pre != nil {
		s.router.display(display.Message{Kind: display.DisplayData, Data: bundle(pre, "")})
	}
	kind := display.UpdateDisplayData
	if u.Seq == 1 {
		kind = display.DisplayData
	}
	d := bundle(s.charts.RenderDisplay(u, lr.id), lr.id)
	// Front ends ignore it; tests and tools see which update is the last.
	d.Metadata = display.MIMEMap{"kiln_dashboard": map[string]any{"seq": u.Seq, "final": u.Final, "step": u.Step}}
	s.router.display(display.Message{Kind: kind, Data: d})
}

// bundle turns a viz bundle into display Data, under displayID if set.
func bundle(m map[string]string, displayID string) display.Data {
	d := display.Data{Data: display.MIMEMap{}}
	for k, v := range m {
		d.Data[k] = v
	}
	if _, ok := d.Data[display.MIMETypeText]; !ok {
		d.Data[display.MIMETypeText] = ""
	}
	if displayID != "" {
		d.Transient = display.MIMEMap{"display_id": displayID}
	}
	return d
}

// stopRunsGracefully starts stopping the training runs of the running cell
// r and reports whether there were any. When they have ended (or after the
// grace period) it interrupts the cell, unless another interrupt did.
func (s *Session) stopRunsGracefully(r *run) bool {
	s.live.mu.Lock()
	if s.live.stopping != nil {
		// A second interrupt: the caller interrupts at once.
		s.live.stopping = nil
		s.live.mu.Unlock()
		return false
	}
	var runs []*liveRun
	for lr := range s.live.runs {
		if lr.cell == r {
			runs = append(runs, lr)
		}
	}
	if len(runs) == 0 {
		s.live.mu.Unlock()
		return false
	}
	s.live.stopping = r
	grace := s.live.grace
	s.live.mu.Unlock()

	for _, lr := range runs {
		lr.mu.Lock()
		lr.stopping = true
		lr.mu.Unlock()
		lr.cancel()
	}
	go func() {
		timeout := time.NewTimer(grace)
		defer timeout.Stop()
		for _, lr := range runs {
			select {
			case <-lr.done:
			case <-r.ctx.Done(): // interrupted
				return
			case <-timeout.C:
				s.live.mu.Lock()
				mine := s.live.stopping == r
				if mine {
					s.live.stopping = nil
				}
				s.live.mu.Unlock()
				if mine {
					s.router.write(Stderr, []byte(fmt.Sprintf("training did not stop within %v: interrupting the cell\n", grace)))
					s.interruptNow(r)
				}
				return
			}
		}
	}()
	return true
}

// newSuffix returns a random hex string for display ids.
func newSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

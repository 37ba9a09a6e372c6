package train

import (
	"context"
	"sync/atomic"
)

// RunInfo describes a run that is starting, as a RunHook sees it.
type RunInfo struct {
	Resume bool   // a Resume, not a Fit
	RunDir string // the run directory ("" for none)
	Config Config // the run's configuration, defaults filled in
	// WorldSize is the number of data-parallel ranks (Supervised.Comm),
	// 0 for a run on one process.
	WorldSize int
	// Followed says that the run is written by another process and read
	// by Follow or FollowCommand in this one: cancelling the hook's
	// context stops following it (Follow), or asks the processes that
	// FollowCommand started to stop.
	Followed bool
}

// RunHook sees every Fit and Resume started in the process, just before the
// run's first event, and every run followed with Follow or FollowCommand,
// once its first record has been read. It returns the context the run uses
// instead of ctx (nil keeps ctx; a host wraps ctx so that it can cancel the
// run, which then stops gracefully as for a cancelled ctx) and an Observer
// added to the run's own (nil for none). The hook's observer gets every
// event like any other Observer; as for every observer, the end event is
// never dropped, however far behind it is: the run waits until it can
// deliver it. The hook runs on the goroutine that called Fit, Resume,
// Follow or FollowCommand, after the run directory is prepared (a run
// that fails before that is not seen).
type RunHook func(ctx context.Context, info RunInfo) (context.Context, Observer)

var runHook atomic.Pointer[RunHook]

// SetRunHook makes h the process's run hook and returns the one it
// replaces (nil if none); a nil h removes the hook. A host that embeds
// training (the notebook kernel, the workbench) installs one to show or
// stop the runs that the code it runs starts; it should put the previous
// hook back when done. It is safe to call at any time: runs already
// started keep the hook they began with.
func SetRunHook(h RunHook) (previous RunHook) {
	var p *RunHook
	if h != nil {
		p = &h
	}
	if old := runHook.Swap(p); old != nil {
		return *old
	}
	return nil
}

// applyHook calls the run hook, if any, for r and returns the observer it
// added.
func (r *run) applyHook() Observer {
	p := runHook.Load()
	if p == nil {
		return nil
	}
	ctx, obs := (*p)(r.ctx, RunInfo{Resume: r.resumed, RunDir: r.cfg.RunDir, Config: r.cfg, WorldSize: r.worldSize()})
	if ctx != nil {
		r.ctx = ctx
	}
	return obs
}

package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// StopFile is the name of the file that stops a run from outside the
// process: when a file of this name appears in a run's RunDir, the run
// stops as if its context had been cancelled (the current step finishes, a
// final checkpoint is written, the end event's reason is "cancelled") and
// the file is removed. Any program can stop any run this way; the
// workbench's Stop button does. A STOP file left from an earlier run is
// removed when a run starts.
const StopFile = "STOP"

// ErrStopFile is the cause (context.Cause) of the cancellation of a run
// stopped by its StopFile.
var ErrStopFile = errors.New("train: stopped by the STOP file in the run directory")

// stopFilePoll is how often a run looks for its StopFile.
const stopFilePoll = 200 * time.Millisecond

// watchStopFile returns ctx, cancelled when StopFile appears in dir, and a
// function that ends the watch. Without a dir it returns ctx unchanged.
func watchStopFile(ctx context.Context, dir string) (context.Context, func()) {
	if dir == "" {
		return ctx, func() {}
	}
	path := filepath.Join(dir, StopFile)
	os.Remove(path)
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(stopFilePoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := os.Stat(path); err == nil {
					os.Remove(path)
					cancel(ErrStopFile)
					return
				}
			}
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
	}
}

// stopFileDir returns dir, the run directory whose StopFile the run
// obeys, or "" on a rank other than 0 of several: rank 0 alone watches
// the file (ranks on one machine share the directory, and a rank that
// took the file for itself would stop alone), and the ranks agree on the
// cancellation at their next step.
func (s *Supervised) stopFileDir(dir string) string {
	if s.Comm != nil && s.Comm.Size() > 1 && s.Comm.Rank() != 0 {
		return ""
	}
	return dir
}

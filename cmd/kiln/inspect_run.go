package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/train"
)

// runReport describes a run directory: whether its process lives, and the
// checkpoint `kiln export` would use (its fields at the top level of the
// JSON, as for a checkpoint directory; absent when the run has none).
type runReport struct {
	*checkpointReport
	Run struct {
		Dir             string         `json:"dir"`
		WorldSize       int            `json:"world_size,omitempty"` // data-parallel ranks, when more than one
		Liveness        train.Liveness `json:"liveness"`
		CheckpointError string         `json:"checkpoint_error,omitempty"` // why no checkpoint is shown
	} `json:"run"`
}

// isRunDirectory reports whether dir holds a training run's event log.
func isRunDirectory(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, train.EventsFile))
	return err == nil && fi.Mode().IsRegular()
}

// inspectRun prints the run in dir: its state (train.RunLiveness) with its
// process's pid and last heartbeat, then the checkpoint export would use,
// if it has one.
func inspectRun(out io.Writer, dir string, asJSON bool) error {
	live, err := train.RunLiveness(dir)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	var rep runReport
	rep.Run.Dir, rep.Run.Liveness = dir, live
	if n := worldSize(dir); n > 1 {
		rep.Run.WorldSize = n
	}
	ckDir, how, err := resolveCheckpoint(dir)
	if err == nil {
		var r *store.CheckpointReader
		if r, err = store.OpenCheckpoint(ckDir); err == nil {
			c := describeCheckpoint(r)
			r.Close()
			if how != "checkpoint" {
				c.Chosen = how
			}
			rep.checkpointReport = &c
		}
	}
	if fi, serr := os.Stat(filepath.Join(dir, train.CheckpointsDir)); serr != nil || !fi.IsDir() {
		rep.Run.CheckpointError = "the run has no " + train.CheckpointsDir + " directory"
	} else if err != nil {
		rep.Run.CheckpointError = err.Error()
	}
	if asJSON {
		return writeJSON(out, rep)
	}
	printRun(out, rep, time.Now())
	if rep.checkpointReport != nil {
		fmt.Fprintln(out)
		printCheckpoint(out, *rep.checkpointReport)
	}
	return nil
}

// worldSize returns the world size in the start record on the first line
// of the run's event log: its data-parallel ranks, 0 for one process or an
// unreadable log.
func worldSize(dir string) int {
	f, err := os.Open(filepath.Join(dir, train.EventsFile))
	if err != nil {
		return 0
	}
	defer f.Close()
	line, _ := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	var e struct {
		Kind      train.EventKind `json:"kind"`
		WorldSize int             `json:"world_size"`
	}
	if json.Unmarshal(line, &e) != nil || e.Kind != train.EventStart {
		return 0
	}
	return e.WorldSize
}

// printRun prints the run's state and process, ages taken at now.
func printRun(out io.Writer, rep runReport, now time.Time) {
	l := rep.Run.Liveness
	fmt.Fprintf(out, "run         %s\n", rep.Run.Dir)
	if rep.Run.WorldSize > 1 {
		fmt.Fprintf(out, "ranks       %d, data-parallel (rank 0 wrote this directory)\n", rep.Run.WorldSize)
	}
	state := string(l.State)
	if l.Reason != "" && string(l.Reason) != state {
		state += " (" + string(l.Reason) + ")"
	}
	fmt.Fprintf(out, "state       %s: %s\n", state, l.Why)
	if l.Error != "" {
		fmt.Fprintf(out, "error       %s\n", l.Error)
	}
	if l.PID != 0 {
		fmt.Fprintf(out, "process     pid %d on %s, since %s\n", l.PID, l.Host, l.Started.Local().Format(time.DateTime))
	}
	if !l.Heartbeat.IsZero() {
		label := "heartbeat  "
		if l.PID == 0 {
			label = "last record" // a run without process.json: the log's modification time
		}
		fmt.Fprintf(out, "%s %s (%s ago)\n", label, l.Heartbeat.Local().Format(time.DateTime), now.Sub(l.Heartbeat).Round(time.Second))
	}
	if !l.Ended.IsZero() {
		fmt.Fprintf(out, "ended       %s\n", l.Ended.Local().Format(time.DateTime))
	}
	if rep.Run.CheckpointError != "" {
		fmt.Fprintf(out, "checkpoint  none: %s\n", rep.Run.CheckpointError)
	}
}

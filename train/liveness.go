package train

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// LivenessState is what RunLiveness says of a run.
type LivenessState string

// The states of a run. The first four come from the event log's last end
// record; killed and stale are judged for a log that has none.
const (
	LivenessRunning   LivenessState = "running"   // no end record, and the process is alive (or, judged by heartbeat, was lately)
	LivenessCompleted LivenessState = "completed" // the end record's reason is "completed"
	LivenessStopped   LivenessState = "stopped"   // ended "cancelled" or "early_stop" (see Liveness.Reason)
	LivenessFailed    LivenessState = "failed"    // ended "failed" (see Liveness.Error)
	LivenessKilled    LivenessState = "killed"    // no end record, and the process on this machine is gone
	LivenessStale     LivenessState = "stale"     // no end record, and no heartbeat for StaleAfter: the process is on another machine, or cannot be checked
)

// StaleAfter is the default heartbeat age past which a run whose process
// cannot be checked directly is judged stale.
const StaleAfter = 30 * time.Second

// Liveness is what RunLiveness found of a run and its process.
type Liveness struct {
	State  LivenessState `json:"state"`
	Reason StopReason    `json:"reason,omitempty"` // the end record's reason, for a run that ended
	Error  string        `json:"error,omitempty"`  // the end record's error, for a failed run
	Why    string        `json:"why"`              // a sentence saying how the state was judged ("its process 1234 is gone (…)")

	// From the ProcessFile; zero for a run written by a Kiln older than it.
	PID     int       `json:"pid,omitempty"`
	Host    string    `json:"host,omitempty"`
	Local   bool      `json:"local,omitempty"` // the process was checked on this machine (pid, start time, lock)
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"` // when the process let the run go

	// Heartbeat is the ProcessFile's last heartbeat or, for a run without
	// one, the event log's modification time.
	Heartbeat time.Time `json:"heartbeat,omitzero"`
}

// RunLiveness says whether the run in dir is running, ended (completed,
// stopped or failed, from its event log's last end record) or, for a log
// without one, was killed or went stale, judging its process by the
// ProcessFile, with the default LivenessChecker:
//
//   - On this machine (the same boot id, on Linux; elsewhere the same host
//     name): killed when the pid is gone (a zombie counts as gone) or now
//     belongs to a process started at another time, or when the process no
//     longer holds its lock on the ProcessFile; running when it holds the
//     lock or, where locks are missing, its pid is alive. The pid is
//     checked only in the same pid namespace (not across containers); the
//     lock is checked across them.
//   - On another machine (a shared folder), or where nothing could be
//     checked: stale when the heartbeat is older than StaleAfter by this
//     machine's clock (the clocks are assumed to agree within seconds),
//     running otherwise. A machine that restarted has another boot id: its
//     killed runs show as stale.
//   - A ProcessFile marked ended under a log without an end record (the
//     process let the run go without writing one): killed; but when the
//     log changed after the process ended (something else wrote it), as
//     if there were no ProcessFile.
//   - No ProcessFile (a run written by a Kiln older than it): stale when
//     the event log has not changed for StaleAfter, running otherwise; so
//     such a run that logs less often than that looks stale.
//
// It returns an error when dir holds no events.jsonl.
func RunLiveness(dir string) (Liveness, error) { return LivenessChecker{}.Check(dir) }

// LivenessChecker judges runs as RunLiveness describes, with its own
// threshold and clock. The zero value is RunLiveness's.
type LivenessChecker struct {
	StaleAfter time.Duration    // heartbeat age past which a run is stale; 0 means StaleAfter
	Now        func() time.Time // the clock; nil means time.Now

	// For tests: the platform's checks, when set.
	process func(pid int) (procState, string)
	probe   func(path string) lockProbe
	self    *processRecord // this process's host, boot and namespace
}

// procState is what the platform says of a pid.
type procState int

const (
	procUnknown procState = iota // the platform cannot tell
	procAlive
	procGone
)

// lockProbe is what a probe of a ProcessFile's lock found.
type lockProbe int

const (
	lockUnknown lockProbe = iota // no locks here
	lockFree
	lockHeld
)

// Check judges the run in dir (see RunLiveness).
func (c LivenessChecker) Check(dir string) (Liveness, error) {
	path := filepath.Join(dir, EventsFile)
	st, err := os.Stat(path)
	if err != nil {
		return Liveness{}, fmt.Errorf("train: liveness: %w", err)
	}
	end, err := lastEnd(path)
	if err != nil {
		return Liveness{}, fmt.Errorf("train: liveness: %w", err)
	}
	if end == nil {
		return c.CheckRunning(dir, st.ModTime()), nil
	}
	l := Liveness{Reason: end.Reason, Error: end.Error}
	switch end.Reason {
	case StopCompleted:
		l.State = LivenessCompleted
	case StopFailed:
		l.State = LivenessFailed
	default:
		l.State = LivenessStopped
	}
	l.Why = fmt.Sprintf("the event log ends with reason %q at %s", end.Reason, end.Time.Format(time.DateTime))
	if rec, err := readProcessRecord(filepath.Join(dir, ProcessFile)); err == nil {
		l.fill(rec)
	}
	return l, nil
}

// CheckRunning judges the process of the run in dir, whose event log the
// caller has read and found without an end record (after its last start
// or resume record); logMod is the log's modification time, the heartbeat
// of a run without a ProcessFile. It returns running, killed or stale.
func (c LivenessChecker) CheckRunning(dir string, logMod time.Time) Liveness {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	staleAfter := c.StaleAfter
	if staleAfter <= 0 {
		staleAfter = StaleAfter
	}
	path := filepath.Join(dir, ProcessFile)
	rec, err := readProcessRecord(path)
	if err == nil && rec.State == processEnded && logMod.After(rec.Ended) {
		// The log changed after its process let the run go: the file does
		// not describe whatever wrote it.
		err = errNotItsProcess
	}
	if err != nil {
		l := Liveness{State: LivenessRunning, Heartbeat: logMod}
		why := "no " + ProcessFile
		switch {
		case errors.Is(err, errNotItsProcess):
			why = "only the " + ProcessFile + " of an earlier process, ended before the log's last change,"
		case !errors.Is(err, fs.ErrNotExist):
			why = "an unreadable " + ProcessFile
		}
		if age := now().Sub(logMod); age > staleAfter {
			l.State = LivenessStale
			l.Why = fmt.Sprintf("its event log has had no record since %s (%s ago) and the run has %s to tell whether its process lives", logMod.Format(time.DateTime), roundAge(age), why)
		} else {
			l.Why = fmt.Sprintf("its event log changed %s ago (the run has %s)", roundAge(age), why)
		}
		return l
	}
	l := Liveness{State: LivenessRunning}
	l.fill(rec)
	since := fmt.Sprintf("no heartbeat since %s", rec.Heartbeat.Format(time.DateTime))
	if rec.State == processEnded {
		l.State = LivenessKilled
		l.Why = fmt.Sprintf("its process %d ended without an end record in the event log (%s)", rec.PID, since)
		return l
	}

	self := c.self
	if self == nil {
		host, _ := os.Hostname()
		self = &processRecord{Host: host, BootID: bootID(), PIDNS: pidNamespace()}
	}
	// The same kernel: the same boot id where both are known (another
	// machine, or this one rebooted, has another), else the same host name.
	sameKernel := rec.Host == self.Host
	if rec.BootID != "" && self.BootID != "" {
		sameKernel = rec.BootID == self.BootID
	}
	// Pids mean the same only in the same pid namespace (not across
	// containers).
	samePIDs := sameKernel && (rec.PIDNS == "" || self.PIDNS == "" || rec.PIDNS == self.PIDNS)
	ps := procUnknown
	if samePIDs {
		process := processState
		if c.process != nil {
			process = c.process
		}
		var start string
		ps, start = process(rec.PID)
		switch {
		case ps == procGone:
			l.Local = true
			l.State = LivenessKilled
			l.Why = fmt.Sprintf("its process %d was killed or crashed (%s)", rec.PID, since)
			return l
		case ps == procAlive && rec.ProcStart != "" && start != "" && start != rec.ProcStart:
			l.Local = true
			l.State = LivenessKilled
			l.Why = fmt.Sprintf("its process %d was killed or crashed: the pid now belongs to another process (%s)", rec.PID, since)
			return l
		}
	}
	// The kernel drops a dead process's locks: on the same kernel a free
	// lock is a certain death and a held one a certain life. (Across
	// machines a lock on a shared folder says nothing certain.)
	if sameKernel && rec.Locked {
		probe := probeLock
		if c.probe != nil {
			probe = c.probe
		}
		switch probe(path) {
		case lockFree:
			l.Local = true
			l.State = LivenessKilled
			l.Why = fmt.Sprintf("its process %d was killed or crashed: it no longer holds its lock on %s (%s)", rec.PID, ProcessFile, since)
			return l
		case lockHeld:
			l.Local = true
			l.Why = fmt.Sprintf("its process %d holds its lock on %s", rec.PID, ProcessFile)
			return l
		}
	}
	if ps == procAlive {
		l.Local = true
		l.Why = fmt.Sprintf("its process %d is alive", rec.PID)
		return l
	}
	age := now().Sub(rec.Heartbeat)
	if age > staleAfter {
		l.State = LivenessStale
		l.Why = fmt.Sprintf("its process %d on %s has sent no heartbeat for %s (%s)", rec.PID, rec.Host, roundAge(age), since)
		return l
	}
	l.Why = fmt.Sprintf("its process %d on %s sent a heartbeat %s ago", rec.PID, rec.Host, roundAge(max(age, 0)))
	return l
}

// errNotItsProcess says that a ProcessFile ended before the log's last
// change.
var errNotItsProcess = errors.New("train: the process file ended before the log's last change")

// fill copies what the ProcessFile says of the process into l.
func (l *Liveness) fill(rec processRecord) {
	l.PID, l.Host, l.Started, l.Heartbeat = rec.PID, rec.Host, rec.Started, rec.Heartbeat
	if rec.State == processEnded {
		l.Ended = rec.Ended
	}
}

// roundAge rounds an age for messages.
func roundAge(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// lastEnd reads the event log at path and returns its end record when the
// run has ended (no start or resume record after it), nil while it runs.
// Damaged lines (a record cut short by a kill) are skipped.
func lastEnd(path string) (*Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var end *Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e struct {
			Kind   EventKind  `json:"kind"`
			Time   time.Time  `json:"time"`
			Reason StopReason `json:"reason"`
			Error  string     `json:"error"`
		}
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e.Kind {
		case EventEnd:
			end = &Event{Kind: e.Kind, Time: e.Time, Reason: e.Reason, Error: e.Error}
		case EventStart, EventResume:
			end = nil
		}
	}
	return end, sc.Err()
}

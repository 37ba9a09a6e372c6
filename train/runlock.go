package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ProcessFile is the name of the liveness file of a run directory: the
// process that runs Fit or Resume there writes it before it touches the
// event log, holds an advisory lock on it (flock, where the platform and
// the file system have one) and rewrites its heartbeat every
// HeartbeatEvery until the run ends, when it marks the file ended and lets
// the lock go. The file outlives the run. RunLiveness reads it; the
// package documentation describes its fields.
const ProcessFile = "process.json"

// ProcessFileVersion is the version of the ProcessFile format, in its
// "version" field. Added fields keep it.
const ProcessFileVersion = 1

// HeartbeatEvery is how often a running run rewrites the heartbeat of its
// ProcessFile.
const HeartbeatEvery = 2 * time.Second

// ErrRunDirInUse is returned (wrapped) by Fit and Resume for a run
// directory whose ProcessFile another live process holds locked: two runs
// writing one directory would corrupt each other's logs and checkpoints.
var ErrRunDirInUse = errors.New("train: the run directory is in use by another run")

// errLockHeld is lockFile's error for a lock another open file holds.
var errLockHeld = errors.New("train: lock held")

// The values of a ProcessFile's "state".
const (
	processRunning = "running"
	processEnded   = "ended"
)

// processRecord is the content of a ProcessFile.
type processRecord struct {
	Version   int       `json:"version"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	BootID    string    `json:"boot_id,omitempty"`    // the kernel's boot (Linux): a reboot frees every pid
	PIDNS     string    `json:"pid_ns,omitempty"`     // the pid namespace (Linux): containers number processes apart
	ProcStart string    `json:"proc_start,omitempty"` // the OS's start time of the process, so that a reused pid is told apart
	Locked    bool      `json:"locked"`               // the process holds an advisory lock on the file
	Started   time.Time `json:"started"`              // when the process took the run directory
	Heartbeat time.Time `json:"heartbeat"`
	State     string    `json:"state"` // "running", or "ended" once the run has ended
	Ended     time.Time `json:"ended,omitzero"`
}

// processRecordSize is the size a record is padded to (with spaces before
// its newline): every rewrite of a run's record has the same size, so that
// a rewrite in place never leaves the tail of a longer record behind it.
const processRecordSize = 512

// encode returns the record padded with spaces to size bytes, its last a
// newline, or to a larger multiple of processRecordSize (with room for the
// fields that vary) when it does not fit.
func (p *processRecord) encode(size int) []byte {
	b, _ := json.Marshal(p) // plain fields: cannot fail
	if len(b) >= size {
		size = (len(b)+128)/processRecordSize*processRecordSize + processRecordSize
	}
	out := bytes.Repeat([]byte{' '}, size)
	copy(out, b)
	out[size-1] = '\n'
	return out
}

// readProcessRecord reads the ProcessFile at path. A reader may meet a
// rewrite half done: it tries a few times before it gives up.
func readProcessRecord(path string) (processRecord, error) {
	var err error
	for try := 0; try < 5; try++ {
		if try > 0 {
			time.Sleep(5 * time.Millisecond)
		}
		var b []byte
		if b, err = os.ReadFile(path); err != nil {
			return processRecord{}, err
		}
		var p processRecord
		if err = json.Unmarshal(b, &p); err == nil {
			return p, nil
		}
	}
	return processRecord{}, fmt.Errorf("train: %s: %w", path, err)
}

// runLock is a run's hold on its ProcessFile.
type runLock struct {
	f    *os.File
	mu   sync.Mutex // guards rec, size and writes to f
	rec  processRecord
	size int // of the file: the size of every rewrite
	stop chan struct{}
	done chan struct{}
}

// lockWait is how long lockRun retries a lock held by someone else: a
// reader's probe holds it for microseconds, a live run for its lifetime.
const lockWait = 2 * time.Second

// lockRun creates dir, takes its ProcessFile for this process and starts
// the heartbeat. It fails with ErrRunDirInUse when a live process holds
// the file's lock, and for a file it cannot write. On a platform or file
// system without advisory locks the run goes on unlocked (the record says
// so, and readers judge it by its pid and heartbeat).
func lockRun(dir string) (*runLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("train: run directory: %w", err)
	}
	path := filepath.Join(dir, ProcessFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: run directory: %w", err)
	}
	locked := true
	for deadline := time.Now().Add(lockWait); ; {
		err := lockFile(f)
		if err == nil {
			break
		}
		if !errors.Is(err, errLockHeld) {
			locked = false // no advisory locks here
			break
		}
		if time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		f.Close()
		if p, rerr := readProcessRecord(path); rerr == nil {
			return nil, fmt.Errorf("%w: %s is held by process %d on %s (since %s)", ErrRunDirInUse, dir, p.PID, p.Host, p.Started.Format(time.DateTime))
		}
		return nil, fmt.Errorf("%w: %s", ErrRunDirInUse, dir)
	}
	now := time.Now()
	host, _ := os.Hostname()
	_, start := processState(os.Getpid())
	l := &runLock{f: f, stop: make(chan struct{}), done: make(chan struct{}), rec: processRecord{
		Version: ProcessFileVersion, PID: os.Getpid(), Host: host, BootID: bootID(), PIDNS: pidNamespace(),
		ProcStart: start, Locked: locked, Started: now, Heartbeat: now, State: processRunning,
	}}
	if err := l.write(); err != nil {
		f.Close()
		return nil, fmt.Errorf("train: run directory: %w", err)
	}
	go l.beat()
	return l, nil
}

// beat rewrites the heartbeat every HeartbeatEvery until release. A failed
// write is not fatal: readers then see the heartbeat age.
func (l *runLock) beat() {
	defer close(l.done)
	tick := time.NewTicker(HeartbeatEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-tick.C:
			l.mu.Lock()
			l.rec.Heartbeat = now
			_ = l.write()
			l.mu.Unlock()
		}
	}
}

// release marks the ProcessFile ended and lets its lock go. It is safe on
// a nil lock.
func (l *runLock) release() {
	if l == nil {
		return
	}
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.rec.Heartbeat, l.rec.Ended, l.rec.State = now, now, processEnded
	_ = l.write()
	l.f.Close() // closing the file lets the lock go
}

// write writes the record over the file's content; l.mu is held (or l not
// yet shared).
func (l *runLock) write() error {
	b := l.rec.encode(l.size)
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return err
	}
	if len(b) != l.size { // the first write (an earlier record may be longer), or a record grown
		l.size = len(b)
		return l.f.Truncate(int64(len(b)))
	}
	return nil
}

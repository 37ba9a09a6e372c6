package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrNoKiln is the error of KilnPath when the kiln program is not found.
var ErrNoKiln = errors.New("train: the kiln program was not found: set KILN_BIN to its path or put it on PATH (go build -o kiln ./cmd/kiln)")

// KilnPath returns the path of the kiln program: KILN_BIN when set (it
// must be an executable file), else this process's own executable when it
// is kiln (a notebook kernel run by `kiln kernel`, the workbench), else
// kiln on PATH. It fails with ErrNoKiln, or with an error naming a
// KILN_BIN that is not an executable file.
func KilnPath() (string, error) {
	if p := os.Getenv("KILN_BIN"); p != "" {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("train: KILN_BIN: %w", err)
		}
		if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("train: KILN_BIN=%s is not an executable file", p)
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		if name := strings.TrimSuffix(filepath.Base(self), ".exe"); name == "kiln" {
			return self, nil
		}
	}
	if p, err := exec.LookPath("kiln"); err == nil {
		return p, nil
	}
	return "", ErrNoKiln
}

// KilnCommand returns the command that runs the kiln program (KilnPath)
// with args, for FollowCommand: for instance
//
//	KilnCommand("demo", "-np", "2", "-epochs", "1", "-run-dir", dir)
//	KilnCommand("launch", "-n", "4", "./train", "-run-dir", dir)
//
// Its output goes nowhere unless its Stdout and Stderr are set. It fails
// as KilnPath does.
func KilnCommand(args ...string) (*exec.Cmd, error) {
	path, err := KilnPath()
	if err != nil {
		return nil, err
	}
	return exec.Command(path, args...), nil
}

// StopGrace is how long FollowCommand gives a run it asked to stop
// through its StopFile before it signals the run's processes.
const StopGrace = 10 * time.Second

// stopGrace is StopGrace, shorter in tests.
var stopGrace = StopGrace

// How long FollowCommand gives the processes of a run to end after the
// run's end record, before it ends them; and after SIGINT or SIGTERM,
// before the next signal.
const (
	exitAfterEnd = 10 * time.Second
	termGrace    = 3 * time.Second
)

// FollowCommand starts cmd, a program that trains a run in runDir (`kiln
// demo -np 2 -run-dir DIR`, `kiln launch -n 4 PROGRAM …`: see
// KilnCommand), follows the run as Follow does, handing each Event to obs,
// and returns its Result once the run has ended and cmd has exited. An
// events.jsonl an earlier run left in runDir is not mistaken for this
// run's: FollowCommand waits for cmd to replace it.
//
// To stop the run, FollowCommand writes its StopFile: the run finishes
// its step (all ranks of a data-parallel run the same one), writes a final
// checkpoint and its end record, and its processes exit. If they have not
// exited StopGrace later, they are signalled (where the platform has
// process groups, cmd's group, as it runs in one of its own: SIGINT, which
// `kiln demo`, `kiln launch` and mpirun turn into the end of the ranks,
// then SIGTERM and SIGKILL 3 s apart). It does so when the context of the
// process's RunHook is cancelled (the notebook kernel's interrupt), and
// then follows the run to its end: the Result has Reason StopCancelled and
// a nil error. It does so too when ctx is cancelled, but then returns at
// once, with ctx's error, after handing the observers an end event of its
// own; the processes stop in the background. Processes that never write
// the event log (ErrNoEventLog after FollowWait), or are still running 10 s
// after the run's end record, are ended (SIGTERM, SIGKILL 3 s later).
//
// Without Stdout or Stderr set, cmd's output is discarded except for its
// last lines, which errors quote. FollowCommand fails when cmd cannot
// start, when it exits without the run's end record (Reason StopFailed,
// quoting its exit status and last output), when the run fails, and when
// cmd exits with an error after a run that did not fail.
func FollowCommand(ctx context.Context, cmd *exec.Cmd, runDir string, obs []Observer) (Result, error) {
	if cmd == nil || runDir == "" {
		return Result{Reason: StopFailed}, errors.New("train: FollowCommand needs a command and its run directory")
	}
	said := &tail{max: 4 << 10}
	if cmd.Stdout == nil {
		cmd.Stdout = said
	}
	if cmd.Stderr == nil {
		cmd.Stderr = said
	}
	var stale time.Time
	if f, err := os.Open(filepath.Join(runDir, EventsFile)); err == nil {
		stale, _ = firstStart(f)
		f.Close()
	}
	startGroup(cmd)
	if err := cmd.Start(); err != nil {
		return Result{Reason: StopFailed}, fmt.Errorf("train: starting %s: %w", cmd.Path, err)
	}
	p := &process{cmd: cmd, runDir: runDir, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
		p.stopTimers()
	}()
	f := &follower{dir: runDir, obs: obs, wait: FollowWait, poll: followPoll, stale: stale,
		exited: p.exited, stopRun: p.stop, kill: p.kill,
		exitErr: func() error { return describeExit(p.err, said) }}
	res, err := f.run(ctx)
	if ctx.Err() != nil {
		return res, err // the processes end in the background (see process.stop)
	}
	select {
	case <-p.exited:
	case <-time.After(exitAfterEnd):
		p.kill()
		<-p.exited
	}
	if errors.Is(err, ErrNoEventLog) {
		return res, err
	}
	if err == nil && p.err != nil && !p.stopping() && res.Reason != StopCancelled {
		err = fmt.Errorf("train: after the run ended: %w", describeExit(p.err, said))
	}
	return res, err
}

// describeExit says how a process ended, quoting what it said last.
func describeExit(err error, said *tail) error {
	if err == nil {
		return nil
	}
	if s := said.String(); s != "" {
		lines := strings.Split(s, "\n")
		if len(lines) > 12 {
			lines = lines[len(lines)-12:]
		}
		return fmt.Errorf("%w; its last output:\n%s", err, strings.Join(lines, "\n"))
	}
	return err
}

// process is a child process that FollowCommand started.
type process struct {
	cmd    *exec.Cmd
	runDir string
	exited chan struct{} // closed once Wait has returned
	err    error         // what Wait returned, once exited is closed

	mu       sync.Mutex
	asked    bool // stop or kill was called
	timers   []*time.Timer
	finished bool
}

// stop asks the run to stop with its StopFile, then, if its processes
// have not exited after StopGrace, signals them: SIGINT, SIGTERM and
// SIGKILL, 3 s apart.
func (p *process) stop() { p.end(false) }

// kill ends the processes now: SIGTERM, then SIGKILL.
func (p *process) kill() { p.end(true) }

func (p *process) end(now bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	first := !p.asked
	p.asked = true
	select {
	case <-p.exited:
		return
	default:
	}
	if now {
		signalGroup(p.cmd, sigTerm)
		p.timers = append(p.timers, time.AfterFunc(termGrace, func() { p.signalKill() }))
		return
	}
	if !first {
		return
	}
	_ = os.WriteFile(filepath.Join(p.runDir, StopFile), []byte("stopped by the process following the run\n"), 0o644)
	p.timers = append(p.timers,
		time.AfterFunc(stopGrace, func() { p.signalUnlessExited(func() { signalGroup(p.cmd, sigInterrupt) }) }),
		time.AfterFunc(stopGrace+termGrace, func() { p.signalTerm() }),
		time.AfterFunc(stopGrace+2*termGrace, func() { p.signalKill() }))
}

// signalTerm and signalKill send their signal unless the process has
// been waited for (its pid may be another's by then).
func (p *process) signalTerm() { p.signalUnlessExited(func() { signalGroup(p.cmd, sigTerm) }) }
func (p *process) signalKill() { p.signalUnlessExited(func() { signalGroup(p.cmd, sigKill) }) }

func (p *process) signalUnlessExited(send func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
	default:
		if !p.finished {
			send()
		}
	}
}

// stopping reports whether stop or kill was called.
func (p *process) stopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

// stopTimers cancels the signals still to come (the processes have
// exited).
func (p *process) stopTimers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished = true
	for _, t := range p.timers {
		t.Stop()
	}
}

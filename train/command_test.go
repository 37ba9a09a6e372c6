//go:build unix

package train_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/train"
)

// script returns a command running the shell script src in dir, with
// $LOG the run's event log.
func script(t *testing.T, dir, src string) *exec.Cmd {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", src)
	cmd.Env = append(os.Environ(), "LOG="+filepath.Join(dir, train.EventsFile))
	return cmd
}

const (
	startRecord = `{"version":1,"kind":"start","time":"%s","epoch":0,"step":0,"config":{"epochs":1},"world_size":2}`
	stepRecord  = `{"kind":"step","time":"2030-01-01T00:00:01Z","epoch":1,"step":%d,"split":"train","metrics":{"loss":1}}`
)

// now is a shell expression for a start record's time, distinct per run.
const now = `$(date -u +%Y-%m-%dT%H:%M:%SZ)`

// A child process writes a run after an earlier run's log: FollowCommand
// waits for the new log, follows it to its end and waits for the child.
func TestFollowCommandFollowsTheNewRun(t *testing.T) {
	dir := t.TempDir()
	old := `{"version":1,"kind":"start","time":"2020-01-01T00:00:00Z","epoch":0,"step":0}` + "\n" +
		`{"kind":"end","time":"2020-01-01T00:00:09Z","epoch":1,"step":99,"reason":"completed"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, train.EventsFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := script(t, dir, `sleep 0.3
printf '`+startRecord+`\n' "`+now+`" > "$LOG"
for i in 1 2 3; do sleep 0.05; printf '`+stepRecord+`\n' $i >> "$LOG"; done
printf '{"kind":"end","time":"2030-01-01T00:00:02Z","epoch":1,"step":3,"reason":"completed"}\n' >> "$LOG"
sleep 0.2; echo bye`)
	rec := &recorder{}
	res, err := train.FollowCommand(context.Background(), cmd, dir, []train.Observer{rec})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rec.events()); got != "start@0 step@1 step@2 step@3 end@3" {
		t.Errorf("events %s", got)
	}
	if res.Reason != train.StopCompleted || res.Steps != 3 || rec.events()[0].WorldSize != 2 {
		t.Errorf("result %+v", res)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Error("FollowCommand returned before the child exited")
	}
}

// A child that dies without the run's end record: an error quoting its
// exit status and last output, and an end event for the observers.
func TestFollowCommandChildDiesWithoutEnd(t *testing.T) {
	dir := t.TempDir()
	cmd := script(t, dir, `printf '`+startRecord+`\n' "`+now+`" > "$LOG"
printf '`+stepRecord+`\n' 1 >> "$LOG"
echo 'rank 1: out of memory' >&2; exit 3`)
	rec := &recorder{}
	res, err := train.FollowCommand(context.Background(), cmd, dir, []train.Observer{rec})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "rank 1: out of memory") ||
		!strings.Contains(err.Error(), "without an end record") {
		t.Fatalf("error %v", err)
	}
	evs := rec.events()
	if res.Reason != train.StopFailed || len(evs) != 3 || evs[2].Kind != train.EventEnd || evs[2].Reason != train.StopFailed {
		t.Errorf("result %+v, events %s", res, kinds(evs))
	}
	// A child that cannot write the log at all.
	_, err = train.FollowCommand(context.Background(), script(t, dir, `echo 'usage: nope' >&2; exit 2`), filepath.Join(dir, "other"), nil)
	if err == nil || !strings.Contains(err.Error(), "before writing events.jsonl") || !strings.Contains(err.Error(), "usage: nope") {
		t.Errorf("error %v", err)
	}
}

// Stopping a followed command's run: FollowCommand writes the run's STOP
// file, and a run that honours it (as Fit does) writes its end record and
// exits; cancelling the run hook's context (the kernel's interrupt)
// follows it to that end, cancelling ctx returns at once (the run stops
// in the background). A run that ignores its STOP file has its process
// group signalled after StopGrace: the shell and the sleep it waits for
// end.
func TestFollowCommandStops(t *testing.T) {
	defer train.SetStopGrace(300 * time.Millisecond)()
	const honoursStop = `
echo $$ > "$DIR/sleep.pid"
while [ ! -f "$DIR/STOP" ]; do sleep 0.02; done
rm "$DIR/STOP"
printf '{"kind":"end","time":"2030-01-01T00:00:02Z","epoch":0,"step":1,"reason":"cancelled"}\n' >> "$LOG"`
	const ignoresStop = `
sh -c 'echo $$ > "$DIR/sleep.pid"; exec sleep 60'`
	for _, c := range []struct {
		name    string
		rest    string // the script after a start and a step record
		hook    bool   // stop through the hook's context, else ctx
		ownEnd  bool   // the observers get the run's end record
		wantErr error
	}{
		{"by the hook's context", honoursStop, true, true, nil},
		{"by ctx", honoursStop, false, false, context.Canceled},
		{"ignoring its STOP file", ignoresStop, true, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "sleep.pid")
			cmd := script(t, dir, `printf '`+startRecord+`\n' "`+now+`" > "$LOG"
printf '`+stepRecord+`\n' 1 >> "$LOG"`+c.rest)
			cmd.Env = append(cmd.Env, "DIR="+dir)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stop context.CancelFunc
			prev := train.SetRunHook(func(hctx context.Context, info train.RunInfo) (context.Context, train.Observer) {
				hctx, stop = context.WithCancel(hctx)
				return hctx, nil
			})
			defer func() { train.SetRunHook(prev) }()
			rec := &recorder{}
			go func() {
				for len(rec.events()) < 2 {
					time.Sleep(5 * time.Millisecond)
				}
				for {
					if _, err := os.Stat(pidFile); err == nil {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(50 * time.Millisecond)
				if c.hook {
					stop()
				} else {
					cancel()
				}
			}()
			start := time.Now()
			res, err := train.FollowCommand(ctx, cmd, dir, []train.Observer{rec})
			took := time.Since(start)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) || res.Reason != train.StopCancelled {
				t.Errorf("result %+v, error %v: want cancelled, error %v", res, err, c.wantErr)
			}
			if took > 5*time.Second {
				t.Errorf("took %v to stop", took)
			}
			b, _ := os.ReadFile(pidFile)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			waitFor(t, "the child's processes to end", func() bool { return pid > 0 && syscall.Kill(pid, 0) != nil })
			evs := rec.events()
			if last := evs[len(evs)-1]; last.Kind != train.EventEnd || last.Reason != train.StopCancelled || (last.Error == "") != c.ownEnd {
				t.Errorf("last event %+v (the run's own: %v)", last, c.ownEnd)
			}
			if c.rest == honoursStop {
				waitFor(t, "the run's end record", func() bool {
					evs, _ := train.ReadEvents(filepath.Join(dir, train.EventsFile))
					return len(evs) == 3 && evs[2].Kind == train.EventEnd
				})
			}
		})
	}
}

// KilnPath: KILN_BIN wins, and must be an executable file.
func TestKilnPath(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "kiln")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KILN_BIN", exe)
	if p, err := train.KilnPath(); err != nil || p != exe {
		t.Errorf("KilnPath() = %q, %v; want %q", p, err, exe)
	}
	t.Setenv("KILN_BIN", filepath.Dir(exe))
	if _, err := train.KilnPath(); err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Errorf("KILN_BIN naming a directory: %v", err)
	}
	t.Setenv("KILN_BIN", "")
	t.Setenv("PATH", t.TempDir())
	if _, err := train.KilnPath(); !errors.Is(err, train.ErrNoKiln) {
		t.Errorf("no kiln anywhere: %v, want ErrNoKiln", err)
	}
	t.Setenv("PATH", filepath.Dir(exe))
	if cmd, err := train.KilnCommand("demo", "-np", "2"); err != nil || cmd.Path != exe || strings.Join(cmd.Args[1:], " ") != "demo -np 2" {
		t.Errorf("KilnCommand: %v, %v", cmd, err)
	}
}

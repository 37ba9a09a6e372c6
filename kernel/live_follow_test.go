//go:build unix

package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
)

// A cell following a run that another process writes (here a goroutine of
// the test appending to its log) gets the live dashboard, titled with the
// run's ranks, updated while the log grows; its final render holds every
// step the log has.
func TestLiveDashboardFollowsAnotherProcess(t *testing.T) {
	s := newSession(t, kernel.Options{})
	dir := filepath.Join(t.TempDir(), "run")
	const steps = 40
	go func() {
		time.Sleep(100 * time.Millisecond) // the cell waits for the log
		os.MkdirAll(dir, 0o755)
		f, err := os.Create(filepath.Join(dir, "events.jsonl"))
		if err != nil {
			panic(err)
		}
		defer f.Close()
		now := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }
		fmt.Fprintf(f, `{"version":1,"kind":"start","time":%q,"epoch":0,"step":0,"config":{"epochs":1},"batches":%d,"world_size":2}`+"\n", now(), steps)
		for i := 1; i <= steps; i++ {
			time.Sleep(30 * time.Millisecond)
			fmt.Fprintf(f, `{"kind":"step","time":%q,"epoch":1,"step":%d,"split":"train","metrics":{"loss":%g},"batches":%d,"batch":%d}`+"\n",
				now(), i, 2/float64(i), steps, i)
		}
		fmt.Fprintf(f, `{"kind":"end","time":%q,"epoch":1,"step":%d,"reason":"completed"}`+"\n", now(), steps)
	}()
	rec := &recorder{}
	cell := fmt.Sprintf(`res, err := train.Follow(ctx, %q, nil)
if err != nil {
	panic(err)
}
fmt.Println("followed", res.Steps, "steps:", res.Reason)`, dir)
	if _, err := s.Execute(context.Background(), cell, rec); err != nil {
		t.Fatal(describe(err))
	}
	if stdout, _ := rec.out(); !strings.Contains(stdout, fmt.Sprintf("followed %d steps: completed", steps)) {
		t.Errorf("stdout %q", stdout)
	}
	msgs := dashboardMessages(t, rec)
	if len(msgs) < 3 {
		t.Errorf("%d dashboard messages over a %v run: want it updated while it ran", len(msgs), steps*30*time.Millisecond)
	}
	last := msgs[len(msgs)-1]
	if n := len(lossSeries(t, last)); n != steps {
		t.Errorf("final render holds %d loss points, want %d", n, steps)
	}
	html, _ := last.Data.Data[display.MIMETypeHTML].(string)
	if want := "following: " + dir + " · data-parallel, 2 ranks"; !strings.Contains(html, want) {
		t.Errorf("the dashboard's title is not %q", want)
	}
}

// Interrupting a cell that follows a command's run (train.FollowCommand)
// asks the run to stop with its STOP file: the run (a stand-in for kiln
// demo -np 2, with a "rank" child process) writes its final checkpoint and
// end record and exits, taking its rank along; the cell says where the
// final checkpoint is, shows the dashboard's final state, is interrupted,
// and the kernel stays usable.
func TestLiveDashboardInterruptStopsFollowedCommand(t *testing.T) {
	s := newSession(t, kernel.Options{})
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "rank.pid")
	// The command: a stand-in for kiln (cells cannot use os/exec; they run
	// kiln through train.KilnCommand, which KILN_BIN points here).
	fake := filepath.Join(t.TempDir(), "kiln")
	script := `#!/bin/sh
printf '{"version":1,"kind":"start","time":"2030-01-01T00:00:00Z","epoch":0,"step":0,"config":{"epochs":1},"world_size":2}\n' > "$1/events.jsonl"
printf '{"kind":"step","time":"2030-01-01T00:00:01Z","epoch":1,"step":1,"split":"train","metrics":{"loss":1}}\n' >> "$1/events.jsonl"
sleep 60 &
echo $! > "$1/rank.pid"
while [ ! -f "$1/STOP" ]; do sleep 0.02; done
rm "$1/STOP"
printf '{"kind":"checkpoint","time":"2030-01-01T00:00:02Z","epoch":0,"step":2,"path":"%s/checkpoints/final"}\n' "$1" >> "$1/events.jsonl"
printf '{"kind":"end","time":"2030-01-01T00:00:02Z","epoch":0,"step":2,"reason":"cancelled"}\n' >> "$1/events.jsonl"
kill $!
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KILN_BIN", fake)
	// The cell passes context.Background(): the interrupt reaches the run
	// through the session's run hook.
	cell := fmt.Sprintf(`cmd, err := train.KilnCommand(%q)
if err != nil {
	panic(err)
}
res, err := train.FollowCommand(context.Background(), cmd, %q, nil)
fmt.Println("not reached", res, err)`, dir, dir)
	rec := &recorder{}
	done := startRun(t, s, rec, cell)
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		t.Fatal("the command's rank never started")
	}
	interrupted := time.Now()
	s.Interrupt()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the cell still runs 20 s after the interrupt")
	}
	if !errors.Is(err, kernel.ErrInterrupted) {
		t.Fatalf("cell ended with %v, want an interrupt", describe(err))
	}
	t.Logf("the cell ended %v after the interrupt", time.Since(interrupted).Round(time.Millisecond))
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command's rank (pid %d) outlived the interrupt by 5 s", pid)
		}
	}
	stdout, stderr := rec.out()
	want := "the followed run stopped at the interrupt, at step 2 (cancelled); final checkpoint: " + dir + "/checkpoints/final"
	if !strings.Contains(stderr, want) || strings.Contains(stdout, "not reached") {
		t.Errorf("stdout %q\nstderr %q\nwant %q", stdout, stderr, want)
	}
	msgs := dashboardMessages(t, rec)
	if d, _ := msgs[len(msgs)-1].Data.Metadata["kiln_dashboard"].(map[string]any); d == nil || d["final"] != true {
		t.Errorf("the last dashboard message is not final: %v", d)
	}
	if got := run(t, s, "1 + 1"); got != "2" {
		t.Fatalf("after the interrupt: %q", got)
	}
}

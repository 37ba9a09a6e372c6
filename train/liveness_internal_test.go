package train

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// writeRun writes a run directory: events.jsonl with lines, and
// process.json with rec unless it is nil.
func writeRun(t *testing.T, lines string, rec *processRecord) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, EventsFile), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		if err := os.WriteFile(filepath.Join(dir, ProcessFile), rec.encode(0), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The judgement of a run whose log has no end record, with this machine,
// its processes, its locks and its clock faked.
func TestCheckRunningJudgesTheProcess(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	here := processRecord{Host: "here", BootID: "boot-1", PIDNS: "pid:[1]"}
	// rec is a record of process 100 on this machine, started at "5", with
	// a heartbeat 1 s old.
	rec := func(edit func(*processRecord)) *processRecord {
		p := &processRecord{Version: 1, PID: 100, Host: "here", BootID: "boot-1", PIDNS: "pid:[1]", ProcStart: "5",
			Locked: true, Started: now.Add(-time.Hour), Heartbeat: now.Add(-time.Second), State: processRunning}
		if edit != nil {
			edit(p)
		}
		return p
	}
	alive := func(start string) func(int) (procState, string) {
		return func(pid int) (procState, string) {
			if pid != 100 {
				return procGone, ""
			}
			return procAlive, start
		}
	}
	gone := func(int) (procState, string) { return procGone, "" }
	unknown := func(int) (procState, string) { return procUnknown, "" }
	probe := func(p lockProbe) func(string) lockProbe { return func(string) lockProbe { return p } }
	cases := []struct {
		name    string
		rec     *processRecord // nil: no process.json
		logAge  time.Duration  // of the log's modification time
		process func(int) (procState, string)
		probe   func(string) lockProbe
		want    LivenessState
		why     string // in Why
	}{
		{"running: the process holds its lock", rec(nil), time.Second, alive("5"), probe(lockHeld), LivenessRunning, "holds its lock"},
		{"killed: the pid is gone", rec(nil), time.Second, gone, probe(lockHeld), LivenessKilled, "process 100 was killed"},
		{"killed: the pid was reused by a process started later", rec(func(p *processRecord) { p.Locked = false }),
			time.Second, alive("6"), probe(lockUnknown), LivenessKilled, "pid now belongs to another process"},
		{"killed: the lock is free", rec(nil), time.Second, unknown, probe(lockFree), LivenessKilled, "no longer holds its lock"},
		{"running: no locks, the pid alive with its start time", rec(func(p *processRecord) { p.Locked = false }),
			time.Second, alive("5"), probe(lockFree), LivenessRunning, "is alive"},
		{"running: nothing checkable, a fresh heartbeat", rec(func(p *processRecord) { p.Locked = false }),
			time.Second, unknown, probe(lockUnknown), LivenessRunning, "heartbeat"},
		{"stale: nothing checkable, an old heartbeat", rec(func(p *processRecord) { p.Locked = false; p.Heartbeat = now.Add(-31 * time.Second) }),
			time.Second, unknown, probe(lockUnknown), LivenessStale, "no heartbeat for 31s"},
		{"running: another machine, a fresh heartbeat", rec(func(p *processRecord) { p.Host, p.BootID = "there", "boot-2" }),
			time.Minute, gone, probe(lockFree), LivenessRunning, "sent a heartbeat 1s ago"},
		{"running: another machine whose clock is ahead", rec(func(p *processRecord) { p.Host, p.BootID, p.Heartbeat = "there", "boot-2", now.Add(time.Minute) }),
			time.Minute, gone, probe(lockFree), LivenessRunning, "sent a heartbeat 0s ago"},
		{"stale: another machine, a heartbeat 31 s old", rec(func(p *processRecord) { p.Host, p.BootID, p.Heartbeat = "there", "boot-2", now.Add(-31*time.Second) }),
			time.Minute, gone, probe(lockFree), LivenessStale, "process 100 on there has sent no heartbeat for 31s"},
		{"stale: this host name, another boot", rec(func(p *processRecord) { p.BootID, p.Heartbeat = "boot-0", now.Add(-time.Hour) }),
			time.Hour, alive("5"), probe(lockHeld), LivenessStale, "no heartbeat for 1h0m0s"},
		{"killed: another pid namespace, the lock free", rec(func(p *processRecord) { p.PIDNS = "pid:[2]" }),
			time.Second, alive("5"), probe(lockFree), LivenessKilled, "no longer holds its lock"},
		{"running: another pid namespace, the lock held though the pid is unknown here", rec(func(p *processRecord) { p.PIDNS = "pid:[2]" }),
			time.Second, gone, probe(lockHeld), LivenessRunning, "holds its lock"},
		{"killed: ended without an end record", rec(func(p *processRecord) { p.State, p.Ended = processEnded, now.Add(-10*time.Second) }),
			20 * time.Second, alive("5"), probe(lockHeld), LivenessKilled, "ended without an end record"},
		{"running: the log changed after its process ended", rec(func(p *processRecord) { p.State, p.Ended = processEnded, now.Add(-10*time.Second) }),
			time.Second, gone, probe(lockFree), LivenessRunning, "earlier process"},
		{"running: no process.json, a fresh log", nil, 29 * time.Second, gone, probe(lockFree), LivenessRunning, "changed 29s ago"},
		{"stale: no process.json, a log 31 s old", nil, 31 * time.Second, gone, probe(lockFree), LivenessStale, "no record since"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeRun(t, `{"kind":"start"}`+"\n", c.rec)
			chk := LivenessChecker{Now: func() time.Time { return now }, process: c.process, probe: c.probe, self: &here}
			l := chk.CheckRunning(dir, now.Add(-c.logAge))
			if l.State != c.want || !strings.Contains(l.Why, c.why) {
				t.Fatalf("%s (%s), want %s (…%s…)", l.State, l.Why, c.want, c.why)
			}
			// (A record of a process that ended before the log changed
			// describes no process of the run.)
			if c.rec != nil && c.why != "earlier process" && (l.PID != 100 || l.Host != c.rec.Host || !l.Heartbeat.Equal(c.rec.Heartbeat)) {
				t.Errorf("process %d on %q, heartbeat %v; want the record's", l.PID, l.Host, l.Heartbeat)
			}
		})
	}
}

// StaleAfter moves the threshold.
func TestCheckRunningStaleAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	rec := &processRecord{Version: 1, PID: 100, Host: "there", Heartbeat: now.Add(-15 * time.Second), State: processRunning}
	dir := writeRun(t, `{"kind":"start"}`+"\n", rec)
	self := &processRecord{Host: "here"}
	clock := func() time.Time { return now }
	if l := (LivenessChecker{Now: clock, self: self}).CheckRunning(dir, now); l.State != LivenessRunning {
		t.Errorf("15 s old heartbeat, default threshold: %s (%s)", l.State, l.Why)
	}
	if l := (LivenessChecker{Now: clock, self: self, StaleAfter: 10 * time.Second}).CheckRunning(dir, now); l.State != LivenessStale {
		t.Errorf("15 s old heartbeat, 10 s threshold: %s (%s)", l.State, l.Why)
	}
}

// Check reads the log: its last end record, unless a start or resume
// record follows it, says how the run ended.
func TestCheckEndedRuns(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ended := &processRecord{Version: 1, PID: 100, Host: "here", Heartbeat: now, State: processEnded, Ended: now}
	gone := func(int) (procState, string) { return procGone, "" }
	cases := []struct {
		name   string
		log    string
		want   LivenessState
		reason StopReason
	}{
		{"completed", `{"kind":"start"}` + "\n" + `{"kind":"end","reason":"completed"}` + "\n", LivenessCompleted, StopCompleted},
		{"cancelled", `{"kind":"start"}` + "\n" + `{"kind":"end","reason":"cancelled"}` + "\n", LivenessStopped, StopCancelled},
		{"early stop", `{"kind":"start"}` + "\n" + `{"kind":"end","reason":"early_stop"}` + "\n", LivenessStopped, StopEarly},
		{"failed", `{"kind":"start"}` + "\n" + `{"kind":"end","reason":"failed","error":"boom"}` + "\n", LivenessFailed, StopFailed},
		{"resumed after its end, then killed", `{"kind":"start"}` + "\n" + `{"kind":"end","reason":"cancelled"}` + "\n" + `{"kind":"resume"}` + "\n", LivenessKilled, ""},
		{"killed mid-record", `{"kind":"start"}` + "\n" + `{"kind":"step","ste`, LivenessKilled, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeRun(t, c.log, ended)
			// The log was written before the process ended.
			old := now.Add(-time.Minute)
			os.Chtimes(filepath.Join(dir, EventsFile), old, old)
			l, err := LivenessChecker{Now: func() time.Time { return now }, process: gone, self: &processRecord{Host: "here"}}.Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			if l.State != c.want || l.Reason != c.reason || l.PID != 100 {
				t.Fatalf("%+v, want %s (%q) of process 100", l, c.want, c.reason)
			}
			if c.want == LivenessFailed && l.Error != "boom" {
				t.Errorf("error %q", l.Error)
			}
		})
	}
	if _, err := RunLiveness(t.TempDir()); err == nil {
		t.Error("a directory without events.jsonl has a liveness")
	}
}

// A record rewritten in place keeps its size, so that a reader never sees
// the tail of a longer one; and it reads back.
func TestProcessRecordRoundTrip(t *testing.T) {
	now := time.Now()
	p := processRecord{Version: 1, PID: 7, Host: strings.Repeat("h", 300), Heartbeat: now, State: processRunning}
	a := p.encode(0)
	p.Heartbeat, p.Ended, p.State = now.Add(time.Second), now, processEnded
	b := p.encode(len(a))
	if len(a) != len(b) || len(a)%processRecordSize != 0 || a[len(a)-1] != '\n' {
		t.Fatalf("sizes %d and %d", len(a), len(b))
	}
	path := filepath.Join(t.TempDir(), ProcessFile)
	os.WriteFile(path, b, 0o644)
	got, err := readProcessRecord(path)
	if err != nil || got.PID != 7 || got.State != processEnded || !got.Ended.Equal(now) {
		t.Fatalf("%+v, %v", got, err)
	}
	os.WriteFile(path, b[:100], 0o644)
	if _, err := readProcessRecord(path); err == nil {
		t.Error("a truncated record read back")
	}
}

// lockRun refuses a directory whose lock another open file holds, and
// takes it once that lets go; the record says who holds it.
func TestLockRunRefusesADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	first, err := lockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readProcessRecord(filepath.Join(dir, ProcessFile))
	if err != nil || rec.PID != os.Getpid() || rec.State != processRunning {
		t.Fatalf("%+v, %v", rec, err)
	}
	if !rec.Locked && (runtime.GOOS == "linux" || runtime.GOOS == "darwin") {
		t.Error("the process file is not locked")
	}
	if rec.Locked {
		if _, err := lockRun(dir); err == nil || !strings.Contains(err.Error(), "in use") {
			first.release()
			t.Fatalf("a second lock: %v", err)
		}
		if p := probeLock(filepath.Join(dir, ProcessFile)); p != lockHeld {
			t.Errorf("probe of a held lock: %v", p)
		}
	}
	first.release()
	if p := probeLock(filepath.Join(dir, ProcessFile)); rec.Locked && p != lockFree {
		t.Errorf("probe of a released lock: %v", p)
	}
	rec, _ = readProcessRecord(filepath.Join(dir, ProcessFile))
	if rec.State != processEnded || rec.Ended.IsZero() {
		t.Errorf("released record %+v", rec)
	}
	second, err := lockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	second.release()
}

// processState tells a live process (with its start time) from a zombie
// and from a reaped one.
func TestProcessState(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if st, start := processState(os.Getpid()); st != procAlive || start == "" {
		t.Fatalf("this process: %v %q", st, start)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	if st, _ := processState(pid); st != procAlive {
		t.Errorf("a sleeping child: %v", st)
	}
	cmd.Process.Kill()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if bytes.Contains(b, []byte(") Z ")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no zombie: %s", b)
		}
	}
	if st, _ := processState(pid); st != procGone {
		t.Errorf("a zombie: %v", st)
	}
	cmd.Wait()
	if st, _ := processState(pid); st != procGone {
		t.Errorf("a reaped child: %v", st)
	}
}

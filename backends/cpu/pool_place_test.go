package cpu

import (
	"runtime"
	"testing"
	"time"
)

// TestOnCallersCPU checks that a helper on the processor its caller handed
// the job out from leaves it, and one elsewhere (or where the processor is
// unknown, or with placeBlind) takes it.
func TestOnCallersCPU(t *testing.T) {
	defer placeBlind.Store(placeBlind.Load())
	placeBlind.Store(false)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if currentCPU() < 0 {
		if (&job{cpu: 0}).onCallersCPU() {
			t.Error("processor unknown: onCallersCPU reported true")
		}
		t.Skip("the processor a thread runs on is not known here")
	}
	same, elsewhere := false, false
	for range 100 { // the thread may move between the two reads
		same = same || (&job{cpu: currentCPU()}).onCallersCPU()
		elsewhere = elsewhere || !(&job{cpu: (currentCPU() + 1) % max(runtime.NumCPU(), 2)}).onCallersCPU()
	}
	if !same {
		t.Error("a job handed out on this thread's processor: onCallersCPU always reported false")
	}
	if !elsewhere {
		t.Error("a job handed out on another processor: onCallersCPU always reported true")
	}
	if (&job{cpu: -1}).onCallersCPU() {
		t.Error("processor unknown (-1): onCallersCPU reported true")
	}
	placeBlind.Store(true)
	if (&job{cpu: currentCPU()}).onCallersCPU() {
		t.Error("placeBlind: onCallersCPU reported true")
	}
}

// TestWorthWakingWeighsPlacement checks that, while a processor is spare
// and most woken helpers landed on their caller's processor, a job wakes
// a parked helper only once every rewakeEvery; and that it does wake one
// when no processor is spare, or with placeBlind.
func TestWorthWakingWeighsPlacement(t *testing.T) {
	defer placeBlind.Store(placeBlind.Load())
	defer latencyBlind.Store(latencyBlind.Load())
	latencyBlind.Store(false)
	var s site
	s.ser.Store(int64(time.Millisecond))
	for _, c := range []struct {
		name          string
		spare, blind  bool
		crowded       int64
		wantEveryTime bool
	}{
		{"spare, most wake-ups on the caller's processor", true, false, one * 3 / 4, false},
		{"spare, few wake-ups on the caller's processor", true, false, one / 4, true},
		{"no processor spare", false, false, one, true},
		{"placeBlind", true, true, one, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &pool{}
			p.wakeup.Store(int64(10 * time.Microsecond))
			p.spare.Store(c.spare)
			p.crowded.Store(c.crowded)
			placeBlind.Store(c.blind)
			now := int64(time.Hour)
			woke := 0
			for i := range 100 { // 100 jobs in 10 ms
				if p.worthWaking(&s, now+int64(i)*int64(100*time.Microsecond)) {
					woke++
				}
			}
			if c.wantEveryTime && woke != 100 || !c.wantEveryTime && woke != 1 {
				t.Errorf("woke for %d of 100 jobs in 10 ms; want %s", woke, map[bool]string{true: "all", false: "1"}[c.wantEveryTime])
			}
		})
	}
}

// TestParseRunnable reads the running count from /proc/loadavg lines.
func TestParseRunnable(t *testing.T) {
	for _, c := range []struct {
		line string
		want int
	}{
		{"0.52 0.58 0.59 3/467 12345\n", 3},
		{"21.96 10.01 6.45 14/170 8123", 14},
		{"0.00 0.00 0.00 1/1 1", 1},
		{"0.52 0.58 0.59 x/467 12345", -1},
		{"0.52 0.58", -1},
		{"", -1},
		{"0.52 0.58 0.59 12", -1},
	} {
		if got := parseRunnable([]byte(c.line)); got != c.want {
			t.Errorf("%q: %d, want %d", c.line, got, c.want)
		}
	}
	if n := runnableTasks(); runtime.GOOS == "linux" && n < 1 {
		t.Errorf("runnableTasks = %d on Linux, want at least 1 (this test)", n)
	}
	if a := testing.AllocsPerRun(10, func() { runnableTasks() }); a > 0 {
		t.Errorf("runnableTasks: %v allocations a call, want none (the pool calls it on its hot path)", a)
	}
}

// TestTunerTriesAfterFirstStall checks that a site whose first parallel
// run stalled (its ratio then maxStall) still tries parallel again, and
// returns to it when parallel pays.
func TestTunerTriesAfterFirstStall(t *testing.T) {
	var tu tuner
	const serial = 20 * time.Microsecond
	s := tu.site(siteKey(7, 100, 1, 0))
	s.recordParallel(maxStall*serial*2, serial, false)
	calls := 20 * exploreShare * maxCredit
	for i := range calls {
		par, try := s.choose()
		if !par {
			s.recordSerial(serial)
			continue
		}
		s.recordParallel(serial/2, serial, try)
		if !try {
			return // parallel again
		}
		if i == calls-1 {
			break
		}
	}
	t.Errorf("a site whose first parallel run stalled was not parallel again after %d calls", calls)
}

package cpu

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pinProcess sets the affinity of every thread of the process to set and
// returns a function that sets every thread's (threads made meanwhile
// included) to restore.
func pinProcess(t *testing.T, set, restore unix.CPUSet) func() {
	t.Helper()
	each := func(s unix.CPUSet) error {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &s); err != nil {
				return err
			}
		}
		return nil
	}
	if err := each(set); err != nil {
		each(restore)
		t.Skipf("setting the threads' affinity: %v", err)
	}
	return func() {
		if err := each(restore); err != nil {
			t.Errorf("restoring the threads' affinity: %v", err)
		}
	}
}

// TestPoolHelperOnCallersCPULeaves runs jobs with every thread of the
// process on one processor, a processor counted spare: each helper then
// runs on its caller's processor, so it must leave the job (and park)
// instead of taking turns with the caller, which runs every chunk exactly
// once.
func TestPoolHelperOnCallersCPULeaves(t *testing.T) {
	if currentCPU() < 0 || runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs the processor number and two processors")
	}
	defer placeBlind.Store(placeBlind.Load())
	placeBlind.Store(false)
	old := poolStats.Load()
	defer poolStats.Store(old)
	st := new(poolCounters)
	poolStats.Store(st)
	be := forcedBackend(2, forceParallel)
	be.pool.spare.Store(true)
	be.pool.limitAt.Store(int64(24 * time.Hour)) // no refreshLimit, which would sample the machine

	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Skipf("reading the affinity: %v", err)
	}
	one.Set(currentCPU())
	defer pinProcess(t, one, all)()

	const chunks = 64
	for range 20 {
		waitIdle(be)
		var runs [chunks]atomic.Int32
		within(t, 10*time.Second, func() {
			be.parallel(chunks, 1, func(lo, hi int) {
				runs[lo].Add(1)
				time.Sleep(10 * time.Microsecond)
			})
		})
		for i := range runs {
			if r := runs[i].Load(); r != 1 {
				t.Fatalf("chunk %d ran %d times", i, r)
			}
		}
	}
	if st.helped.Load() > 0 || st.shared.Load() == 0 {
		t.Errorf("helpers on their caller's processor: want every one to leave, none to run chunks: %v", st)
	}
}

// TestCurrentCPUMatchesGetcpu pins the test's thread to each processor in
// turn and checks that currentCPU names it, as the getcpu system call does.
func TestCurrentCPUMatchesGetcpu(t *testing.T) {
	if currentCPU() < 0 {
		t.Skip("no processor number here")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Skipf("reading the affinity: %v", err)
	}
	defer unix.SchedSetaffinity(0, &all)
	for c := range 1024 {
		if !all.IsSet(c) {
			continue
		}
		var one unix.CPUSet
		one.Set(c)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			t.Skipf("pinning to processor %d: %v", c, err)
		}
		switch got := currentCPU(); {
		case got < 0:
			// RDTSCP disagreed with getcpu (a hypervisor that does not keep
			// TSC_AUX per processor): the pool does without the number
			t.Skipf("pinned to processor %d: currentCPU turned itself off", c)
		case got != c:
			t.Errorf("pinned to processor %d, currentCPU says %d", c, got)
		}
	}
}

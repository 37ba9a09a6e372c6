package cpu

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// poolStats counts what the pool's jobs spend their time on, for
// measurements only (BenchmarkPoolBusy and the load harness
// TestPoolBusyTable in pool_busy_test.go): nil, the default, counts nothing, and
// each counting point costs one predictable branch.
var poolStats atomic.Pointer[poolCounters]

// poolCounters are the counts and times (ns) of poolStats.
type poolCounters struct {
	jobs       atomic.Int64 // dispatches of several chunks
	serial     atomic.Int64 // run serially by the tuner's choice
	tries      atomic.Int64 // parallel tries of a serial site
	alone      atomic.Int64 // parallel, but no helper took the job
	lateJoins  atomic.Int64 // helpers handed a job once it was running (pool.lead)
	woken      atomic.Int64 // parked helpers handed a job
	helped     atomic.Int64 // chunks run by helpers
	late       atomic.Int64 // helpers that left the last chunk to the caller
	shared     atomic.Int64 // helpers that left a job as they ran on its caller's processor (job.onCallersCPU)
	joinSpun   atomic.Int64 // joins that ended while spinning
	joinSlept  atomic.Int64 // joins that slept on the last chunk
	joinWait   atomic.Int64 // ns callers spent in join
	joinLong   atomic.Int64 // joins of more than a millisecond
	parWall    atomic.Int64 // ns of parallel jobs, wall
	parEst     atomic.Int64 // ns of the same jobs' serial estimates
	serialWall atomic.Int64 // ns of serial jobs
	wakes      atomic.Int64 // parked helpers that woke with a job
	wakeNs     atomic.Int64 // ns those took from the hand-off to their start
}

// String formats the counters on one line.
func (c *poolCounters) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "jobs %d serial %d tries %d alone %d late joins %d woken %d helped %d late %d shared %d join spun %d slept %d long %d wait %v",
		c.jobs.Load(), c.serial.Load(), c.tries.Load(), c.alone.Load(), c.lateJoins.Load(), c.woken.Load(), c.helped.Load(), c.late.Load(), c.shared.Load(),
		c.joinSpun.Load(), c.joinSlept.Load(), c.joinLong.Load(), time.Duration(c.joinWait.Load()))
	if e := c.parEst.Load(); e > 0 {
		fmt.Fprintf(&b, " par wall/est %.2f", float64(c.parWall.Load())/float64(e))
	}
	if w := c.wakes.Load(); w > 0 {
		fmt.Fprintf(&b, " wake %v", time.Duration(c.wakeNs.Load()/w))
	}
	fmt.Fprintf(&b, " par wall %v serial wall %v", time.Duration(c.parWall.Load()), time.Duration(c.serialWall.Load()))
	return b.String()
}

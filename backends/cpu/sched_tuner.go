package cpu

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// The tuner decides, for each call site of the pool and each size, whether
// a job is shared with the helpers or run on the calling goroutine alone.
// A static cost model (bytes or flops per chunk against a fork/join cost
// measured once) cannot know what the cores are doing now: on a machine to
// itself a 30 µs GEMM gains from a second core, and beside a busy process
// the same GEMM on two threads can wait milliseconds for a helper that the
// operating system descheduled in the middle of its chunk. So the tuner
// measures, in every parallel job, what sharing it cost: the wall time of
// the job against the time the caller alone would have taken, which the
// caller's own chunks tell (its time per chunk times the chunks). Both are
// measured in the same job, on the same loaded machine, so a busy machine
// slows both alike, and a helper woken too late to help merely does
// nothing (a ratio of about 1) rather than making parallel runs look bad.
// Only a helper that takes a chunk and then holds up the caller (it was
// descheduled, or the job is too small for a hand-off) raises the ratio.
//
// The measured speed-up is a ratio of sums, not an average of ratios: the
// moving average of the parallel wall times over the moving average of
// their serial estimates, over about the last 2^parShift jobs. What a
// stall costs is its length, so a helper descheduled for 5 ms once in 100
// jobs of 50 µs makes sharing twice as slow as running alone, however
// fast the other 99 were; an average of per-job ratios, each bounded,
// would call that a gain. A sample counts as at most maxStall times its
// estimate, so that one stall of a scheduler time slice moves the site to
// serial for a few dozen jobs (its exploration brings it back, below),
// not for thousands.
//
// A site runs in parallel while that ratio is at most serialAbove, else
// serially. A serial site tries parallel again when the credit it earns,
// 1/exploreShare of its run time, covers the expected extra cost of a try
// ((ratio-1) times its serial time), and the extra cost the try actually
// had is taken from the credit (which stops at maxCredit serial times); so
// tries cost at most about 1/exploreShare of the run time. A try that
// costs nothing leaves the credit for the next, so a site whose helper
// stops being held up (the load went away) tries again at once and
// returns to parallel within a hundred or so calls, while one whose tries
// stall tries again only as its credit grows back.
//
// Results never depend on the choice: a serial run goes through the same
// chunks in order.

// tunerSites is the number of sites a pool remembers (two-way
// set-associative; a site pushed out is measured again from scratch).
const tunerSites = 2048

// exploreShare bounds the time spent trying parallel on a serial site.
const exploreShare = 128

// Ratios are fixed-point, one = 1024: a site turns serial above
// serialAbove, a little above one, so that a site where sharing neither
// gains nor loses does not flip between the two on noise, but well below
// the 10% a 2-worker Backend may lose against a 1-worker one on a crowded
// machine. (The estimate of the serial time, the caller's chunks in a
// parallel run, errs on the high side when the workers compete for memory
// bandwidth, which makes sharing look better than it is; a threshold
// above one would add to that.) A parallel sample counts as at most
// maxStall times its serial estimate, the averages of parallel runs move
// by 1/2^parShift a sample, tries included, and a serial site's credit
// toward tries is at most maxCredit times its serial time.
const (
	one         = 1024
	serialAbove = one * 21 / 20
	maxStall    = 128
	parShift    = 6
	maxCredit   = 8
)

type tuner struct{ sites [tunerSites]site }

// site holds the measurements of one call site at one size. Updates are
// atomic but not transactional: two callers of one site may interleave,
// which only blurs the averages.
type site struct {
	key    atomic.Uint64
	par    atomic.Int64 // ns, moving average of parallel runs' wall times (bounded, see maxStall); 0: unknown
	est    atomic.Int64 // ns, moving average of the same runs' serial estimates; 0: unknown
	ser    atomic.Int64 // ns, moving average of the serial time (measured, or estimated in parallel runs); 0: unknown
	credit atomic.Int64 // ns earned toward trying parallel again
}

// siteKey combines a call site's code (or runner type), the job's size and
// chunk size and the magnitude of its cost into a tuner key (never 0).
func siteKey(code uintptr, n, grain, cost int) uint64 {
	k := mix64(uint64(code) ^ uint64(n)<<20 ^ uint64(grain)<<42 ^ uint64(bits.Len(uint(cost)))<<58)
	return k | 1
}

// mix64 is SplitMix64's finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// site returns key's site, making room for it (in the first way of its set,
// the other way keeping the previous first) when it is new.
func (t *tuner) site(key uint64) *site {
	i := int(key>>1) % (tunerSites / 2) * 2
	a, b := &t.sites[i], &t.sites[i+1]
	switch key {
	case a.key.Load():
		return a
	case b.key.Load():
		return b
	}
	b.key.Store(a.key.Load())
	b.par.Store(a.par.Load())
	b.est.Store(a.est.Load())
	b.ser.Store(a.ser.Load())
	b.credit.Store(a.credit.Load())
	a.key.Store(key)
	a.par.Store(0)
	a.est.Store(0)
	a.ser.Store(0)
	a.credit.Store(0)
	return a
}

// ratio returns the site's parallel wall time over its serial estimate
// (one = 1024), or 0 while unknown.
func (s *site) ratio() int64 {
	e := s.est.Load()
	if e <= 0 {
		return 0
	}
	return s.par.Load() * one / e
}

// choose reports whether the next job of s runs in parallel, and whether
// that is a try of parallel on a serial site.
func (s *site) choose() (par, try bool) {
	r := s.ratio()
	if r <= serialAbove { // unknown (0) included: parallel until measured
		return true, false
	}
	q := s.ser.Load()
	c := s.credit.Add(q / exploreShare)
	if c > maxCredit*q { // a long serial stretch buys a few tries, not a long run of slow ones
		s.credit.Store(maxCredit * q)
	}
	// A try is expected to cost (r-1)q, but no more than the credit can
	// hold: a site whose first parallel run stalled (its ratio then up to
	// maxStall) would otherwise never try again.
	if c < min(r-one, (maxCredit-1)*one)*q/one {
		return false, false
	}
	return true, true
}

// recordParallel adds a parallel run that took elapsed, where the caller's
// own chunks suggest the job takes estimate on the caller alone.
func (s *site) recordParallel(elapsed, estimate time.Duration, try bool) {
	if estimate <= 0 {
		return
	}
	e := min(max(int64(elapsed), 1), maxStall*int64(estimate))
	if try {
		s.credit.Add(-max(e-int64(estimate), 0))
	}
	follow(&s.par, e, parShift)
	follow(&s.est, int64(estimate), parShift)
	average(&s.ser, int64(estimate), 3)
}

// follow moves the moving average v toward x by 1/2^shift (to x when v is
// unknown, 0).
func follow(v *atomic.Int64, x int64, shift uint) {
	old := v.Load()
	if old == 0 {
		v.Store(x)
		return
	}
	v.Store(old + (x-old)>>shift)
}

// recordSerial adds a serial run that took elapsed.
func (s *site) recordSerial(elapsed time.Duration) {
	average(&s.ser, max(int64(elapsed), 1), 3)
}

// average moves the moving average v toward x, bounded to 8 times v, by
// 1/2^shift (to x when v is unknown, 0). A call on a crowded machine now
// and then waits tens of milliseconds for a core; bounded, such a sample
// moves the average as a real change would, but no further.
func average(v *atomic.Int64, x int64, shift uint) {
	old := v.Load()
	if old == 0 {
		v.Store(x)
		return
	}
	x = min(x, 8*old)
	v.Store(old + (x-old)>>shift)
}

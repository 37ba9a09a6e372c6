package benchpair

import (
	"slices"
	"testing"
	"time"
)

// Run calls run(true) and run(false) once each per benchmark iteration,
// the first of the two alternating between iterations, after warm calls
// of each that are not timed. It reports the best and the median time of
// each variant in milliseconds, as "<on>-best-ms", "<on>-median-ms" and
// the same for off, and the ratio of the medians as "<off>/<on>" (above 1:
// the on variant is faster). ns/op is reported as 0: an iteration is both
// variants.
func Run(b *testing.B, on, off string, warm int, run func(on bool) time.Duration) {
	for range warm {
		run(true)
		run(false)
	}
	var times [2][]time.Duration // on, off
	b.ResetTimer()
	for i := range b.N {
		for _, v := range []bool{i%2 == 0, i%2 != 0} {
			slot := 0
			if !v {
				slot = 1
			}
			times[slot] = append(times[slot], run(v))
		}
	}
	b.StopTimer()
	var med [2]float64
	for slot, name := range []string{on, off} {
		slices.Sort(times[slot])
		med[slot] = ms(times[slot][len(times[slot])/2])
		b.ReportMetric(ms(times[slot][0]), name+"-best-ms")
		b.ReportMetric(med[slot], name+"-median-ms")
	}
	b.ReportMetric(med[1]/med[0], off+"/"+on)
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

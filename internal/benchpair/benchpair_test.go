package benchpair

import (
	"testing"
	"time"
)

// TestRunAlternates checks that Run calls each variant b.N times after
// its warm-up, alternating which goes first.
func TestRunAlternates(t *testing.T) {
	var calls []bool
	res := testing.Benchmark(func(b *testing.B) {
		calls = calls[:0]
		Run(b, "fused", "unfused", 1, func(on bool) time.Duration {
			calls = append(calls, on)
			if on {
				return time.Millisecond
			}
			return 2 * time.Millisecond
		})
	})
	n := res.N
	if len(calls) != 2*n+2 {
		t.Fatalf("%d calls for N = %d, want %d", len(calls), n, 2*n+2)
	}
	for i := range n {
		first, second := calls[2+2*i], calls[3+2*i]
		if first != (i%2 == 0) || second == first {
			t.Fatalf("iteration %d ran %v then %v", i, first, second)
		}
	}
	if got := res.Extra["unfused/fused"]; got != 2 {
		t.Errorf("unfused/fused = %v, want 2", got)
	}
	if got := res.Extra["fused-best-ms"]; got != 1 {
		t.Errorf("fused-best-ms = %v, want 1", got)
	}
}

package kernel

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCellEndSnapshot measures a trivial cell in a session holding 100
// tensors, with and without the variables snapshot taken at its end (what
// Serve enables): the difference is the snapshot's cost per cell. Compare
// the two in one run: go test -run '^$' -bench CellEndSnapshot -count 5 ./kernel/
func BenchmarkCellEndSnapshot(b *testing.B) {
	s, err := New(Options{MemoryLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var code strings.Builder
	code.WriteString("dev := tensor.CPU()\n")
	for i := range 100 {
		fmt.Fprintf(&code, "t%02d := tensor.Full(dev, %d, %d, 3)\n", i, i, i+1)
	}
	if _, err := s.Execute(context.Background(), code.String(), nil); err != nil {
		b.Fatal(err)
	}
	for _, snapshot := range []bool{false, true} {
		b.Run(fmt.Sprintf("snapshot=%v", snapshot), func(b *testing.B) {
			s.vars.mu.Lock()
			s.vars.enabled = snapshot
			s.vars.mu.Unlock()
			for b.Loop() {
				if _, err := s.Execute(context.Background(), "_ = 0", nil); err != nil {
					b.Fatal(err)
				}
			}
			if snapshot && len(s.vars.snap.Variables) != 101 {
				b.Fatalf("the snapshot holds %d variables, want 101", len(s.vars.snap.Variables))
			}
		})
	}
}

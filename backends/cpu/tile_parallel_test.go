package cpu_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/kiln-ml/kiln/backends/cpu"
)

// TestParallelTilesCoversEachIndexOnce runs ParallelTiles on one and on
// several workers and requires every index run exactly once, in chunks
// whose boundaries depend only on n and grain.
func TestParallelTilesCoversEachIndexOnce(t *testing.T) {
	cases := []struct {
		name     string
		n, grain int
	}{
		{"one chunk", 5, 16},
		{"exact chunks", 64, 16},
		{"ragged last chunk", 1001, 7},
		{"grain below one is one", 10, 0},
		{"empty", 0, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var chunks [][2]int
			for _, workers := range []int{1, 4} {
				b := cpu.New(workers)
				hits := make([]int, tc.n)
				var mu sync.Mutex
				var got [][2]int
				b.ParallelTiles(tc.n, tc.grain, func(lo, hi int) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, [2]int{lo, hi})
					for i := lo; i < hi; i++ {
						hits[i]++
					}
				})
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("%d workers: index %d ran %d times", workers, i, h)
					}
				}
				slices.SortFunc(got, func(a, b [2]int) int { return a[0] - b[0] })
				if chunks == nil {
					chunks = got
				} else if !slices.Equal(chunks, got) {
					t.Fatalf("chunks on 4 workers %v, on 1 %v", got, chunks)
				}
			}
			want := max(tc.grain, 1)
			for _, c := range chunks {
				if c[1]-c[0] > want {
					t.Fatalf("chunk %v is longer than the grain %d", c, want)
				}
			}
		})
	}
}

// TestParallelTilesReraisesPanics checks that a panic in a chunk reaches
// the caller.
func TestParallelTilesReraisesPanics(t *testing.T) {
	b := cpu.New(3)
	defer func() {
		if r := recover(); r != "chunk 40" {
			t.Fatalf("recovered %v, want the chunk's panic", r)
		}
	}()
	b.ParallelTiles(100, 10, func(lo, hi int) {
		if lo == 40 {
			panic("chunk 40")
		}
	})
	t.Fatal("ParallelTiles returned after a panic")
}

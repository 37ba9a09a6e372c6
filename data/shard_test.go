package data_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/data"
)

// TestShardEveryItemOnce: over an epoch the shards of a seeded shuffle
// read every item exactly once, for world sizes that do and do not divide
// the data set's size, and the shards' sizes differ by at most one.
func TestShardEveryItemOnce(t *testing.T) {
	items := make([]data.Item, 11)
	for i := range items {
		items[i] = data.Item{X: []float32{float32(i)}, Label: int64(i)}
	}
	ds := data.NewInMemory(items)
	for _, tc := range []struct {
		name         string
		ranks, batch int
		shuffle      bool
	}{
		{"one rank", 1, 3, true},
		{"two ranks, uneven", 2, 3, true},
		{"three ranks, uneven", 3, 2, true},
		{"three ranks, in order", 3, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: tc.batch, Shuffle: tc.shuffle, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			for epoch := range 2 {
				full := l.Order(epoch)
				seen := make([]int, ds.Len())
				for r := range tc.ranks {
					s := l.Shard(r, tc.ranks)
					if got, want := len(s.Order(epoch)), data.ShardLen(ds.Len(), r, tc.ranks); got != want {
						t.Fatalf("rank %d: %d items, ShardLen says %d", r, got, want)
					}
					if n := len(s.Order(epoch)); n < ds.Len()/tc.ranks || n > ds.Len()/tc.ranks+1 {
						t.Errorf("rank %d: shard of %d items", r, n)
					}
					for k, i := range s.Order(epoch) { // dealt like cards from the one order
						if want := full[r+k*tc.ranks]; i != want {
							t.Fatalf("rank %d position %d: item %d, want %d", r, k, i, want)
						}
					}
					it := s.Iter(context.Background(), epoch)
					batches := 0
					for it.Next() {
						b := it.Batch()
						for k, i := range b.Indices {
							if int(b.Y.Int64s()[k]) != i {
								t.Fatalf("batch item %d labelled %d", i, b.Y.Int64s()[k])
							}
							seen[i]++
						}
						b.Release()
						batches++
					}
					if err := it.Err(); err != nil {
						t.Fatal(err)
					}
					if batches != s.Len() {
						t.Errorf("rank %d: %d batches, Len %d", r, batches, s.Len())
					}
				}
				for i, c := range seen {
					if c != 1 {
						t.Errorf("epoch %d: item %d read %d times across %d ranks", epoch, i, c, tc.ranks)
					}
				}
			}
		})
	}
}

// TestShardLeavesLoaderAlone: Shard returns a new loader; the original
// still reads the whole epoch.
func TestShardLeavesLoaderAlone(t *testing.T) {
	ds := data.NewInMemory(make([]data.Item, 5))
	l, _ := data.NewLoader(ds, data.LoaderConfig{BatchSize: 2})
	_ = l.Shard(1, 2)
	if got := l.Order(0); !slices.Equal(got, []int{0, 1, 2, 3, 4}) || l.Len() != 3 {
		t.Errorf("after Shard the loader reads %v in %d batches", got, l.Len())
	}
}

// TestShardPanicsOnBadRank: a rank outside the group is a programming error.
func TestShardPanicsOnBadRank(t *testing.T) {
	ds := data.NewInMemory(make([]data.Item, 5))
	l, _ := data.NewLoader(ds, data.LoaderConfig{})
	for _, c := range [][2]int{{2, 2}, {-1, 2}, {0, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Shard(%d, %d) did not panic", c[0], c[1])
				}
			}()
			l.Shard(c[0], c[1])
		}()
	}
}

package data_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// batchRecord is what a test compares of a batch: indices, X and Y values.
type batchRecord struct {
	Indices []int
	X       []float32
	Y       []int64
	Shape   []int
}

// collect runs one epoch from step and returns its batches, releasing them.
func collect(t *testing.T, l *data.DataLoader, epoch, step int) ([]batchRecord, error) {
	t.Helper()
	it := l.IterFrom(context.Background(), epoch, step)
	defer it.Close()
	var out []batchRecord
	for it.Next() {
		b := it.Batch()
		if b.Epoch != epoch || b.Step != step+len(out) {
			t.Errorf("batch says epoch %d step %d, want %d %d", b.Epoch, b.Step, epoch, step+len(out))
		}
		out = append(out, batchRecord{b.Indices, b.X.Float32s(), b.Y.Int64s(), b.X.Shape()})
		b.Release()
	}
	return out, it.Err()
}

func newLoader(t *testing.T, ds data.Dataset, cfg data.LoaderConfig) *data.DataLoader {
	t.Helper()
	l, err := data.NewLoader(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLoaderBatches(t *testing.T) {
	ds := numbers(10)
	for _, tc := range []struct {
		name  string
		cfg   data.LoaderConfig
		sizes []int
	}{
		{"keeps a short last batch", data.LoaderConfig{BatchSize: 4}, []int{4, 4, 2}},
		{"drops a short last batch", data.LoaderConfig{BatchSize: 4, DropLast: true}, []int{4, 4}},
		{"exact fit", data.LoaderConfig{BatchSize: 5, DropLast: true}, []int{5, 5}},
		{"batch larger than the data set", data.LoaderConfig{BatchSize: 64}, []int{10}},
		{"batch larger than the data set, dropped", data.LoaderConfig{BatchSize: 64, DropLast: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoader(t, ds, tc.cfg)
			got, err := collect(t, l, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var sizes, all []int
			for _, b := range got {
				sizes = append(sizes, len(b.Indices))
				all = append(all, b.Indices...)
				for k, i := range b.Indices {
					if b.Y[k] != int64(i) || b.X[2*k] != float32(i) || b.X[2*k+1] != float32(10*i) {
						t.Fatalf("batch row %d: x %v y %d, want item %d", k, b.X[2*k:2*k+2], b.Y[k], i)
					}
				}
				if !slices.Equal(b.Shape, []int{len(b.Indices), 2}) {
					t.Errorf("X shape %v", b.Shape)
				}
			}
			if !slices.Equal(sizes, tc.sizes) || l.Len() != len(tc.sizes) {
				t.Errorf("batch sizes %v (Len %d), want %v", sizes, l.Len(), tc.sizes)
			}
			if !slices.Equal(all, l.Order(0)[:len(all)]) || !slices.IsSorted(all) {
				t.Errorf("unshuffled order %v", all)
			}
		})
	}
}

func TestLoaderShufflePerEpoch(t *testing.T) {
	l := newLoader(t, numbers(50), data.LoaderConfig{BatchSize: 8, Shuffle: true, Seed: 11})
	e0, e1 := l.Order(0), l.Order(1)
	if !isPermutation(e0, 50) || !isPermutation(e1, 50) || slices.Equal(e0, e1) || slices.IsSorted(e0) {
		t.Errorf("epoch orders %v and %v, want distinct permutations", e0, e1)
	}
	if !slices.Equal(l.Order(1), e1) {
		t.Error("the order of an epoch changes between calls")
	}
	other := newLoader(t, numbers(50), data.LoaderConfig{BatchSize: 8, Shuffle: true, Seed: 12})
	if slices.Equal(other.Order(0), e0) {
		t.Error("seeds 11 and 12 give one order")
	}
}

// slow wraps a data set so that Get takes a moment, reordering workers.
type slow struct {
	data.Dataset
	d time.Duration
}

func (s slow) Get(i int) (data.Item, error) {
	time.Sleep(time.Duration(i%3) * s.d)
	return s.Dataset.Get(i)
}

func TestLoaderWorkersDeterministic(t *testing.T) {
	ds := slow{numbers(103), 100 * time.Microsecond}
	var want []batchRecord
	for _, workers := range []int{1, 4, 7} {
		l := newLoader(t, ds, data.LoaderConfig{BatchSize: 10, Shuffle: true, Seed: 3, Workers: workers, Prefetch: 3})
		for epoch := range 2 {
			got, err := collect(t, l, epoch, 0)
			if err != nil {
				t.Fatal(err)
			}
			if workers == 1 {
				want = append(want, got...)
				continue
			}
			if off := epoch * 11; fmt.Sprint(got) != fmt.Sprint(want[off:off+11]) {
				t.Errorf("%d workers, epoch %d: batches differ from 1 worker's", workers, epoch)
			}
		}
	}
}

func TestLoaderResume(t *testing.T) {
	l := newLoader(t, numbers(37), data.LoaderConfig{BatchSize: 5, Shuffle: true, Seed: 9, Workers: 3})
	full, err := collect(t, l, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Stop after 3 batches, note the position, resume from it.
	it := l.Iter(context.Background(), 4)
	for range 3 {
		if !it.Next() {
			t.Fatal(it.Err())
		}
		it.Batch().Release()
	}
	epoch, step := it.Position()
	it.Close()
	if epoch != 4 || step != 3 {
		t.Fatalf("Position() = %d, %d; want 4, 3", epoch, step)
	}
	rest, err := collect(t, l, epoch, step)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rest) != fmt.Sprint(full[3:]) {
		t.Errorf("resumed batches %v\nwant %v", rest, full[3:])
	}
	if past, err := collect(t, l, 4, 100); err != nil || len(past) != 0 {
		t.Errorf("IterFrom past the end: %d batches, error %v", len(past), err)
	}
}

// failAt is a data set whose item bad cannot be read, or panics.
type failAt struct {
	data.Dataset
	bad   int
	panic bool
}

var errBroken = errors.New("broken item")

func (f failAt) Get(i int) (data.Item, error) {
	if i == f.bad {
		if f.panic {
			panic("kaboom")
		}
		return data.Item{}, errBroken
	}
	return f.Dataset.Get(i)
}

func TestLoaderErrors(t *testing.T) {
	ragged := data.NewInMemory([]data.Item{{X: []float32{1, 2}}, {X: []float32{1, 2}}, {X: []float32{3}}})
	for _, tc := range []struct {
		name     string
		ds       data.Dataset
		index    int
		want     error
		text     string
		atLeast  int // batches delivered before the error
		batchErr bool
	}{
		{"item error names its index", failAt{numbers(40), 23, false}, 23, errBroken, "item 23", 0, false},
		{"a panicking Get becomes an error", failAt{numbers(40), 5, true}, 5, nil, "kaboom", 0, false},
		{"ragged batch fails in the Batcher", ragged, -1, nil, "item 1 of the batch", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, workers := range []int{1, 4} {
				l := newLoader(t, tc.ds, data.LoaderConfig{BatchSize: 2, Shuffle: true, Seed: 1, Workers: workers})
				got, err := collect(t, l, 0, 0)
				var ie *data.ItemError
				if !errors.As(err, &ie) {
					t.Fatalf("%d workers: error %v, want an *ItemError", workers, err)
				}
				if ie.Index != tc.index || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
					t.Errorf("%d workers: error %v (index %d), want index %d, %q", workers, err, ie.Index, tc.index, tc.text)
				}
				if ie.Step != len(got) {
					t.Errorf("error at step %d after %d batches", ie.Step, len(got))
				}
				if tc.index >= 0 {
					pos := slices.Index(l.Order(0), tc.index)
					if len(got) != pos/2 {
						t.Errorf("%d batches before the error, want %d", len(got), pos/2)
					}
				}
			}
		})
	}
}

// blocking is a data set whose Get of items from 8 on waits until
// release is closed.
type blocking struct {
	data.Dataset
	release chan struct{}
}

func (b blocking) Get(i int) (data.Item, error) {
	if i >= 8 {
		<-b.release
	}
	return b.Dataset.Get(i)
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLoaderCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("cancel while the consumer waits", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		release := make(chan struct{})
		l := newLoader(t, blocking{numbers(100), release}, data.LoaderConfig{BatchSize: 4, Workers: 4, Prefetch: 4})
		it := l.Iter(ctx, 0)
		n := 0
		for it.Next() {
			it.Batch().Release()
			if n++; n == 2 {
				go func() { // batches built after the cancellation are never delivered
					time.Sleep(10 * time.Millisecond)
					cancel()
					close(release)
				}()
			}
		}
		if !errors.Is(it.Err(), context.Canceled) || n != 2 {
			t.Errorf("after %d batches, error %v; want 2 batches then context.Canceled", n, it.Err())
		}
	})
	waitGoroutines(t, before)
	t.Run("Close with batches prefetched", func(t *testing.T) {
		l := newLoader(t, numbers(1000), data.LoaderConfig{BatchSize: 4, Workers: 4, Prefetch: 8})
		it := l.Iter(context.Background(), 0)
		if !it.Next() {
			t.Fatal(it.Err())
		}
		time.Sleep(5 * time.Millisecond) // let workers fill the queue
		it.Close()
		it.Close()
		if it.Next() || it.Err() != nil {
			t.Errorf("Next after Close is true or Err %v", it.Err())
		}
	})
	waitGoroutines(t, before)
	t.Run("cancelled before starting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l := newLoader(t, numbers(10), data.LoaderConfig{Workers: 3})
		it := l.Iter(ctx, 0)
		for it.Next() {
			it.Batch().Release()
		}
		if !errors.Is(it.Err(), context.Canceled) {
			// A batch may already have been ready; the end must still be the cancellation.
			t.Errorf("Err %v, want context.Canceled", it.Err())
		}
	})
	waitGoroutines(t, before)
}

// regressionBatcherCheck: items with Target batch into a Float32 [B, T] y.
func TestStackBatcherTargets(t *testing.T) {
	dev := tensor.CPU()
	items := []data.Item{
		{X: []float32{1, 2, 3, 4}, Shape: []int{2, 2}, Target: []float32{0.5}},
		{X: []float32{5, 6, 7, 8}, Shape: []int{2, 2}, Target: []float32{1.5}},
	}
	x, y, err := data.StackBatcher{}.Batch(items, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	defer y.Release()
	if !slices.Equal(x.Shape(), []int{2, 2, 2}) || !slices.Equal(y.Shape(), []int{2, 1}) || y.DType() != tensor.Float32 {
		t.Errorf("x %v, y %v %v", x.Shape(), y.Shape(), y.DType())
	}
	if !slices.Equal(y.Float32s(), []float32{0.5, 1.5}) || !slices.Equal(x.Float32s(), []float32{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("values x %v y %v", x.Float32s(), y.Float32s())
	}
	items[1].Target = nil
	if _, _, err := (data.StackBatcher{}).Batch(items, dev); err == nil {
		t.Error("mixing items with and without targets did not fail")
	}
	if _, err := data.NewLoader(numbers(1), data.LoaderConfig{BatchSize: -1}); err == nil {
		t.Error("a negative batch size did not fail")
	}
}

func TestLoaderAbandonedIterator(t *testing.T) {
	before := runtime.NumGoroutine()
	l := newLoader(t, numbers(1000), data.LoaderConfig{BatchSize: 2, Workers: 3})
	func() {
		it := l.Iter(context.Background(), 0)
		if !it.Next() {
			t.Fatal(it.Err())
		}
		it.Batch().Release()
		// dropped without Close
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	waitGoroutines(t, before)
}

// On the strict backend (asynchronous, leak-tracking), batches built by
// workers are valid on the consumer's goroutine, and an early Close
// releases the batches prefetched but never delivered.
func TestLoaderDevices(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		l := newLoader(t, numbers(64), data.LoaderConfig{BatchSize: 4, Workers: 4, Prefetch: 8, Device: dev, Shuffle: true})
		it := l.Iter(context.Background(), 0)
		for it.Next() {
			b := it.Batch()
			if b.X.Device() != dev {
				t.Fatalf("batch on %v, want %v", b.X.Device(), dev)
			}
			y := b.Y.Int64s()
			for k, i := range b.Indices {
				if y[k] != int64(i) {
					t.Fatalf("y %v for indices %v", y, b.Indices)
				}
			}
			b.Release()
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		it = l.Iter(context.Background(), 1)
		if !it.Next() {
			t.Fatal(it.Err())
		}
		it.Batch().Release()
		time.Sleep(5 * time.Millisecond) // let the workers fill the queue
		it.Close()
	})
}

func TestLoaderEmpty(t *testing.T) {
	l := newLoader(t, numbers(0), data.LoaderConfig{Shuffle: true, Workers: 2})
	if got, err := collect(t, l, 0, 0); len(got) != 0 || err != nil || l.Len() != 0 {
		t.Errorf("empty data set: %d batches (Len %d), error %v", len(got), l.Len(), err)
	}
}

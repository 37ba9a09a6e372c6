package data

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/kiln-ml/kiln/tensor"
)

// Batch is one mini-batch as a DataLoader delivers it. X and Y live on the
// loader's device and belong to no tensor.Scope (workers create them on
// their own goroutines, and scopes are per goroutine): call Release when
// done with them, or Keep nothing and let the finalizer reclaim them later.
type Batch struct {
	X, Y    *tensor.Tensor
	Indices []int // the data set indices of the batch's items, in order
	Epoch   int
	Step    int // position of the batch within its epoch, from 0
}

// Release frees X and Y. Calling it twice is harmless.
func (b *Batch) Release() {
	b.X.Release()
	b.Y.Release()
}

// Batcher turns the items of one batch into tensors on dev. It runs on
// worker goroutines and must be safe for concurrent use; it returns an
// error (never panics) for items it cannot stack.
type Batcher interface {
	Batch(items []Item, dev tensor.Device) (x, y *tensor.Tensor, err error)
}

// StackBatcher stacks items of equal shape: x is Float32 [B, shape...];
// y is Int64 [B] of the labels, or, when the items carry Target, Float32
// [B, len(Target)]. It is the default Batcher.
type StackBatcher struct{}

// Batch stacks items; it returns an error naming the position of the first
// item whose shape or target length differs from the first item's.
func (StackBatcher) Batch(items []Item, dev tensor.Device) (x, y *tensor.Tensor, err error) {
	if len(items) == 0 {
		return nil, nil, errors.New("data: StackBatcher: no items")
	}
	shape := items[0].XShape()
	n := 1
	for _, d := range shape {
		n *= d
	}
	regress := items[0].Target != nil
	nt := len(items[0].Target)
	xs := make([]float32, 0, n*len(items))
	var labels []int64
	var targets []float32
	for k, it := range items {
		if !sameShape(shape, it.XShape()) || len(it.X) != n {
			return nil, nil, fmt.Errorf("data: StackBatcher: item %d of the batch has shape %v (%d values), item 0 has %v",
				k, it.XShape(), len(it.X), shape)
		}
		if (it.Target != nil) != regress || len(it.Target) != nt {
			return nil, nil, fmt.Errorf("data: StackBatcher: item %d of the batch has %d targets, item 0 has %d",
				k, len(it.Target), nt)
		}
		xs = append(xs, it.X...)
		if regress {
			targets = append(targets, it.Target...)
		} else {
			labels = append(labels, it.Label)
		}
	}
	err = tensor.Try(func() {
		x = tensor.FromFloat32s(dev, xs, append([]int{len(items)}, shape...)...)
		if regress {
			y = tensor.FromFloat32s(dev, targets, len(items), nt)
		} else {
			y = tensor.FromInt64s(dev, labels, len(items))
		}
	})
	if err != nil {
		x.Release()
		return nil, nil, err
	}
	return x, y, nil
}

// LoaderConfig configures a DataLoader. The zero value of each field is a
// usable default.
type LoaderConfig struct {
	BatchSize int           // items per batch; 0 means 32
	Shuffle   bool          // reshuffle every epoch, from Seed and the epoch number
	Seed      uint64        // shuffling seed
	DropLast  bool          // drop a last batch smaller than BatchSize
	Workers   int           // background goroutines reading items and building batches; 0 means 1
	Prefetch  int           // batches ready or being built ahead of the consumer; 0 means 2·Workers
	Device    tensor.Device // where batches are created; the zero Device means tensor.CPU()
	Batcher   Batcher       // nil means StackBatcher{}
}

// DataLoader reads a Dataset in mini-batches on background goroutines.
// The batches of an epoch depend only on the data set, BatchSize,
// DropLast, Shuffle, Seed and the epoch number, never on Workers or
// timing, so a run can be resumed exactly from (epoch, step).
type DataLoader struct {
	ds  Dataset
	cfg LoaderConfig
	// rank and ranks select a shard (see Shard); ranks 0 means none.
	rank, ranks int
}

// NewLoader returns a DataLoader over ds. It returns an error for a
// negative BatchSize, Workers or Prefetch.
func NewLoader(ds Dataset, cfg LoaderConfig) (*DataLoader, error) {
	if cfg.BatchSize < 0 || cfg.Workers < 0 || cfg.Prefetch < 0 {
		return nil, fmt.Errorf("data: NewLoader: BatchSize %d, Workers %d and Prefetch %d must not be negative",
			cfg.BatchSize, cfg.Workers, cfg.Prefetch)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 32
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.Prefetch == 0 {
		cfg.Prefetch = 2 * cfg.Workers
	}
	if cfg.Device == (tensor.Device{}) {
		cfg.Device = tensor.CPU()
	}
	if cfg.Batcher == nil {
		cfg.Batcher = StackBatcher{}
	}
	return &DataLoader{ds: ds, cfg: cfg}, nil
}

// Shard returns a loader over rank's share of every epoch, for
// data-parallel training on ranks processes: each epoch's order (the one
// seeded shuffle every rank computes alike, or 0, 1, 2, …) is dealt out
// like cards, rank r taking positions r, r+ranks, r+2·ranks, …, so that
// across the ranks every item is read exactly once per epoch. When the
// data set's size does not divide by ranks, the first (size mod ranks)
// ranks get one item more; nothing is repeated or dropped. Batches are
// then cut from the shard as usual (BatchSize, DropLast). l itself is
// unchanged. Shard panics when ranks < 1 or rank is outside [0, ranks),
// or l is already a shard: both are programming errors.
func (l *DataLoader) Shard(rank, ranks int) *DataLoader {
	if ranks < 1 || rank < 0 || rank >= ranks || l.ranks != 0 {
		panic(fmt.Sprintf("data: Shard(%d, %d) of a loader sharded %d ways", rank, ranks, l.ranks))
	}
	return &DataLoader{ds: l.ds, cfg: l.cfg, rank: rank, ranks: ranks}
}

// ShardLen returns the number of items of rank's shard when n items are
// dealt out to ranks ranks as Shard does: ⌈n/ranks⌉ for the first (n mod
// ranks) ranks, ⌊n/ranks⌋ for the others.
func ShardLen(n, rank, ranks int) int {
	c := n / ranks
	if rank < n%ranks {
		c++
	}
	return c
}

// Len returns the number of batches in an epoch (of the shard, for a
// loader Shard returned).
func (l *DataLoader) Len() int {
	n := l.ds.Len()
	if l.ranks > 0 {
		n = ShardLen(n, l.rank, l.ranks)
	}
	if l.cfg.DropLast {
		return n / l.cfg.BatchSize
	}
	return (n + l.cfg.BatchSize - 1) / l.cfg.BatchSize
}

// Order returns the data set indices of epoch's items in the order the
// loader reads them: a permutation derived from (Seed, epoch) when
// Shuffle is set, else 0, 1, 2, …; for a loader Shard returned, its
// rank's share of that order.
func (l *DataLoader) Order(epoch int) []int {
	n := l.ds.Len()
	var idx []int
	if l.cfg.Shuffle {
		idx = rng(l.cfg.Seed, uint64(epoch)).Perm(n)
	} else {
		idx = make([]int, n)
		for i := range idx {
			idx[i] = i
		}
	}
	if l.ranks > 0 {
		shard := make([]int, 0, ShardLen(n, l.rank, l.ranks))
		for i := l.rank; i < n; i += l.ranks {
			shard = append(shard, idx[i])
		}
		idx = shard
	}
	return idx
}

// ItemError is the error of a batch whose item could not be read or
// batched: Index is the item's index in the data set the loader reads (for
// a Shuffle or Subset, an index into it, not into its base; −1 when the
// Batcher failed for the batch as a whole), Epoch and Step the batch's
// position.
type ItemError struct {
	Index       int
	Epoch, Step int
	Err         error
}

func (e *ItemError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("data: epoch %d step %d: %v", e.Epoch, e.Step, e.Err)
	}
	return fmt.Sprintf("data: epoch %d step %d: item %d: %v", e.Epoch, e.Step, e.Index, e.Err)
}

func (e *ItemError) Unwrap() error { return e.Err }

// Iter returns an iterator over the batches of epoch, from its first.
// See IterFrom.
func (l *DataLoader) Iter(ctx context.Context, epoch int) *Iterator { return l.IterFrom(ctx, epoch, 0) }

type result struct {
	b   *Batch
	err error
}

// Iterator delivers the batches of one epoch in order:
//
//	it := loader.Iter(ctx, epoch)
//	defer it.Close()
//	for it.Next() {
//		b := it.Batch()
//		… // use b.X, b.Y, then b.Release()
//	}
//	if err := it.Err(); err != nil { … }
//
// Its workers stop, and every goroutine it started ends, when the epoch is
// done, on the first error, when ctx is cancelled, or on Close. An
// Iterator dropped without any of these is stopped when the garbage
// collector finds it unreachable (batches it had prefetched are then left
// to the tensors' finalizers); call Close to stop it at once.
type Iterator struct {
	l        *DataLoader
	epoch    int
	step     int // index of the next batch Next will deliver
	cur      *Batch
	err      error
	finished bool
	p        *pipe
}

// pipe is what an Iterator's goroutines share. They never refer to the
// Iterator itself, so an Iterator dropped without Close becomes garbage,
// and its cleanup cancels them.
type pipe struct {
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan chan result
	wg     sync.WaitGroup
}

// IterFrom returns an iterator over the batches of epoch starting at batch
// step (0-based), exactly the batches Iter(ctx, epoch) would deliver from
// that point: use it to resume from a checkpoint's Position. A step past
// the end gives an empty iteration; a negative one is treated as 0.
func (l *DataLoader) IterFrom(ctx context.Context, epoch, step int) *Iterator {
	step = max(step, 0)
	ctx, cancel := context.WithCancel(ctx)
	p := &pipe{ctx: ctx, cancel: cancel, queue: make(chan chan result, l.cfg.Prefetch)}
	it := &Iterator{l: l, epoch: epoch, step: step, p: p}
	runtime.AddCleanup(it, func(cancel context.CancelFunc) { cancel() }, cancel)
	order := l.Order(epoch)
	nb := l.Len()
	type job struct {
		step int
		out  chan result
	}
	jobs := make(chan job)
	p.wg.Add(1 + l.cfg.Workers)
	go func() { // dispatcher: hands steps to workers and queues their results in order
		defer p.wg.Done()
		defer close(jobs)
		defer close(p.queue)
		for s := step; s < nb; s++ {
			j := job{s, make(chan result, 1)}
			select { // the queue's capacity bounds the batches in flight
			case p.queue <- j.out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range l.cfg.Workers {
		go func() {
			defer p.wg.Done()
			for j := range jobs {
				lo := j.step * l.cfg.BatchSize
				idx := order[lo:min(lo+l.cfg.BatchSize, len(order))]
				j.out <- l.build(epoch, j.step, idx) // buffered: never blocks
			}
		}()
	}
	return it
}

// build reads the items at idx and batches them.
func (l *DataLoader) build(epoch, step int, idx []int) result {
	items := make([]Item, len(idx))
	for k, i := range idx {
		it, err := getSafe(l.ds, i)
		if err != nil {
			return result{err: &ItemError{Index: i, Epoch: epoch, Step: step, Err: err}}
		}
		items[k] = it
	}
	var x, y *tensor.Tensor
	var err error
	if perr := tensor.Try(func() { x, y, err = l.cfg.Batcher.Batch(items, l.cfg.Device) }); perr != nil {
		err = perr
	}
	if err != nil {
		return result{err: &ItemError{Index: -1, Epoch: epoch, Step: step, Err: err}}
	}
	return result{b: &Batch{X: x, Y: y, Indices: append([]int(nil), idx...), Epoch: epoch, Step: step}}
}

// getSafe calls ds.Get, turning a panic into an error so that a faulty
// Dataset cannot take down the process from a worker goroutine.
func getSafe(ds Dataset, i int) (it Item, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in Get: %v", r)
		}
	}()
	return ds.Get(i)
}

// Next waits for the next batch and reports whether there is one. It
// returns false at the end of the epoch, on an error (see Err) or when the
// context is cancelled; the iterator is then closed.
func (it *Iterator) Next() bool {
	it.cur = nil
	if it.finished {
		return false
	}
	var out chan result
	var ok bool
	select {
	case out, ok = <-it.p.queue:
	case <-it.p.ctx.Done():
	}
	if !ok {
		it.finish(it.p.ctx.Err())
		return false
	}
	var r result
	select {
	case r = <-out:
	case <-it.p.ctx.Done():
		it.finish(it.p.ctx.Err())
		return false
	}
	if err := it.p.ctx.Err(); err != nil { // cancelled while this batch was built: deliver nothing more
		if r.b != nil {
			r.b.Release()
		}
		it.finish(err)
		return false
	}
	if r.err != nil {
		it.finish(r.err)
		return false
	}
	it.cur = r.b
	it.step++
	return true
}

// finish records err (if none yet), stops the goroutines, waits for them
// and releases batches built but never delivered.
func (it *Iterator) finish(err error) {
	if it.finished {
		return
	}
	it.finished = true
	if it.err == nil && err != nil {
		it.err = err
	}
	it.p.cancel()
	it.p.wg.Wait()
	for out := range it.p.queue { // closed by the dispatcher, which has ended
		select {
		case r := <-out:
			if r.b != nil {
				r.b.Release()
			}
		default:
		}
	}
}

// Batch returns the batch the last successful Next delivered.
func (it *Iterator) Batch() *Batch { return it.cur }

// Err returns the error that ended the iteration: an *ItemError naming the
// item's index, or the context's error; nil after a complete epoch or a
// Close.
func (it *Iterator) Err() error { return it.err }

// Close stops the iteration early and waits for its goroutines to end.
// Closing twice, or after the end, is harmless.
func (it *Iterator) Close() { it.finish(nil) }

// Position returns the epoch and the step of the next batch Next would
// deliver: store it in a checkpoint and pass it to IterFrom to resume.
func (it *Iterator) Position() (epoch, step int) { return it.epoch, it.step }

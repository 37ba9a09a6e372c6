package train

import (
	"fmt"

	"github.com/kiln-ml/kiln/dist"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// BucketBytes is the size gradient buckets grow to before they are
// all-reduced in data-parallel training: PyTorch DDP's default, 25 MiB.
const BucketBytes = 25 << 20

// bucketLimit is BucketBytes, smaller in tests.
var bucketLimit = BucketBytes

// buckets groups the trainable parameters of a model for the gradient
// all-reduce: in the reverse of nn.TrainableParams' order (the order in
// which backward passes finish their gradients, roughly), as many
// consecutive parameters per bucket as fit in BucketBytes (at least one).
// Every rank builds the same buckets from the same model.
type buckets struct {
	params  []*tensor.Tensor // distinct trainable parameter tensors
	names   []string
	of      []int   // bucket of params[i]
	members [][]int // params of each bucket, in the order they are packed
}

// newBuckets builds the buckets of model with buckets of limit bytes.
func newBuckets(model any, limit int) *buckets {
	b := &buckets{}
	seen := map[*tensor.Tensor]bool{}
	list := nn.TrainableParams(model)
	for i := len(list) - 1; i >= 0; i-- {
		np := list[i]
		if np.Param == nil || np.Param.Tensor == nil || seen[np.Param.Tensor] {
			continue
		}
		seen[np.Param.Tensor] = true
		b.params = append(b.params, np.Param.Tensor)
		b.names = append(b.names, np.Name)
	}
	b.of = make([]int, len(b.params))
	size := 0
	for i, p := range b.params {
		n := p.NumElements() * p.DType().Size()
		if len(b.members) == 0 || size > 0 && size+n > limit {
			b.members = append(b.members, nil)
			size = 0
		}
		k := len(b.members) - 1
		b.members[k] = append(b.members[k], i)
		b.of[i] = k
		size += n
	}
	return b
}

// reduction is one step's gradient all-reduce in flight: buckets are
// packed (scaled by the step's weight) on the training goroutine as soon
// as their last gradient is final, and all-reduced with dist.Mean in
// bucket order by a goroutine of their own while the backward pass goes
// on; finish waits for them and unpacks the results into the gradients.
type reduction struct {
	b       *buckets
	comm    dist.Communicator
	weight  float64
	grads   []*tensor.Tensor // announced gradient of each parameter
	pending []int            // gradients each bucket still waits for
	next    int              // the next bucket to start, in order
	flat    []*tensor.Tensor // packed bucket, nil where not started or empty
	jobs    chan int
	done    chan error
	closed  bool // jobs closed: finish or abandon ran
}

// startReduction readies the all-reduce of one step's gradients, to be fed
// by BackwardNotify (final) and completed by finish.
func (r *run) startReduction(weight float64) *reduction {
	if r.buckets == nil {
		r.buckets = newBuckets(r.l.Model, bucketLimit)
	}
	b := r.buckets
	red := &reduction{b: b, comm: r.comm, weight: weight, grads: make([]*tensor.Tensor, len(b.params)),
		pending: make([]int, len(b.members)), flat: make([]*tensor.Tensor, len(b.members)),
		jobs: make(chan int, len(b.members)), done: make(chan error, 1)}
	for k, m := range b.members {
		red.pending[k] = len(m)
	}
	go func() {
		var first error
		for k := range red.jobs {
			if first != nil {
				continue // the communicator is broken: drain
			}
			if err := red.comm.AllReduce(red.flat[k], dist.Mean); err != nil {
				first = fmt.Errorf("all-reducing gradient bucket %d of %d (%s…): %w", k+1, len(b.members), b.names[b.members[k][0]], err)
			}
		}
		red.done <- first
	}()
	return red
}

// final records that parameter i's gradient g is final, and starts every
// bucket, in order, whose gradients are now all final.
func (red *reduction) final(i int, g *tensor.Tensor) {
	red.grads[i] = g
	red.pending[red.b.of[i]]--
	for red.next < len(red.pending) && red.pending[red.next] == 0 {
		red.start(red.next)
		red.next++
	}
}

// start packs bucket k's gradients (those present: a parameter the step
// did not use has none, on every rank alike) into one flat tensor scaled
// by the weight, and queues its all-reduce.
func (red *reduction) start(k int) {
	var parts []*tensor.Tensor
	for _, i := range red.b.members[k] {
		if g := red.grads[i]; g != nil {
			parts = append(parts, g.Reshape(-1))
		}
	}
	if len(parts) == 0 {
		return
	}
	flat := tensor.Cat(parts, 0)
	if red.weight != 1 {
		flat = flat.MulScalar(red.weight)
	}
	red.flat[k] = flat
	red.jobs <- k
}

// wait lets the all-reduce goroutine end after the buckets queued so far
// and returns its first error.
func (red *reduction) wait() error {
	if red.closed {
		return nil
	}
	red.closed = true
	close(red.jobs)
	return <-red.done
}

// abandon ends a reduction whose backward pass failed: the buckets already
// queued still complete (the other ranks wait for them), no more start.
func (red *reduction) abandon() { _ = red.wait() }

// finish starts the buckets the backward pass left incomplete, waits for
// every all-reduce and writes the mean gradients back in place. It must
// be called once, after the backward pass, also when it failed.
func (red *reduction) finish() error {
	for ; red.next < len(red.pending); red.next++ {
		red.start(red.next)
	}
	if err := red.wait(); err != nil {
		return err
	}
	for k, flat := range red.flat {
		if flat == nil {
			continue
		}
		off := 0
		for _, i := range red.b.members[k] {
			g := red.grads[i]
			if g == nil {
				continue
			}
			n := g.NumElements()
			g.Assign(flat.Narrow(0, off, n).Reshape(g.Shape()...))
			off += n
		}
	}
	return nil
}

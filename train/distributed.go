package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/dist"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// errDistributedResume: Resume does not yet run data-parallel.
var errDistributedResume = errors.New("train: Resume with a Comm of more than one rank is not supported yet (resume on one process, or Fit afresh)")

// distribute makes r one rank of comm's data-parallel group: it reads its
// shard of Train, and on ranks other than 0 writes nothing (no run
// directory, no checkpoints; execute publishes no events there). It fails,
// on every rank alike and before any collective, when the last rank's
// shard (the smallest) makes no batch.
func (r *run) distribute(comm dist.Communicator) error {
	n := comm.Size()
	if last := r.s.Train.Shard(n-1, n); last.Len() == 0 {
		return fmt.Errorf("train: Train's %d batches leave rank %d of %d no batch of its own: use a smaller BatchSize or fewer ranks",
			r.s.Train.Len(), n-1, n)
	}
	r.comm = comm
	r.train = r.s.Train.Shard(comm.Rank(), n)
	if comm.Rank() != 0 {
		r.cfg.RunDir = ""
		r.ck = nil
	}
	return nil
}

// worldSize is the number of data-parallel ranks, 0 for a single process
// (so that its start event is unchanged).
func (r *run) worldSize() int {
	if r.comm == nil {
		return 0
	}
	return r.comm.Size()
}

// broadcastParams gives every rank rank 0's parameters and buffers.
func (r *run) broadcastParams() (err error) {
	for _, list := range [][]nn.NamedParam{nn.Params(r.l.Model), nn.Buffers(r.l.Model)} {
		for _, np := range list {
			if np.Param == nil || np.Param.Tensor == nil {
				continue
			}
			if err := r.comm.Broadcast(np.Param.Tensor, 0); err != nil {
				return fmt.Errorf("train: broadcasting parameter %s from rank 0: %w", np.Name, err)
			}
		}
	}
	return nil
}

// syncStep agrees with the other ranks on one optimizer step. Every rank
// calls it once per step, also a rank whose shard is used up (local
// empty, total nil), until the returned global sample count is 0: the
// epoch then ends on every rank at the same step, and total comes back
// nil. It all-reduces (samples, loss sum) of the step, adds the global
// figures to r.loss, and returns the loss to differentiate with the weight
// its gradients get before the Mean all-reduce: local samples × ranks ÷
// global samples, so that the reduced gradient is that of the global
// batch even when the shards' batches differ in size. A rank without
// samples in a step all others still take contributes zero gradients: it
// differentiates its shard's first batch with weight 0, and returns that
// batch (extra) for the caller to release after the backward pass.
func (r *run) syncStep(epoch int, total *tensor.Tensor, local runningLoss) (loss *tensor.Tensor, weight, global float64, extra *data.Batch, err error) {
	sums := tensor.FromFloat64s(tensor.CPU(), []float64{local.count, local.sum}, 2)
	if err := r.comm.AllReduce(sums, dist.Sum); err != nil {
		return nil, 0, 0, nil, fmt.Errorf("train: epoch %d step %d: %w", epoch, r.step+1, err)
	}
	g := sums.Float64s()
	global = g[0]
	if global == 0 {
		return nil, 0, 0, nil, nil
	}
	r.loss.sum += g[1]
	r.loss.count += g[0]
	if total == nil {
		if total, extra, err = r.zeroLoss(epoch); err != nil {
			return nil, 0, 0, nil, err
		}
	}
	return total, local.count * float64(r.comm.Size()) / global, global, extra, nil
}

// zeroLoss is the loss, times 0, of the first batch of this rank's shard:
// differentiated, it gives every parameter a zero gradient. The batch is
// returned for release after the backward pass, which reads it.
func (r *run) zeroLoss(epoch int) (*tensor.Tensor, *data.Batch, error) {
	it := r.train.IterFrom(context.WithoutCancel(r.ctx), epoch-1, 0)
	defer it.Close()
	if !it.Next() {
		if err := it.Err(); err != nil {
			return nil, nil, fmt.Errorf("train: epoch %d: rank %d: %w", epoch, r.comm.Rank(), err)
		}
		return nil, nil, fmt.Errorf("train: epoch %d: rank %d of %d has no training data (a data set of %d batches)",
			epoch, r.comm.Rank(), r.comm.Size(), r.s.Train.Len())
	}
	bt := it.Batch()
	loss, _ := forward(r.l, bt.X, bt.Y, false)
	return loss.MulScalar(0), bt, nil
}

// reduceGrads scales this rank's gradients by weight and replaces them by
// their mean over the ranks, one all-reduce per parameter in the order
// nn.Params walks the model (the same on every rank). Parameters without a
// gradient are skipped; every rank runs the same model, so they skip the
// same ones, and a gradient that several parameters share is reduced once.
func (r *run) reduceGrads(grads *tensor.Gradients, weight float64) error {
	seen := map[*tensor.Tensor]bool{}
	for _, np := range nn.TrainableParams(r.l.Model) {
		if np.Param == nil || np.Param.Tensor == nil {
			continue
		}
		g := grads.Get(np.Param.Tensor)
		if g == nil || seen[g] {
			continue
		}
		seen[g] = true
		if weight != 1 {
			g.Assign(g.MulScalar(weight))
		}
		if err := r.comm.AllReduce(g, dist.Mean); err != nil {
			return fmt.Errorf("all-reducing the gradient of %s: %w", np.Name, err)
		}
	}
	return nil
}

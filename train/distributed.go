package train

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/dist"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

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

// agreeRestored checks, before training goes on, that every rank
// restored the checkpoint (err is this rank's failure) and at the same
// position: ranks that resumed from different checkpoints (run
// directories that differ between machines) would train apart. Every rank
// returns an error when one failed.
func (r *run) agreeRestored(err error) error {
	failed := 0.0
	if err != nil {
		failed = 1
	}
	mine := tensor.FromFloat64s(tensor.CPU(), []float64{failed, float64(r.epoch), float64(r.batch), float64(r.step)}, 1, 4)
	all, gerr := r.comm.AllGather(mine)
	if gerr != nil {
		return errors.Join(err, fmt.Errorf("train: resume: agreeing with the other ranks: %w", gerr))
	}
	v := all.Float64s()
	all.Release()
	var bad, apart []string
	for k := range r.comm.Size() {
		row := v[4*k : 4*k+4]
		if row[0] != 0 {
			bad = append(bad, fmt.Sprint(k))
		} else if failed == 0 && (row[1] != v[1] || row[2] != v[2] || row[3] != v[3]) {
			apart = append(apart, fmt.Sprintf("rank %d at epoch %v batch %v step %v", k, row[1], row[2], row[3]))
		}
	}
	switch {
	case err != nil:
		return err
	case len(bad) > 0:
		return fmt.Errorf("train: resume: rank %s could not restore the checkpoint (its error is in its own output)", strings.Join(bad, ", "))
	case len(apart) > 0:
		return fmt.Errorf("train: resume: the ranks restored different checkpoints: rank 0 at epoch %v batch %v step %v, %s (every rank must see the same run directory)",
			v[1], v[2], v[3], strings.Join(apart, ", "))
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

// cancelErr is the cancellation the run obeys: its context's error for
// one process; with several ranks, the one they agreed on at the last
// step (syncStep), so that every rank stops at the same step even when
// only one was cancelled (a context, or the stop file only rank 0
// watches). A rank whose context is cancelled goes on to that step.
func (r *run) cancelErr() error {
	if r.comm == nil {
		return r.ctx.Err()
	}
	return r.stopErr
}

// syncStep agrees with the other ranks on one optimizer step. Every rank
// calls it once per step, also a rank whose shard is used up (local
// empty, total nil), until the returned global sample count is 0: the
// epoch then ends on every rank at the same step, and total comes back
// nil. It all-reduces (samples, loss sum) of the step, adds the global
// figures to r.loss, agrees on a cancellation (cancelErr), and returns the loss to differentiate with the weight
// its gradients get before the Mean all-reduce: local samples × ranks ÷
// global samples, so that the reduced gradient is that of the global
// batch even when the shards' batches differ in size. A rank without
// samples in a step all others still take contributes zero gradients: it
// differentiates its shard's first batch with weight 0, and returns that
// batch (extra) for the caller to release after the backward pass.
func (r *run) syncStep(epoch int, total *tensor.Tensor, local runningLoss) (loss *tensor.Tensor, weight, global float64, extra *data.Batch, err error) {
	cancelled := 0.0
	if r.ctx.Err() != nil {
		cancelled = 1
	}
	sums := tensor.FromFloat64s(tensor.CPU(), []float64{local.count, local.sum, cancelled}, 3)
	if err := r.comm.AllReduce(sums, dist.Sum); err != nil {
		return nil, 0, 0, nil, fmt.Errorf("train: epoch %d step %d: %w", epoch, r.step+1, err)
	}
	g := sums.Float64s()
	if g[2] > 0 && r.stopErr == nil {
		r.stopErr = r.ctx.Err()
		if r.stopErr == nil {
			r.stopErr = fmt.Errorf("%w: another rank's run was cancelled (%v of %d ranks)", context.Canceled, g[2], r.comm.Size())
		}
	}
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

// trainValues is the training metric values so far: snapshot's, and with
// several ranks the global ones of every metrics.Summable (their states
// all-reduced with a sum; each rank's own state is kept for the batches
// to come). Every rank must call it at the same point.
func (r *run) trainValues() (Values, error) {
	if r.comm == nil {
		return snapshot(r.loss.value(), r.s.Metrics), nil
	}
	var sums []metrics.Summable
	var local [][]float64
	var all []float64
	for _, m := range r.s.Metrics {
		if sm, ok := m.(metrics.Summable); ok {
			st, err := metricState(sm)
			if err != nil {
				return nil, err
			}
			sums, local = append(sums, sm), append(local, st)
			all = append(all, st...)
		}
	}
	if len(sums) == 0 {
		return snapshot(r.loss.value(), r.s.Metrics), nil
	}
	t := tensor.FromFloat64s(tensor.CPU(), all, len(all))
	defer t.Release()
	if err := r.comm.AllReduce(t, dist.Sum); err != nil {
		return nil, fmt.Errorf("train: all-reducing the training metrics' sums: %w", err)
	}
	global := t.Float64s()
	defer func() {
		for i, sm := range sums {
			_ = sm.SetState(local[i]) // its own State: cannot fail
		}
	}()
	off := 0
	for i, sm := range sums {
		n := len(local[i])
		if err := sm.SetState(global[off : off+n]); err != nil {
			return nil, fmt.Errorf("train: metric %s: %w", sm.Name(), err)
		}
		off += n
	}
	return snapshot(r.loss.value(), r.s.Metrics), nil
}

// metricState is m.State, with a panic (a PRF without NumClasses) turned
// into an error.
func metricState(m metrics.Summable) (st []float64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("train: metric %s cannot be summed across ranks: %v", m.Name(), p)
		}
	}()
	return m.State(), nil
}

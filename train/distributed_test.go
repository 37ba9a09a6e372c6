package train_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/dist"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// watched is a linear classifier whose TrainStep records, before each
// forward pass, a checksum of its parameters (so the parameters after
// every optimizer step) and the first feature of every item it is fed.
type watched struct {
	m     *nn.Linear
	sums  []uint64
	first []float32
}

func (w *watched) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	w.sums = append(w.sums, paramSum(w.m))
	xs, d := x.Float32s(), x.Shape()[1]
	for i := 0; i < len(xs); i += d {
		w.first = append(w.first, xs[i])
	}
	out := w.m.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

// paramSum hashes the bits of every parameter.
func paramSum(m any) uint64 {
	h := fnv.New64a()
	for _, np := range nn.Params(m) {
		for _, v := range np.Param.Float32s() {
			fmt.Fprint(h, math.Float32bits(v), ",")
		}
	}
	return h.Sum64()
}

func paramValues(m any) []float32 {
	var vs []float32
	for _, np := range nn.Params(m) {
		vs = append(vs, np.Param.Float32s()...)
	}
	return vs
}

// fitRanks runs one Fit per member of a local group of n on its own
// goroutine; setup builds rank r's run. n 0 runs one Fit without Comm.
func fitRanks(t *testing.T, n int, setup func(rank int) (*train.Supervised, *train.Learner)) ([]train.Result, []error) {
	t.Helper()
	if n == 0 {
		s, l := setup(0)
		res, err := s.Fit(context.Background(), l)
		return []train.Result{res}, []error{err}
	}
	comms := dist.NewLocalGroupConfig(n, dist.LocalConfig{Timeout: time.Minute})
	res, errs := make([]train.Result, n), make([]error, n)
	runs := make([]*train.Supervised, n)
	learners := make([]*train.Learner, n)
	for r := range n {
		runs[r], learners[r] = setup(r)
		runs[r].Comm = comms[r]
	}
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			defer comms[r].Close()
			res[r], errs[r] = runs[r].Fit(context.Background(), learners[r])
		})
	}
	wg.Wait()
	return res, errs
}

// TestDataParallelMatchesOneProcess: ranks training on shards of a global
// batch keep bit-identical parameters after every step, and end where one
// process training on the whole global batch ends (within 1e-5 relative),
// also when the ranks start from different parameters (rank 0's are
// broadcast), with gradient accumulation, and when the data set's size
// does not divide by the world size (a rank then takes a step with no
// samples of its own, contributing zero gradients).
func TestDataParallelMatchesOneProcess(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		items, ranks, batch    int // batch: per rank; the single run's is ranks·batch
		accumulate, epochs     int
		wantSteps, wantBatches int // per rank, per epoch (steps for the whole run)
		bucket                 int // gradient bucket bytes, 0 for the default
	}{
		{"two ranks, even", 32, 2, 4, 1, 2, 8, 4, 0},
		{"two ranks, accumulating", 32, 2, 2, 2, 2, 8, 8, 0},
		{"three ranks, uneven tail", 10, 3, 3, 1, 2, 4, 2, 0},
		{"two ranks, uneven batches", 11, 2, 4, 1, 1, 2, 2, 0},
		{"three ranks, one bucket per parameter", 10, 3, 3, 1, 2, 4, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bucket > 0 {
				defer train.SetBucketLimit(tc.bucket)()
			}
			ds := blobs(tc.items, 5)
			var single *watched
			res, errs := fitRanks(t, 0, func(int) (*train.Supervised, *train.Learner) {
				single = &watched{m: newLinear(tensor.CPU(), 1)}
				l := loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: tc.ranks * tc.batch, Shuffle: true, Seed: 9})
				return &train.Supervised{Config: train.Config{Epochs: tc.epochs, GradAccumulation: tc.accumulate}, Train: l, Metrics: []metrics.Metric{metrics.NewAccuracy()}},
					&train.Learner{Model: single.m, Stepper: single, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9})}
			})
			defer nn.Release(single.m)
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			want, wantLoss := paramValues(single.m), res[0].Train[tc.epochs-1]["loss"]
			wantAcc := res[0].Train

			ws := make([]*watched, tc.ranks)
			res, errs = fitRanks(t, tc.ranks, func(r int) (*train.Supervised, *train.Learner) {
				ws[r] = &watched{m: newLinear(tensor.CPU(), uint64(1+100*r))} // broadcast makes them rank 0's
				l := loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: tc.batch, Shuffle: true, Seed: 9})
				return &train.Supervised{Config: train.Config{Epochs: tc.epochs, GradAccumulation: tc.accumulate}, Train: l, Metrics: []metrics.Metric{metrics.NewAccuracy()}},
					&train.Learner{Model: ws[r].m, Stepper: ws[r], Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9})}
			})
			for r := range tc.ranks {
				defer nn.Release(ws[r].m)
				if errs[r] != nil {
					t.Fatalf("rank %d: %v", r, errs[r])
				}
				if res[r].Steps != tc.wantSteps || res[0].Steps != res[r].Steps {
					t.Errorf("rank %d: %d steps, want %d", r, res[r].Steps, tc.wantSteps)
				}
				if got := res[r].Train[tc.epochs-1]["loss"]; math.Abs(got-wantLoss) > 1e-5*math.Abs(wantLoss) {
					t.Errorf("rank %d: global loss %v, one process %v", r, got, wantLoss)
				}
				for e := range tc.epochs { // global accuracy: the counts of every rank's shard
					if got, want := res[r].Train[e]["accuracy"], wantAcc[e]["accuracy"]; math.Abs(got-want) > 1e-12 {
						t.Errorf("rank %d epoch %d: accuracy %v, one process %v", r, e+1, got, want)
					}
				}
				if tc.accumulate == 1 && !slices.Equal(ws[r].sums, ws[0].sums) {
					t.Errorf("rank %d: parameter checksums %x, rank 0's %x", r, ws[r].sums, ws[0].sums)
				}
				got := paramValues(ws[r].m)
				if paramSum(ws[r].m) != paramSum(ws[0].m) {
					t.Errorf("rank %d: final parameters differ from rank 0's", r)
				}
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*math.Max(math.Abs(float64(want[i])), 1e-3) {
						t.Fatalf("rank %d: parameter %d is %v, one process %v", r, i, got[i], want[i])
					}
				}
			}
			if tc.accumulate == 1 && len(ws[0].sums) != tc.wantSteps {
				t.Errorf("rank 0 ran %d forward passes, want %d", len(ws[0].sums), tc.wantSteps)
			}
		})
	}
}

// indexed returns n items whose first feature is their index.
func indexed(n int) *data.InMemory {
	items := make([]data.Item, n)
	for i := range items {
		items[i] = data.Item{X: []float32{float32(i), 0, 0, 0}, Label: int64(i % 3)}
	}
	return data.NewInMemory(items)
}

// TestDataParallelShardsEpoch: over each epoch the ranks together train
// on every item exactly once, for world sizes 1, 2 and 3 and a data set
// of 11 items.
func TestDataParallelShardsEpoch(t *testing.T) {
	const items, epochs = 11, 2
	for _, ranks := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d ranks", ranks), func(t *testing.T) {
			ws := make([]*watched, ranks)
			_, errs := fitRanks(t, ranks, func(r int) (*train.Supervised, *train.Learner) {
				ws[r] = &watched{m: newLinear(tensor.CPU(), 1)}
				l := loader(t, indexed(items), tensor.CPU(), data.LoaderConfig{BatchSize: 2, Shuffle: true, Seed: 3})
				return &train.Supervised{Config: train.Config{Epochs: epochs}, Train: l},
					&train.Learner{Model: ws[r].m, Stepper: ws[r], Optimizer: optim.NewSGD(optim.SGDConfig{LR: 1e-9})}
			})
			seen := make([]int, items)
			for r := range ranks {
				defer nn.Release(ws[r].m)
				if errs[r] != nil {
					t.Fatalf("rank %d: %v", r, errs[r])
				}
				for _, f := range ws[r].first {
					seen[int(f)]++
				}
			}
			for i, c := range seen {
				if c != epochs {
					t.Errorf("item %d trained on %d times in %d epochs", i, c, epochs)
				}
			}
		})
	}
}

// TestDataParallelRankZeroWrites: rank 0 alone writes the run directory
// and publishes events; its start event records the world size.
func TestDataParallelRankZeroWrites(t *testing.T) {
	base := t.TempDir()
	recs := make([]*recorder, 2)
	models := make([]*nn.Linear, 2)
	_, errs := fitRanks(t, 2, func(r int) (*train.Supervised, *train.Learner) {
		recs[r], models[r] = &recorder{}, newLinear(tensor.CPU(), 1)
		l := loader(t, blobs(20, 1), tensor.CPU(), data.LoaderConfig{BatchSize: 4, Shuffle: true})
		return &train.Supervised{Config: train.Config{Epochs: 2, LogEvery: 1, RunDir: filepath.Join(base, fmt.Sprint("rank", r))},
				Train: l, Observers: []train.Observer{recs[r]}},
			&train.Learner{Model: models[r], Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}
	})
	for r := range 2 {
		defer nn.Release(models[r])
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
	}
	if _, err := os.Stat(filepath.Join(base, "rank1")); !os.IsNotExist(err) {
		t.Errorf("rank 1 wrote its run directory (stat: %v)", err)
	}
	if n := len(recs[1].evs); n != 0 {
		t.Errorf("rank 1 published %d events", n)
	}
	if len(recs[0].evs) == 0 || recs[0].evs[0].Kind != train.EventStart || recs[0].evs[0].WorldSize != 2 {
		t.Fatalf("rank 0's first event: %+v", recs[0].evs[:min(1, len(recs[0].evs))])
	}
	f, err := os.Open(filepath.Join(base, "rank0", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var start map[string]any
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &start) != nil || start["world_size"] != 2.0 {
		t.Errorf("events.jsonl starts with %s", sc.Bytes())
	}
	if ents, _ := os.ReadDir(filepath.Join(base, "rank0", "checkpoints")); len(ents) == 0 {
		t.Error("rank 0 wrote no checkpoint")
	}
}

// TestDataParallelEmptyShard: a data set too small to give every rank a
// batch fails on every rank at once, rather than in a collective.
func TestDataParallelEmptyShard(t *testing.T) {
	models := make([]*nn.Linear, 3)
	_, errs := fitRanks(t, 3, func(r int) (*train.Supervised, *train.Learner) {
		models[r] = newLinear(tensor.CPU(), 1)
		l := loader(t, blobs(5, 1), tensor.CPU(), data.LoaderConfig{BatchSize: 2, DropLast: true})
		return &train.Supervised{Train: l}, &train.Learner{Model: models[r], Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}
	})
	for r, err := range errs {
		nn.Release(models[r])
		if err == nil || !strings.Contains(err.Error(), "rank 2 of 3 no batch") {
			t.Errorf("rank %d: got %v", r, err)
		}
	}
}

// onRanks runs f on n ranks of a local group, each on its goroutine, and
// returns their results.
func onRanks(n int, f func(rank int, comm dist.Communicator) (train.Result, error)) ([]train.Result, []error) {
	comms := dist.NewLocalGroupConfig(n, dist.LocalConfig{Timeout: time.Minute})
	res, errs := make([]train.Result, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			defer comms[r].Close()
			res[r], errs[r] = f(r, comms[r])
		})
	}
	wg.Wait()
	return res, errs
}

// TestDataParallelResumeWorldSizes: a checkpoint written at an epoch's end
// by 2 ranks resumes on 1 process with the same global batch, and one
// written by 1 process resumes on 2 ranks, and either way the run ends
// where an uninterrupted 2-rank run ends (within 1e-5 relative): the
// parameters and AdamW's moments carried over. A checkpoint written inside
// an epoch by 2 ranks resumes on 2 ranks, and is refused on 1 with an
// error naming both world sizes.
func TestDataParallelResumeWorldSizes(t *testing.T) {
	const items, batch, epochs = 48, 4, 2
	ds := blobs(items, 3)
	var seeding sync.Mutex // the ranks share the CPU device's random stream
	setup := func(rank, ranks, epochs int, dir string, comm dist.Communicator) (*train.Supervised, *train.Learner, *nn.Linear) {
		seeding.Lock()
		m := newLinear(tensor.CPU(), uint64(1+rank))
		seeding.Unlock()
		bs := batch
		if ranks == 1 {
			bs = 2 * batch // the 2-rank global batch
		}
		s := &train.Supervised{Config: train.Config{Epochs: epochs, RunDir: dir}, Comm: comm,
			Train: loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: bs, Shuffle: true, Seed: 5})}
		l := &train.Learner{Model: m, Stepper: &watched{m: m}, Optimizer: optim.NewAdamW(optim.AdamWConfig{LR: 0.05})}
		return s, l, m
	}
	finals := func(n int, f func(rank int, comm dist.Communicator) (train.Result, *nn.Linear, error)) []float32 {
		t.Helper()
		ms := make([]*nn.Linear, n)
		_, errs := onRanks(n, func(rank int, comm dist.Communicator) (train.Result, error) {
			res, m, err := f(rank, comm)
			ms[rank] = m
			return res, err
		})
		for r, err := range errs {
			defer nn.Release(ms[r])
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		return paramValues(ms[0])
	}
	fit := func(ranks, epochs int, dir string) []float32 {
		return finals(ranks, func(rank int, comm dist.Communicator) (train.Result, *nn.Linear, error) {
			s, l, m := setup(rank, ranks, epochs, dir, comm)
			res, err := s.Fit(context.Background(), l)
			return res, m, err
		})
	}
	resume := func(ranks int, dir string) []float32 {
		return finals(ranks, func(rank int, comm dist.Communicator) (train.Result, *nn.Linear, error) {
			s, l, m := setup(rank, ranks, epochs, "", comm)
			res, err := s.Resume(context.Background(), dir, l)
			if err == nil && res.Epochs != epochs {
				err = fmt.Errorf("resumed run ended after %d epochs", res.Epochs)
			}
			return res, m, err
		})
	}
	near := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*math.Max(math.Abs(float64(want[i])), 1e-3) {
				t.Fatalf("%s: parameter %d is %v, the uninterrupted run's %v", what, i, got[i], want[i])
			}
		}
	}
	want := fit(2, epochs, "")

	two := filepath.Join(t.TempDir(), "two")
	fit(2, 1, two)
	near("written by 2 ranks, resumed on 1", resume(1, two), want)
	one := filepath.Join(t.TempDir(), "one")
	fit(1, 1, one)
	near("written by 1 process, resumed on 2 ranks", resume(2, one), want)

	// Inside an epoch: rank 1 is cancelled at its 3rd step, so rank 0
	// writes a final checkpoint 3 batches into epoch 1.
	mid := filepath.Join(t.TempDir(), "mid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, errs := onRanks(2, func(rank int, comm dist.Communicator) (train.Result, error) {
		s, l, m := setup(rank, 2, epochs, mid, comm)
		defer nn.Release(m)
		rctx := context.Background()
		if rank == 1 {
			l.Stepper, rctx = &cancelling{watched: &watched{m: m}, at: 3, cancel: cancel}, ctx
		}
		return s.Fit(rctx, l)
	})
	if errs[0] != nil || res[0].Reason != train.StopCancelled || res[0].Steps != 3 {
		t.Fatalf("cancelled run: %+v, %v", res[0], errs[0])
	}
	_, errs = onRanks(1, func(rank int, comm dist.Communicator) (train.Result, error) {
		s, l, m := setup(rank, 1, epochs, "", comm)
		defer nn.Release(m)
		return s.Resume(context.Background(), mid, l)
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "3 batches into epoch 1 of a run on 2 ranks") {
		t.Errorf("resuming a mid-epoch 2-rank checkpoint on 1 process: %v", errs[0])
	}
	near("written inside an epoch by 2 ranks, resumed on 2", resume(2, mid), want)
}

// TestDataParallelResumeRankFails: when one rank cannot read the
// checkpoint, every rank's Resume fails, the others naming that rank.
func TestDataParallelResumeRankFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ds := blobs(16, 3)
	m := newLinear(tensor.CPU(), 1)
	defer nn.Release(m)
	s := &train.Supervised{Config: train.Config{Epochs: 1, RunDir: dir}, Train: loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: 4})}
	if _, err := s.Fit(context.Background(), &train.Learner{Model: m, Stepper: &watched{m: m}, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}); err != nil {
		t.Fatal(err)
	}
	var seeding sync.Mutex
	_, errs := onRanks(2, func(rank int, comm dist.Communicator) (train.Result, error) {
		seeding.Lock()
		m := newLinear(tensor.CPU(), 1)
		seeding.Unlock()
		defer nn.Release(m)
		where := dir
		if rank == 1 {
			where = filepath.Join(t.TempDir(), "elsewhere") // not there on this "machine"
		}
		s := &train.Supervised{Config: train.Config{Epochs: 2}, Comm: comm, Train: loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: 2})}
		return s.Resume(context.Background(), where, &train.Learner{Model: m, Stepper: &watched{m: m}, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank 1 could not restore") {
		t.Errorf("rank 0: %v", errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "elsewhere") {
		t.Errorf("rank 1: %v", errs[1])
	}
}

// mlpWatched is the MNIST MLP of `kiln demo` (784-256-128-10, ReLU) as a
// Stepper that records a checksum of the parameters before every forward
// pass, so after every optimizer step.
type mlpWatched struct {
	m    nn.Sequential
	sums []uint64
}

func (w *mlpWatched) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	w.sums = append(w.sums, paramSum(w.m))
	out := w.m.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

// mnistMLPRun is the data-parallel MNIST check's run: the MLP (its
// parameters drawn from seed) trained with SGD and momentum for 2 epochs
// on the first 640 training images, in batches of batch, shuffled with
// one seed.
func mnistMLPRun(t *testing.T, seed uint64, batch int, comm dist.Communicator) (*train.Supervised, *train.Learner, *mlpWatched) {
	t.Helper()
	dir, err := data.MNISTDir()
	if err != nil {
		t.Skip(err)
	}
	set, _, err := data.LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	set = set.Subset(640)
	set.Standardize = true
	ad := tensor.CPU().Autodiff()
	ad.Seed(seed)
	w := &mlpWatched{}
	tensor.NoScope(func() {
		w.m = nn.NewSequential(nn.NewLinear(ad, 784, 256), nn.ReLU{}, nn.NewLinear(ad, 256, 128), nn.ReLU{}, nn.NewLinear(ad, 128, 10))
	})
	s := &train.Supervised{Config: train.Config{Epochs: 2}, Comm: comm,
		Train: loader(t, set, tensor.CPU(), data.LoaderConfig{BatchSize: batch, Shuffle: true, Seed: 1})}
	return s, &train.Learner{Model: w.m, Stepper: w, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.05, Momentum: 0.9})}, w
}

// mpiChild names the environment variable that makes
// TestDataParallelMPIChild run: the file rank 0 writes its final
// parameters to.
const mpiChild = "KILN_TRAIN_MPI_CHILD"

// TestDataParallelMPI trains the MNIST MLP under the real mpirun -np 2
// (this test binary, one process per rank, batches of 32 per rank): both
// ranks print the same parameter checksum after every step (bit-identical
// parameters), and rank 0's final parameters match one process trained
// on the same global batches of 64 within 1e-5 relative.
func TestDataParallelMPI(t *testing.T) {
	if raceEnabled {
		t.Skip("ranks under mpirun take minutes race-instrumented; the plain run checks them, and dist's own tests drive mpirun under the race detector")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	bin, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin to run the MPI tests")
	}
	// One process on the global batch: the reference.
	s, l, single := mnistMLPRun(t, 1, 64, nil)
	defer nn.Release(single.m)
	if _, err := s.Fit(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	want := paramValues(single.m)

	params := filepath.Join(t.TempDir(), "rank0.params")
	args := []string{"-np", "2", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-x", mpiChild + "=" + params}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	args = append(args, os.Args[0], "-test.run", "^TestDataParallelMPIChild$", "-test.v")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out.String())
	}
	sums := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		var rank, sums0 string
		if _, err := fmt.Sscanf(line, "rank %s sums %s", &rank, &sums0); err == nil {
			sums[rank] = append(sums[rank], sums0)
		}
	}
	// 640 images in global batches of 64: 10 steps an epoch, 2 epochs,
	// and the checksum after the last step.
	if len(sums["0"]) != 1 || len(sums["1"]) != 1 || sums["0"][0] != sums["1"][0] || strings.Count(sums["0"][0], ",") != 20 {
		t.Fatalf("ranks' parameter checksums after each of the 20 steps differ or are missing: %v\n%s", sums, out.String())
	}
	raw, err := os.ReadFile(params)
	if err != nil {
		t.Fatalf("rank 0's parameters: %v\n%s", err, out.String())
	}
	if len(raw) != 4*len(want) {
		t.Fatalf("rank 0 wrote %d bytes of parameters, want %d", len(raw), 4*len(want))
	}
	// Relative to each parameter tensor's norm: summing two half-batch
	// gradients rounds differently from one full batch's, and 20 steps of
	// momentum carry that; elementwise, the largest relative difference
	// is reported too.
	off, worstElem := 0, 0.0
	for _, np := range nn.Params(single.m) {
		n := np.Param.NumElements()
		var diff, norm float64
		for i := off; i < off+n; i++ {
			got := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
			d := got - float64(want[i])
			diff += d * d
			norm += float64(want[i]) * float64(want[i])
			worstElem = max(worstElem, math.Abs(d)/math.Max(math.Abs(float64(want[i])), 1e-3))
		}
		rel := math.Sqrt(diff / norm)
		t.Logf("%s %v: relative difference to one process %.3g", np.Name, np.Param.Shape(), rel)
		if rel > 1e-5 {
			t.Errorf("%s: two ranks differ from one process by %.3g relative (‖Δ‖/‖w‖), want ≤ 1e-5", np.Name, rel)
		}
		off += n
	}
	t.Logf("largest elementwise relative difference %.3g", worstElem)
}

// TestDataParallelMPIChild is one rank of TestDataParallelMPI; without
// its environment variable it skips.
func TestDataParallelMPIChild(t *testing.T) {
	params := os.Getenv(mpiChild)
	if params == "" {
		t.Skip("run by TestDataParallelMPI under mpirun")
	}
	c, err := dist.Init(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Rank 1 starts from other parameters: rank 0's are broadcast.
	s, l, w := mnistMLPRun(t, uint64(1+c.Rank()), 32, c)
	defer nn.Release(w.m)
	res, err := s.Fit(context.Background(), l)
	if err != nil {
		t.Fatalf("rank %d: %v", c.Rank(), err)
	}
	w.sums = append(w.sums, paramSum(w.m))
	parts := make([]string, len(w.sums))
	for i, s := range w.sums {
		parts[i] = fmt.Sprintf("%x", s)
	}
	fmt.Printf("rank %d sums %s\n", c.Rank(), strings.Join(parts, ","))
	t.Logf("rank %d: %d steps, loss %v", c.Rank(), res.Steps, res.Train[len(res.Train)-1]["loss"])
	if c.Rank() == 0 {
		vs := paramValues(w.m)
		raw := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
		if err := os.WriteFile(params, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGradientBuckets: the buckets take the parameters last layer first,
// as many as fit in the limit (one at least, however large), so that the
// bucket of the last layers can be all-reduced while backward goes on.
func TestGradientBuckets(t *testing.T) {
	dev := tensor.CPU().Autodiff()
	m := nn.NewSequential(nn.NewLinear(dev, 784, 256), nn.NewLinear(dev, 256, 128), nn.NewLinear(dev, 128, 10))
	defer nn.Release(m)
	sizes, _ := train.BucketSizes(m, train.BucketBytes)
	if len(sizes) != 1 || sizes[0] != 4*(784*256+256+256*128+128+128*10+10) {
		t.Errorf("25 MiB buckets of the MNIST MLP: %v, want one of all its parameters", sizes)
	}
	sizes, names := train.BucketSizes(m, 256*128*4)
	want := []int{4 * (10 + 128*10 + 128), 4 * 256 * 128, 4 * 256, 4 * 784 * 256}
	if !slices.Equal(sizes, want) {
		t.Errorf("128 KiB buckets: %v (%v), want %v", sizes, names, want)
	}
	if len(names) > 0 && !strings.HasSuffix(names[0][0], "bias") {
		t.Errorf("the first bucket starts with %s, want the last layer's bias", names[0][0])
	}
}

// cancelling is a watched model that calls cancel at its at-th forward
// pass (0 never).
type cancelling struct {
	*watched
	at     int
	cancel context.CancelFunc
}

func (c *cancelling) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	if len(c.sums)+1 == c.at {
		c.cancel()
	}
	return c.watched.TrainStep(x, y)
}

// TestDataParallelCancelOneRank: a cancellation seen by one rank only (its
// context, or the stop file only rank 0 watches) stops every rank at the
// same step, with the same parameters, instead of leaving the others to
// time out.
func TestDataParallelCancelOneRank(t *testing.T) {
	ds := blobs(64, 5)
	comms := dist.NewLocalGroupConfig(2, dist.LocalConfig{Timeout: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, errs := make([]train.Result, 2), make([]error, 2)
	ws := make([]*watched, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		ws[r] = &watched{m: newLinear(tensor.CPU(), 1)}
		defer nn.Release(ws[r].m)
		stepper := &cancelling{watched: ws[r]}
		rctx := context.Background()
		if r == 1 {
			stepper.at, stepper.cancel, rctx = 3, cancel, ctx
		}
		s := &train.Supervised{Config: train.Config{Epochs: 3}, Comm: comms[r],
			Train: loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: 4, Shuffle: true, Seed: 2})}
		l := &train.Learner{Model: ws[r].m, Stepper: stepper, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}
		wg.Go(func() {
			defer comms[r].Close()
			res[r], errs[r] = s.Fit(rctx, l)
		})
	}
	wg.Wait()
	for r := range 2 {
		if res[r].Reason != train.StopCancelled {
			t.Errorf("rank %d: reason %q (%s, err %v), want cancelled", r, res[r].Reason, res[r].Why, errs[r])
		}
		if res[r].Steps != 3 {
			t.Errorf("rank %d stopped after %d steps, want 3 (the step its rank 1 was cancelled in)", r, res[r].Steps)
		}
	}
	if !strings.Contains(res[0].Why, "another rank") {
		t.Errorf("rank 0's reason %q does not say another rank was cancelled", res[0].Why)
	}
	if paramSum(ws[0].m) != paramSum(ws[1].m) {
		t.Error("the ranks stopped with different parameters")
	}
}

// stopWriter is a validation metric that, on its first update, writes the
// run's StopFile and waits until the run has had time to see it.
type stopWriter struct {
	dir     string
	written bool
}

func (m *stopWriter) Name() string { return "stops" }
func (m *stopWriter) Update(outputs, targets *tensor.Tensor) error {
	if !m.written {
		m.written = true
		if err := os.WriteFile(filepath.Join(m.dir, train.StopFile), nil, 0o644); err != nil {
			return err
		}
		time.Sleep(600 * time.Millisecond)
	}
	return nil
}
func (m *stopWriter) Value() float64 { return 0 }
func (m *stopWriter) Reset()         {}

// TestDataParallelStopFileInValidation: ranks on one machine share the run
// directory. A StopFile written while they validate stops both ranks at
// the same step, cancelled, and rank 0 writes the end record; no rank
// takes the file for itself or cuts its validation short (which once left
// rank 0 waiting in a collective for a rank that had failed).
func TestDataParallelStopFileInValidation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	models := make([]*nn.Linear, 2)
	res, errs := fitRanks(t, 2, func(r int) (*train.Supervised, *train.Learner) {
		models[r] = newLinear(tensor.CPU(), 1)
		return &train.Supervised{Config: train.Config{Epochs: 5, RunDir: dir},
				Train:        loader(t, blobs(32, 1), tensor.CPU(), data.LoaderConfig{BatchSize: 4, Shuffle: true}),
				Valid:        loader(t, blobs(16, 2), tensor.CPU(), data.LoaderConfig{BatchSize: 4}),
				ValidMetrics: []metrics.Metric{&stopWriter{dir: dir}}},
			&train.Learner{Model: models[r], Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}
	})
	for r := range 2 {
		defer nn.Release(models[r])
		if errs[r] != nil || res[r].Reason != train.StopCancelled {
			t.Errorf("rank %d: %q %s (err %v), want cancelled", r, res[r].Reason, res[r].Why, errs[r])
		}
		if res[r].Epochs != 1 {
			t.Errorf("rank %d ended after %d epochs, want 1 (the epoch it validated when stopped)", r, res[r].Epochs)
		}
	}
	if res[0].Steps != res[1].Steps {
		t.Errorf("rank 0 stopped after %d steps, rank 1 after %d", res[0].Steps, res[1].Steps)
	}
	log, err := os.ReadFile(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"kind":"end"`) || !strings.Contains(last, `"reason":"cancelled"`) {
		t.Errorf("last record %s: want the end record, cancelled", last)
	}
}

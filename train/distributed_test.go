package train_test

import (
	"bufio"
	"bytes"
	"context"
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
	}{
		{"two ranks, even", 32, 2, 4, 1, 2, 8, 4},
		{"two ranks, accumulating", 32, 2, 2, 2, 2, 8, 8},
		{"three ranks, uneven tail", 10, 3, 3, 1, 2, 4, 2},
		{"two ranks, uneven batches", 11, 2, 4, 1, 1, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := blobs(tc.items, 5)
			var single *watched
			res, errs := fitRanks(t, 0, func(int) (*train.Supervised, *train.Learner) {
				single = &watched{m: newLinear(tensor.CPU(), 1)}
				l := loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: tc.ranks * tc.batch, Shuffle: true, Seed: 9})
				return &train.Supervised{Config: train.Config{Epochs: tc.epochs, GradAccumulation: tc.accumulate}, Train: l},
					&train.Learner{Model: single.m, Stepper: single, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9})}
			})
			defer nn.Release(single.m)
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			want, wantLoss := paramValues(single.m), res[0].Train[tc.epochs-1]["loss"]

			ws := make([]*watched, tc.ranks)
			res, errs = fitRanks(t, tc.ranks, func(r int) (*train.Supervised, *train.Learner) {
				ws[r] = &watched{m: newLinear(tensor.CPU(), uint64(1+100*r))} // broadcast makes them rank 0's
				l := loader(t, ds, tensor.CPU(), data.LoaderConfig{BatchSize: tc.batch, Shuffle: true, Seed: 9})
				return &train.Supervised{Config: train.Config{Epochs: tc.epochs, GradAccumulation: tc.accumulate}, Train: l},
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

// TestDataParallelResumeRefused: Resume does not run data-parallel yet and
// says so rather than training each rank alone.
func TestDataParallelResumeRefused(t *testing.T) {
	comms := dist.NewLocalGroup(2)
	s := &train.Supervised{Train: loader(t, blobs(4, 1), tensor.CPU(), data.LoaderConfig{}), Comm: comms[0]}
	_, err := s.Resume(context.Background(), t.TempDir(), &train.Learner{})
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("got %v", err)
	}
}

// mpiChild names the environment variable that makes TestDataParallelMPIChild run.
const mpiChild = "KILN_TRAIN_MPI_CHILD"

// TestDataParallelMPI trains under mpirun -np 2 (this test binary, one
// process per rank) and checks that both ranks print the same parameter
// checksum after every step.
func TestDataParallelMPI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin to run the MPI tests")
	}
	args := []string{"-np", "2", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-x", mpiChild + "=1"}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	args = append(args, os.Args[0], "-test.run", "^TestDataParallelMPIChild$", "-test.v")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	if len(sums["0"]) != 1 || len(sums["1"]) != 1 || sums["0"][0] != sums["1"][0] || strings.Count(sums["0"][0], ",") < 4 {
		t.Fatalf("ranks' parameter checksums differ or are missing: %v\n%s", sums, out.String())
	}
}

// TestDataParallelMPIChild is one rank of TestDataParallelMPI; without
// its environment variable it skips.
func TestDataParallelMPIChild(t *testing.T) {
	if os.Getenv(mpiChild) == "" {
		t.Skip("run by TestDataParallelMPI under mpirun")
	}
	c, err := dist.Init(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := &watched{m: newLinear(tensor.CPU(), uint64(1+c.Rank()))}
	s := &train.Supervised{Config: train.Config{Epochs: 2}, Comm: c,
		Train: loader(t, blobs(21, 2), tensor.CPU(), data.LoaderConfig{BatchSize: 4, Shuffle: true, Seed: 1})}
	res, err := s.Fit(context.Background(), &train.Learner{Model: w.m, Stepper: w, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
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
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

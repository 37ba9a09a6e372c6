package dist

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/tensor"
)

// runGroup calls f for every member of a group of n, each in its own
// goroutine, and returns their errors by rank.
func runGroup(n int, cfg LocalConfig, f func(c Communicator) error) []error {
	group := NewLocalGroupConfig(n, cfg)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range group {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(c)
		}()
	}
	wg.Wait()
	return errs
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// rankTensor is rank r's input: element i of a tensor of shape holds
// (r+1)*10 + i (negated for odd ranks when negate), in dtype.
func rankTensor(dtype tensor.DType, r int, negate bool, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = float64((r+1)*10 + i)
		if negate && r%2 == 1 {
			vals[i] = -vals[i]
		}
	}
	return fromValues(dtype, vals, shape...)
}

func fromValues(dtype tensor.DType, vals []float64, shape ...int) *tensor.Tensor {
	switch dtype {
	case tensor.Float32:
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
		}
		return tensor.FromFloat32s(tensor.CPU(), f, shape...)
	case tensor.Int64:
		f := make([]int64, len(vals))
		for i, v := range vals {
			f[i] = int64(v)
		}
		return tensor.FromInt64s(tensor.CPU(), f, shape...)
	}
	return tensor.FromFloat64s(tensor.CPU(), vals, shape...)
}

// expectReduce is the hand-computed reduction of rankTensor over n ranks.
func expectReduce(op ReduceOp, n, numel int, negate bool) []float64 {
	out := make([]float64, numel)
	for i := range out {
		var acc float64
		for r := 0; r < n; r++ {
			v := float64((r+1)*10 + i)
			if negate && r%2 == 1 {
				v = -v
			}
			switch {
			case r == 0:
				acc = v
			case op == Max:
				acc = max(acc, v)
			case op == Min:
				acc = min(acc, v)
			default:
				acc += v
			}
		}
		if op == Mean {
			acc /= float64(n)
		}
		out[i] = acc
	}
	return out
}

func checkTensor(got *tensor.Tensor, dtype tensor.DType, shape []int, want []float64) error {
	if got.DType() != dtype || !reflect.DeepEqual(got.Shape(), shape) {
		return fmt.Errorf("got %s %v, want %s %v", got.DType(), got.Shape(), dtype, shape)
	}
	// want is exact; round it to dtype as the result was.
	want = fromValues(dtype, want, len(want)).Float64s()
	if g := got.Float64s(); !reflect.DeepEqual(g, want) {
		return fmt.Errorf("got %v, want %v", g, want)
	}
	return nil
}

var dtypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64}

func TestLocalAllReduce(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		for _, dtype := range dtypes {
			for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
				if op == Mean && dtype == tensor.Int64 {
					continue
				}
				t.Run(fmt.Sprintf("n%d/%s/%s", n, dtype, op), func(t *testing.T) {
					want := expectReduce(op, n, 6, true)
					noErrors(t, runGroup(n, LocalConfig{}, func(c Communicator) error {
						x := rankTensor(dtype, c.Rank(), true, 2, 3)
						if err := c.AllReduce(x, op); err != nil {
							return err
						}
						return checkTensor(x, dtype, []int{2, 3}, want)
					}))
				})
			}
		}
	}
}

func TestLocalBroadcast(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		for _, dtype := range dtypes {
			for root := 0; root < n; root++ {
				t.Run(fmt.Sprintf("n%d/%s/root%d", n, dtype, root), func(t *testing.T) {
					want := rankTensor(tensor.Float64, root, false, 5).Float64s()
					noErrors(t, runGroup(n, LocalConfig{}, func(c Communicator) error {
						x := rankTensor(dtype, c.Rank(), false, 5)
						if err := c.Broadcast(x, root); err != nil {
							return err
						}
						return checkTensor(x, dtype, []int{5}, want)
					}))
				})
			}
		}
	}
}

func TestLocalAllGather(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		for _, dtype := range dtypes {
			t.Run(fmt.Sprintf("n%d/%s/even", n, dtype), func(t *testing.T) {
				var want []float64
				for r := 0; r < n; r++ {
					want = append(want, float64((r+1)*10), float64((r+1)*10+1), float64((r+1)*10+2), float64((r+1)*10+3))
				}
				noErrors(t, runGroup(n, LocalConfig{}, func(c Communicator) error {
					got, err := c.AllGather(rankTensor(dtype, c.Rank(), false, 2, 2))
					if err != nil {
						return err
					}
					return checkTensor(got, dtype, []int{2 * n, 2}, want)
				}))
			})
			t.Run(fmt.Sprintf("n%d/%s/uneven", n, dtype), func(t *testing.T) {
				// rank r contributes r+1 rows of 2: rows 0..r of its rankTensor.
				want, rows := unevenGather(n)
				noErrors(t, runGroup(n, LocalConfig{}, func(c Communicator) error {
					got, err := c.AllGather(rankTensor(dtype, c.Rank(), false, c.Rank()+1, 2))
					if err != nil {
						return err
					}
					return checkTensor(got, dtype, []int{rows, 2}, want)
				}))
			})
		}
	}
}

func TestLocalReduceScatter(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		for _, dtype := range dtypes {
			for _, rows := range []int{6, 7, 2} { // even, uneven, fewer rows than ranks
				t.Run(fmt.Sprintf("n%d/%s/rows%d", n, dtype, rows), func(t *testing.T) {
					sum := expectReduce(Sum, n, rows*2, false)
					noErrors(t, runGroup(n, LocalConfig{}, func(c Communicator) error {
						got, err := c.ReduceScatter(rankTensor(dtype, c.Rank(), false, rows, 2), Sum)
						if err != nil {
							return err
						}
						// Hand split: the first rows%n ranks get one row more.
						start, count := 0, 0
						for r := 0; r <= c.Rank(); r++ {
							start += count
							count = rows / n
							if r < rows%n {
								count++
							}
						}
						return checkTensor(got, dtype, []int{count, 2}, sum[start*2:(start+count)*2])
					}))
				})
			}
		}
	}
}

func TestRowSplitByHand(t *testing.T) {
	for _, tc := range []struct{ rows, size, r, start, count int }{
		{7, 3, 0, 0, 3}, {7, 3, 1, 3, 2}, {7, 3, 2, 5, 2}, {2, 3, 2, 2, 0}, {6, 2, 1, 3, 3},
	} {
		if s, c := rowSplit(tc.rows, tc.size, tc.r); s != tc.start || c != tc.count {
			t.Errorf("rowSplit(%d,%d,%d) = %d,%d, want %d,%d", tc.rows, tc.size, tc.r, s, c, tc.start, tc.count)
		}
	}
}

func TestLocalBarrierAndReuse(t *testing.T) {
	// Many rounds in a row: the rendezvous must not mix rounds.
	noErrors(t, runGroup(3, LocalConfig{}, func(c Communicator) error {
		for i := 0; i < 50; i++ {
			if err := c.Barrier(); err != nil {
				return err
			}
			x := tensor.FromFloat32s(tensor.CPU(), []float32{float32(i)})
			if err := c.AllReduce(x, Sum); err != nil {
				return err
			}
			if got := x.Float32s()[0]; got != float32(3*i) {
				return fmt.Errorf("round %d: got %v", i, got)
			}
		}
		return c.Close()
	}))
}

func TestLocalMismatch(t *testing.T) {
	cases := []struct {
		name  string
		call  func(c Communicator) error
		wants []string
	}{
		{"shape", func(c Communicator) error {
			return c.AllReduce(tensor.Zeros(tensor.CPU(), 2, c.Rank()+2), Sum)
		}, []string{"rank 0 has shape [2 2]", "rank 1 has shape [2 3]"}},
		{"allgather inner dims", func(c Communicator) error {
			_, err := c.AllGather(tensor.Zeros(tensor.CPU(), 2, c.Rank()+1))
			return err
		}, []string{"rank 0 has shape [2 1]", "rank 1 has shape [2 2]"}},
		{"dtype", func(c Communicator) error {
			return c.Broadcast(tensor.ZerosOf(tensor.CPU(), dtypes[c.Rank()], 3), 0)
		}, []string{"rank 0 has a float32 tensor", "rank 1 a float64 tensor"}},
		{"collective", func(c Communicator) error {
			if c.Rank() == 1 {
				return c.Barrier()
			}
			return c.AllReduce(tensor.Zeros(tensor.CPU(), 1), Max)
		}, []string{"rank 0 called AllReduce(Max)", "rank 1 called Barrier"}},
		{"root", func(c Communicator) error {
			return c.Broadcast(tensor.Zeros(tensor.CPU(), 1), c.Rank())
		}, []string{"Broadcast(root 0)", "Broadcast(root 1)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := runGroup(2, LocalConfig{Timeout: 10 * time.Second}, tc.call)
			for r, err := range errs {
				if !errors.Is(err, ErrMismatch) {
					t.Fatalf("rank %d: got %v, want ErrMismatch", r, err)
				}
				for _, w := range tc.wants {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("rank %d: error %q does not say %q", r, err, w)
					}
				}
			}
		})
	}
}

func TestLocalUnsupported(t *testing.T) {
	c := NewLocalGroup(1)[0]
	if err := c.AllReduce(tensor.ZerosOf(tensor.CPU(), tensor.Int64, 2), Mean); !errors.Is(err, ErrUnsupported) {
		t.Errorf("int64 Mean: got %v", err)
	}
	if err := c.AllReduce(tensor.ZerosOf(tensor.CPU(), tensor.Int32, 2), Sum); !errors.Is(err, ErrUnsupported) {
		t.Errorf("int32: got %v", err)
	}
	if err := c.Broadcast(tensor.Zeros(tensor.CPU(), 2), 1); err == nil {
		t.Error("root outside the group: no error")
	}
	x := tensor.Zeros(tensor.CPU(), 2)
	x.Release()
	if err := c.AllReduce(x, Sum); err == nil || !strings.Contains(err.Error(), "rank 0") {
		t.Errorf("released tensor: got %v", err)
	}
}

func TestLocalTimeout(t *testing.T) {
	group := NewLocalGroupConfig(3, LocalConfig{Timeout: 200 * time.Millisecond})
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := time.Now()
	for r := 0; r < 2; r++ { // rank 2 never arrives
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = group[r].AllReduce(tensor.Ones(tensor.CPU(), 4), Sum)
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("waited %s", d)
	}
	for r, err := range errs {
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "rank(s) [2] never arrived") {
			t.Errorf("rank %d: got %v, want a timeout naming rank 2", r, err)
		}
	}
	// The group is broken: the late rank fails at once instead of waiting.
	if err := group[2].AllReduce(tensor.Ones(tensor.CPU(), 4), Sum); !errors.Is(err, ErrTimeout) {
		t.Errorf("late rank: got %v", err)
	}
}

func TestLocalCloseReleasesWaiters(t *testing.T) {
	group := NewLocalGroupConfig(2, LocalConfig{Timeout: time.Minute})
	done := make(chan error)
	go func() { done <- group[0].Barrier() }()
	time.Sleep(50 * time.Millisecond)
	if err := group[1].Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "rank 1") {
			t.Errorf("got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Barrier still waiting after the other member closed")
	}
	if err := group[1].Barrier(); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v", err)
	}
}

func TestLocalAutodiffParameter(t *testing.T) {
	// A parameter on an autodiff device is updated in place, like a gradient.
	noErrors(t, runGroup(2, LocalConfig{}, func(c Communicator) error {
		x := tensor.FromFloat32s(tensor.CPU().Autodiff(), []float32{float32(c.Rank()), 1})
		if err := c.AllReduce(x, Mean); err != nil {
			return err
		}
		return checkTensor(x, tensor.Float32, []int{2}, []float64{0.5, 1})
	}))
}

// unevenGather is what AllGather returns when each rank r of n gives the
// first r+1 rows of 2 of its rankTensor: the values in rank order, and the
// number of rows.
func unevenGather(n int) (want []float64, rows int) {
	for r := 0; r < n; r++ {
		for i := 0; i < 2*(r+1); i++ {
			want = append(want, float64((r+1)*10+i))
		}
		rows += r + 1
	}
	return want, rows
}

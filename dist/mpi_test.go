package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/kiln-ml/kiln/backends/strict" // a device whose buffers are not host memory
	"github.com/kiln-ml/kiln/tensor"
)

// childEnv marks a test binary started by mpirun from one of the tests
// below; its value names what the ranks do.
const childEnv = "KILN_DIST_MPI_CHILD"

// mpirun runs this test binary under mpirun with np ranks, running only
// the test named run, and returns its combined output and error.
func mpirun(t testing.TB, np int, mode, run string, timeout time.Duration) (string, time.Duration, error) {
	t.Helper()
	bin, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not on PATH: install Debian's openmpi-bin to run the MPI tests")
	}
	args := []string{"-np", fmt.Sprint(np), "--oversubscribe", "--bind-to", "none",
		"--mca", "btl", "self,vader", "-x", childEnv + "=" + mode}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	args = append(args, os.Args[0], "-test.run", "^"+run+"$", "-test.v")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	return out.String(), time.Since(start), err
}

func TestMPICollectives(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			out, took, err := mpirun(t, np, "collectives", "TestMPIChild", 2*time.Minute)
			t.Logf("mpirun -np %d took %s", np, took)
			if err != nil {
				t.Fatalf("mpirun -np %d: %v\n%s", np, err, out)
			}
			for r := 0; r < np; r++ {
				want := fmt.Sprintf("rank %d of %d: all collectives checked", r, np)
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestMPIRankDies(t *testing.T) {
	out, took, err := mpirun(t, 2, "die", "TestMPIChild", 60*time.Second)
	if err == nil {
		t.Fatalf("mpirun succeeded though rank 1 was killed:\n%s", out)
	}
	if took > 30*time.Second {
		t.Errorf("mpirun took %s to end after rank 1 died", took)
	}
	// Open MPI: "mpirun noticed that process rank 1 with PID … exited on signal 9".
	if !strings.Contains(out, "process rank 1 ") {
		t.Errorf("Open MPI's message does not name rank 1:\n%s", out)
	}
	t.Logf("mpirun ended in %s with %v; output:\n%s", took, err, out)
}

func TestMPIRankHangs(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		want       []string
	}{
		{"in a Barrier", "hang", []string{"rank 0: collective Barrier did not complete", "rank 0: then rank 0: AllReduce: communicator broken"}},
		// The AllReduce left blocked still holds the tensor's storage, which
		// MPI may write: releasing the tensor must not free it.
		// A rank that closes (its run failed) while another waits in a
		// collective: both learn it at once, with no timeout.
		{"when a rank closes", "leave", []string{"rank 0: AllReduce: dist: communicator closed: rank 0: rank 1 left the group (Close) while rank 0 called AllReduce(Sum)",
			"rank 1: Close: dist: communicator closed: rank 1: rank 1 left the group (Close) while rank 0 called AllReduce(Sum)", "rank 0: then rank 0: Barrier: communicator broken"}},
		{"in an AllReduce of a CPU tensor", "hangreduce", []string{"rank 0: collective AllReduce did not complete", "rank 0: storage held after release"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, took, err := mpirun(t, 2, tc.mode, "TestMPIChild", 60*time.Second)
			if took > 30*time.Second {
				t.Errorf("mpirun took %s", took)
			}
			t.Logf("mpirun ended in %s with %v; output:\n%s", took, err, out)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("rank 0 did not report %q (err %v):\n%s", w, err, out)
				}
			}
		})
	}
}

func TestMPIMissingLibrary(t *testing.T) {
	t.Setenv("KILN_MPI_LIBRARY", "/nonexistent/libmpi.so.40")
	_, err := OpenMPI(context.Background(), Config{})
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("got %v, want ErrNoLibrary", err)
	}
	for _, w := range []string{"/nonexistent/libmpi.so.40", "openmpi-bin", "libopenmpi3"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	// Init under a launcher reports the same, with the launcher.
	unsetLauncher(t)
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	_, err = Init(context.Background())
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "Open MPI (mpirun), rank 0 of 2") {
		t.Fatalf("Init: got %v", err)
	}
}

// TestMPIChild is what each rank runs under mpirun; without childEnv it
// skips.
func TestMPIChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("run by TestMPICollectives and friends under mpirun")
	}
	if l := Launcher(); l.Name != "Open MPI (mpirun)" {
		t.Fatalf("launcher: got %q", l)
	}
	cfg := Config{}
	if mode == "hang" || mode == "hangreduce" {
		cfg.Timeout = 2 * time.Second
	}
	c, err := InitConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Backend() != "mpi" {
		t.Fatalf("backend %q", c.Backend())
	}
	n, rank := c.Size(), c.Rank()
	switch mode {
	case "die":
		x := tensor.Ones(tensor.CPU(), 4)
		if err := c.AllReduce(x, Sum); err != nil {
			t.Fatal(err)
		}
		if rank == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		err := c.Barrier() // never completes: rank 1 is gone
		t.Fatalf("rank %d: Barrier returned %v after rank 1 died", rank, err)
	case "hang":
		if rank == 1 {
			time.Sleep(20 * time.Second) // never calls the Barrier
			return
		}
		err := c.Barrier()
		fmt.Printf("rank %d: %v\n", rank, err)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("want ErrTimeout, got %v", err)
		}
		// The communicator is broken: the next collective fails at once.
		start := time.Now()
		err = c.AllReduce(tensor.Ones(tensor.CPU(), 2), Sum)
		if !errors.Is(err, ErrTimeout) || time.Since(start) > time.Second {
			t.Fatalf("after a timeout: got %v after %s", err, time.Since(start))
		}
		fmt.Printf("rank %d: then %v\n", rank, err)
		os.Exit(3) // without MPI_Finalize: mpirun ends the job
	case "hangreduce":
		if rank == 1 {
			time.Sleep(20 * time.Second) // never calls the AllReduce
			return
		}
		dev := tensor.CPU()
		before := dev.MemoryStats().LiveBytes
		x := tensor.Ones(dev, 1<<20)
		err := c.AllReduce(x, Sum)
		fmt.Printf("rank %d: %v\n", rank, err)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("want ErrTimeout, got %v", err)
		}
		x.Release()
		if live := dev.MemoryStats().LiveBytes - before; live != 4<<20 {
			t.Fatalf("after releasing the tensor MPI may still write: %d live bytes, want %d", live, 4<<20)
		}
		fmt.Printf("rank %d: storage held after release\n", rank)
		os.Exit(3) // without MPI_Finalize: mpirun ends the job
	case "leave":
		if rank == 1 {
			fmt.Printf("rank %d: Close: %v\n", rank, c.Close())
			return
		}
		start := time.Now()
		err := c.AllReduce(tensor.Ones(tensor.CPU(), 4), Sum)
		fmt.Printf("rank %d: AllReduce: %v\n", rank, err)
		if !errors.Is(err, ErrClosed) || time.Since(start) > 10*time.Second {
			t.Fatalf("want ErrClosed at once, got %v after %s", err, time.Since(start))
		}
		err = c.Barrier()
		fmt.Printf("rank %d: then %v\n", rank, err)
		if err == nil {
			t.Fatal("a Barrier after a rank left succeeded")
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close of a broken communicator: %v", err)
		}
		return
	case "bench":
		if err := mpiChildBench(c); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := mpiChildCollectives(c); err != nil {
		t.Fatalf("rank %d of %d: %v", rank, n, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rank %d of %d: all collectives checked\n", rank, n)
}

// mpiChildCollectives checks every collective against hand-computed values
// on this rank.
func mpiChildCollectives(c Communicator) error {
	n, rank := c.Size(), c.Rank()
	for _, dtype := range dtypes {
		for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
			if op == Mean && dtype == tensor.Int64 {
				continue
			}
			x := rankTensor(dtype, rank, true, 2, 3)
			if err := c.AllReduce(x, op); err != nil {
				return err
			}
			if err := checkTensor(x, dtype, []int{2, 3}, expectReduce(op, n, 6, true)); err != nil {
				return fmt.Errorf("AllReduce %s %s: %v", dtype, op, err)
			}
		}
		for root := 0; root < n; root++ {
			x := rankTensor(dtype, rank, false, 5)
			if err := c.Broadcast(x, root); err != nil {
				return err
			}
			if err := checkTensor(x, dtype, []int{5}, rankTensor(tensor.Float64, root, false, 5).Float64s()); err != nil {
				return fmt.Errorf("Broadcast %s root %d: %v", dtype, root, err)
			}
		}
		// Uneven AllGather: rank r gives r+1 rows of 2.
		want, rows := unevenGather(n)
		g, err := c.AllGather(rankTensor(dtype, rank, false, rank+1, 2))
		if err != nil {
			return err
		}
		if err := checkTensor(g, dtype, []int{rows, 2}, want); err != nil {
			return fmt.Errorf("AllGather %s: %v", dtype, err)
		}
		for _, rows := range []int{6, 7, 2} {
			for _, op := range []ReduceOp{Sum, Max} {
				s, err := c.ReduceScatter(rankTensor(dtype, rank, false, rows, 2), op)
				if err != nil {
					return err
				}
				red := expectReduce(op, n, rows*2, false)
				start, count := 0, 0
				for r := 0; r <= rank; r++ {
					start += count
					count = rows / n
					if r < rows%n {
						count++
					}
				}
				if err := checkTensor(s, dtype, []int{count, 2}, red[start*2:(start+count)*2]); err != nil {
					return fmt.Errorf("ReduceScatter %s %s rows %d: %v", dtype, op, rows, err)
				}
			}
		}
	}
	// A contiguous CPU tensor is reduced in its own storage (its views see
	// the result); a strided view and a tensor on a device without host
	// buffers go through a copy written back.
	strict := tensor.MustDevice("strict")
	for _, tc := range []struct {
		name string
		held func(base *tensor.Tensor) *tensor.Tensor // what is reduced, base being [3 2]
	}{
		{"contiguous", func(b *tensor.Tensor) *tensor.Tensor { return b }},
		{"transposed view", func(b *tensor.Tensor) *tensor.Tensor { return b.Transpose(0, 1) }},
		{"strict device", func(b *tensor.Tensor) *tensor.Tensor { return b }},
	} {
		for _, op := range []ReduceOp{Sum, Mean} {
			base := rankTensor(tensor.Float32, rank, true, 3, 2)
			if tc.name == "strict device" {
				base = base.ToDevice(strict)
			}
			flat := base.Reshape(6)
			if err := c.AllReduce(tc.held(base), op); err != nil {
				return fmt.Errorf("AllReduce %s of a %s: %w", op, tc.name, err)
			}
			if err := checkTensor(flat, tensor.Float32, []int{6}, expectReduce(op, n, 6, true)); err != nil {
				return fmt.Errorf("AllReduce %s of a %s: %v", op, tc.name, err)
			}
			base.Release()
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	// Disagreeing ranks all fail with an error naming them, and the
	// communicator still works afterwards.
	err := c.AllReduce(tensor.Zeros(tensor.CPU(), 2, rank+2), Sum)
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "rank 0 has shape [2 2] and rank 1 has shape [2 3]") {
		return fmt.Errorf("mismatched shapes: got %v", err)
	}
	x := tensor.FromFloat64s(tensor.CPU(), []float64{1})
	if err := c.AllReduce(x, Sum); err != nil {
		return err
	}
	if got := x.Float64s()[0]; got != float64(n) {
		return fmt.Errorf("after a mismatch: got %v, want %d", got, n)
	}
	return nil
}

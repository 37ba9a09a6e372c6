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

// The tests in this file run everywhere: without NCCL they check the
// errors, and the collectives run on GPUs (skipped without them) or on the
// fake NCCL of nccl_fake_test.go.

func TestNCCLMissingLibrary(t *testing.T) {
	missing := "/nonexistent/libnccl.so.2"
	t.Setenv("KILN_NCCL_LIBRARY", missing)
	_, err := NewNCCLGroup([]tensor.Device{fakeGPU(t, 0)})
	if !errors.Is(err, ErrNoNCCL) {
		t.Fatalf("err = %v, want ErrNoNCCL", err)
	}
	for _, want := range []string{missing, "NVIDIA's NCCL", "apt install libnccl2", "KILN_NCCL_LIBRARY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestNCCLGroupRejectsDevices(t *testing.T) {
	t.Setenv("KILN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2") // the devices are checked first
	for _, tc := range []struct {
		name    string
		devices []tensor.Device
		is      error
		want    string
	}{
		{"no devices", nil, nil, "no devices"},
		{"the CPU", []tensor.Device{tensor.CPU()}, ErrUnsupported, "cpu, not a CUDA device"},
		{"a zero Device", []tensor.Device{{}}, ErrUnsupported, "device 0"},
		{"a device twice", []tensor.Device{fakeGPU(t, 0), fakeGPU(t, 0)}, ErrUnsupported, "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comms, err := NewNCCLGroup(tc.devices)
			if err == nil {
				t.Fatalf("got %d communicators, want an error", len(comms))
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want one wrapping %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestNCCLRejectsNonCUDADevice(t *testing.T) {
	boot := NewLocalGroup(1)[0]
	_, err := NCCL(t.Context(), boot, tensor.CPU(), Config{})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "not a CUDA device") {
		t.Fatalf("err = %v, want ErrUnsupported saying the CPU is not a CUDA device", err)
	}
}

// The bindings' Go signatures are ones purego can call (it checks them when
// binding: the struct argument, the string results).
func TestNCCLBindings(t *testing.T) {
	l, err := bindNCCLSymbols("fake", func(string) (uintptr, error) { return 0x1000, nil })
	if err != nil {
		t.Fatal(err)
	}
	if l.getLastError == nil || l.commInitRank == nil || l.reduceScatter == nil {
		t.Error("functions left unbound")
	}
	_, err = bindNCCLSymbols("old", func(name string) (uintptr, error) {
		if name == "ncclCommGetAsyncError" {
			return 0, errors.New("undefined symbol")
		}
		return 0x1000, nil
	})
	if !errors.Is(err, ErrNoNCCL) || !strings.Contains(err.Error(), "ncclCommGetAsyncError") {
		t.Errorf("err = %v, want ErrNoNCCL naming the missing symbol", err)
	}
}

func TestNCCLVersionString(t *testing.T) {
	for code, want := range map[int]string{22105: "2.21.5", 2804: "2.8.4", 21903: "2.19.3"} {
		if got := (&ncclLib{version: code}).versionString(); got != want {
			t.Errorf("version %d = %q, want %q", code, got, want)
		}
	}
}

// runMembers calls f for every member, each in its own goroutine, and
// returns their errors by rank.
func runMembers(comms []Communicator, f func(c Communicator) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(c)
		}()
	}
	wg.Wait()
	return errs
}

// deviceValues makes a tensor of dtype and shape holding vals on dev.
func deviceValues(dev tensor.Device, dtype tensor.DType, vals []float64, shape ...int) *tensor.Tensor {
	host := tensor.FromFloat64s(tensor.CPU(), vals, shape...)
	cast := host.To(dtype)
	out := cast.ToDevice(dev)
	host.Release()
	if cast != host {
		cast.Release()
	}
	return out
}

// expect reports whether got has shape and values want (exactly: every
// value in these checks is a small integer or half of one).
func expect(what string, got *tensor.Tensor, shape []int, want []float64) error {
	if !reflect.DeepEqual(got.Shape(), shape) {
		return fmt.Errorf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	if vals := got.Float64s(); !reflect.DeepEqual(vals, want) {
		return fmt.Errorf("%s: %v, want %v", what, vals, want)
	}
	return nil
}

// sequence returns f(0), …, f(n-1).
func sequence(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// checkAllReduce runs every reduction on every member and checks the
// known answers.
func checkAllReduce(comms []Communicator, dtype tensor.DType) []error {
	return runMembers(comms, func(c Communicator) error { return allReduceScript(c, dtype) })
}

// allReduceScript is one member's part of checkAllReduce: rank r holds
// (r+1)(i+1) at element i of a [2 3] tensor.
func allReduceScript(c Communicator, dtype tensor.DType) error {
	n := c.Size()
	want := map[ReduceOp]func(i int) float64{
		Sum:  func(i int) float64 { return float64((i + 1) * n * (n + 1) / 2) },
		Mean: func(i int) float64 { return float64(i+1) * float64(n+1) / 2 },
		Max:  func(i int) float64 { return float64((i + 1) * n) },
		Min:  func(i int) float64 { return float64(i + 1) },
	}
	dev := c.(*ncclComm).dev
	r := c.Rank()
	for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
		if op == Mean && !dtype.IsFloat() {
			continue
		}
		x := deviceValues(dev, dtype, sequence(6, func(i int) float64 { return float64((r + 1) * (i + 1)) }), 2, 3)
		if err := c.AllReduce(x, op); err != nil {
			return err
		}
		if err := expect(fmt.Sprintf("AllReduce %s of %s", op, dtype), x, []int{2, 3}, sequence(6, want[op])); err != nil {
			return err
		}
		x.Release()
	}
	return nil
}

// checkCollectives runs broadcast, all-gather (even and uneven),
// reduce-scatter (even and uneven), an all-reduce of a strided view and a
// barrier on every member, and checks the known answers.
func checkCollectives(comms []Communicator) []error {
	return runMembers(comms, collectivesScript)
}

// collectivesScript is one member's part of checkCollectives.
func collectivesScript(c Communicator) error {
	n := c.Size()
	dev := c.(*ncclComm).dev
	r := c.Rank()

	// Broadcast from the last rank: rank r holds 100r + i.
	x := deviceValues(dev, tensor.Float32, sequence(4, func(i int) float64 { return float64(100*r + i) }), 4)
	if err := c.Broadcast(x, n-1); err != nil {
		return err
	}
	if err := expect("Broadcast", x, []int{4}, sequence(4, func(i int) float64 { return float64(100*(n-1) + i) })); err != nil {
		return err
	}

	// AllGather, uneven: rank r has r+1 rows of 2, holding 10r + i.
	mine := deviceValues(dev, tensor.Float32, sequence(2*(r+1), func(i int) float64 { return float64(10*r + i) }), r+1, 2)
	all, err := c.AllGather(mine)
	if err != nil {
		return err
	}
	var want []float64
	for q := range n {
		want = append(want, sequence(2*(q+1), func(i int) float64 { return float64(10*q + i) })...)
	}
	if err := expect("AllGather (uneven)", all, []int{n * (n + 1) / 2, 2}, want); err != nil {
		return err
	}

	// AllGather, even: every rank has 2 rows of 3 int64s.
	mine = deviceValues(dev, tensor.Int64, sequence(6, func(i int) float64 { return float64(10*r + i) }), 2, 3)
	if all, err = c.AllGather(mine); err != nil {
		return err
	}
	want = nil
	for q := range n {
		want = append(want, sequence(6, func(i int) float64 { return float64(10*q + i) })...)
	}
	if err := expect("AllGather (even)", all, []int{2 * n, 3}, want); err != nil {
		return err
	}

	// ReduceScatter, even: [2n 2], rank r holding r + i; rank r gets
	// rows 2r and 2r+1 of the sum (n i + n(n−1)/2).
	full := deviceValues(dev, tensor.Float32, sequence(4*n, func(i int) float64 { return float64(r + i) }), 2*n, 2)
	part, err := c.ReduceScatter(full, Sum)
	if err != nil {
		return err
	}
	if err := expect("ReduceScatter (even)", part, []int{2, 2}, sequence(4, func(i int) float64 {
		return float64(n*(4*r+i) + n*(n-1)/2)
	})); err != nil {
		return err
	}

	// ReduceScatter, uneven (2n+1 rows, the first rank gets 3), Max.
	full = deviceValues(dev, tensor.Float64, sequence(2*n+1, func(i int) float64 { return float64(r * i) }), 2*n+1)
	if part, err = c.ReduceScatter(full, Max); err != nil {
		return err
	}
	start, count := rowSplit(2*n+1, n, r)
	if err := expect("ReduceScatter (uneven, Max)", part, []int{count}, sequence(count, func(i int) float64 {
		return float64((n - 1) * (start + i))
	})); err != nil {
		return err
	}

	// ReduceScatter, Mean.
	full = deviceValues(dev, tensor.Float32, sequence(2*n, func(i int) float64 { return float64(2 * (r + 1)) }), 2*n)
	if part, err = c.ReduceScatter(full, Mean); err != nil {
		return err
	}
	if err := expect("ReduceScatter (Mean)", part, []int{2}, []float64{float64(n + 1), float64(n + 1)}); err != nil {
		return err
	}

	// AllReduce of a transposed view: the reduction lands in the
	// viewed tensor's storage.
	base := deviceValues(dev, tensor.Float32, sequence(6, func(i int) float64 { return float64(i) }), 2, 3)
	view := base.Transpose(0, 1)
	if err := c.AllReduce(view, Sum); err != nil {
		return err
	}
	if err := expect("AllReduce of a transposed view", base, []int{2, 3}, sequence(6, func(i int) float64 { return float64(n * i) })); err != nil {
		return err
	}
	return c.Barrier()
}

// noMemberErrors fails t with the first member's error.
func noMemberErrors(t testing.TB, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// closeAll closes every member and fails t on an error.
func closeAll(t testing.TB, comms []Communicator) {
	t.Helper()
	for _, c := range comms {
		if err := c.Close(); err != nil {
			t.Errorf("Close rank %d: %v", c.Rank(), err)
		}
	}
}

// gpuGroup returns an NCCL group over the first n GPUs (every GPU when n
// is 0), or skips t saying what is missing: a CUDA driver and GPU, or NCCL.
func gpuGroup(t testing.TB, n int) []Communicator {
	t.Helper()
	if _, err := tensor.Cuda(0); err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	var devices []tensor.Device
	for _, info := range tensor.Devices() {
		if info.Kind == "cuda" && (n == 0 || len(devices) < n) {
			d, err := tensor.Cuda(info.Index)
			if err != nil {
				t.Fatal(err)
			}
			devices = append(devices, d)
		}
	}
	comms, err := NewNCCLGroupConfig(devices, Config{Timeout: 2 * time.Minute})
	if errors.Is(err, ErrNoNCCL) {
		t.Skipf("NCCL not available: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(t, comms) })
	return comms
}

// TestNCCLProbe says whether this machine can run the NCCL tests: it logs
// NCCL's version and the GPU count, or skips saying what is missing. The
// gpu-check script reads it.
func TestNCCLProbe(t *testing.T) {
	comms := gpuGroup(t, 0)
	c := comms[0].(*ncclComm)
	t.Logf("NCCL %s (%s) on %d GPU(s)", c.st.lib.versionString(), c.st.lib.path, len(comms))
}

func TestNCCLAllReduce(t *testing.T) {
	t.Run("one GPU", func(t *testing.T) {
		comms := gpuGroup(t, 1)
		for _, dtype := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Float16, tensor.BFloat16} {
			noMemberErrors(t, checkAllReduce(comms, dtype))
		}
	})
	t.Run("every GPU", func(t *testing.T) {
		comms := gpuGroup(t, 0)
		t.Logf("%d GPU(s)", len(comms))
		noMemberErrors(t, checkAllReduce(comms, tensor.Float32))
		noMemberErrors(t, checkAllReduce(comms, tensor.Int64))
	})
}

func TestNCCLBroadcast(t *testing.T) {
	comms := gpuGroup(t, 0)
	noMemberErrors(t, runMembers(comms, func(c Communicator) error {
		dev := c.(*ncclComm).dev
		x := deviceValues(dev, tensor.Float32, sequence(1000, func(i int) float64 { return float64(c.Rank()*1000 + i) }), 10, 100)
		if err := c.Broadcast(x, 0); err != nil {
			return err
		}
		return expect("Broadcast", x, []int{10, 100}, sequence(1000, func(i int) float64 { return float64(i) }))
	}))
}

func TestNCCLAllGather(t *testing.T) {
	comms := gpuGroup(t, 0)
	noMemberErrors(t, checkCollectives(comms)) // all-gathers among the rest
}

func TestNCCLReduceScatter(t *testing.T) {
	comms := gpuGroup(t, 0)
	n := len(comms)
	noMemberErrors(t, runMembers(comms, func(c Communicator) error {
		dev := c.(*ncclComm).dev
		r := c.Rank()
		full := deviceValues(dev, tensor.Float32, sequence(8*n, func(i int) float64 { return float64(r + 1) }), 4*n, 2)
		part, err := c.ReduceScatter(full, Sum)
		if err != nil {
			return err
		}
		return expect("ReduceScatter", part, []int{4, 2}, sequence(8, func(int) float64 { return float64(n * (n + 1) / 2) }))
	}))
}

// BenchmarkNCCLAllReduce times in-place float32 all-reduces across every
// GPU of the machine and reports the algorithm bandwidth (bytes / time)
// and the bus bandwidth (algbw × 2(n−1)/n, what each GPU's links carry in
// a ring all-reduce; 0 on one GPU, where nothing moves).
func BenchmarkNCCLAllReduce(b *testing.B) {
	comms := gpuGroup(b, 0)
	n := len(comms)
	for _, size := range []int{1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20} {
		b.Run(byteSize(size), func(b *testing.B) {
			xs := make([]*tensor.Tensor, n)
			for r, c := range comms {
				xs[r] = tensor.FullOf(c.(*ncclComm).dev, tensor.Float32, 1, size/4)
			}
			defer release(nil, xs...)
			// Warm up: NCCL connects the GPUs on first use.
			noMemberErrors(b, runMembers(comms, func(c Communicator) error { return c.AllReduce(xs[c.Rank()], Sum) }))
			b.ResetTimer()
			start := time.Now()
			noMemberErrors(b, runMembers(comms, func(c Communicator) error {
				for range b.N {
					if err := c.AllReduce(xs[c.Rank()], Sum); err != nil {
						return err
					}
				}
				return nil
			}))
			sec := time.Since(start).Seconds() / float64(b.N)
			algbw := float64(size) / sec / 1e9
			b.ReportMetric(algbw, "algGB/s")
			b.ReportMetric(algbw*2*float64(n-1)/float64(n), "busGB/s")
			b.ReportMetric(float64(n), "GPUs")
		})
	}
}

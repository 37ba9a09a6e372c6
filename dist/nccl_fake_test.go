package dist

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/tensor"
)

// Without a GPU, the NCCL communicators run here against two stand-ins:
//
//   - "fakegpu" devices: the CPU backend plus the two methods NCCL needs
//     from the CUDA backend (DevicePointer, Submit), with host addresses
//     for device addresses;
//   - testdata/fakenccl.c, built with gcc into a library that exports
//     nccl.h's functions with NCCL's signatures and runs the collectives on
//     the host.
//
// This checks the purego bindings' calling convention (the unique id passed
// by value, enums, strings), the rendezvous and grouping of an in-process
// group, the header exchange, padding and splitting, Mean, and the
// watchdog's abort. It cannot check NCCL itself, CUDA streams or GPUs.

func init() { backends.Register(fakeGPUDriver{}) }

// fakeGPUDriver serves "fakegpu:N" devices.
type fakeGPUDriver struct{}

var (
	fakeGPUMu sync.Mutex
	fakeGPUs  = map[int]*fakeGPUBackend{}
)

func (fakeGPUDriver) Kind() string                     { return "fakegpu" }
func (fakeGPUDriver) Priority() int                    { return -10 } // never the default device
func (fakeGPUDriver) Enumerate() []backends.DeviceInfo { return nil }
func (fakeGPUDriver) Open(i int) (backends.Backend, error) {
	fakeGPUMu.Lock()
	defer fakeGPUMu.Unlock()
	if b, ok := fakeGPUs[i]; ok {
		return b, nil
	}
	b := &fakeGPUBackend{Backend: cpu.New(1), index: i}
	fakeGPUs[i] = b
	return b, nil
}

// fakeGPUBackend is a CPU backend that hands out its buffers' host
// addresses as device addresses.
type fakeGPUBackend struct {
	backends.Backend
	index int
}

func (b *fakeGPUBackend) Info() backends.DeviceInfo {
	return backends.DeviceInfo{Kind: "fakegpu", Index: b.index, Name: "fake GPU"}
}

// DevicePointer returns the address of the CPU buffer's memory.
func (b *fakeGPUBackend) DevicePointer(buf backends.Buffer) (uintptr, int64, error) {
	if h, ok := buf.(interface{ HostBytes() []byte }); ok {
		if mem := h.HostBytes(); len(mem) > 0 {
			return uintptr(unsafe.Pointer(&mem[0])), buf.Bytes(), nil
		}
		return 0, 0, nil
	}
	v := reflect.ValueOf(buf)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0, 0, errors.New("fakegpu: not a CPU buffer")
	}
	words := v.Elem().FieldByName("words")
	if !words.IsValid() || words.Kind() != reflect.Slice {
		return 0, 0, errors.New("fakegpu: the CPU buffer has no words")
	}
	return words.Pointer(), buf.Bytes(), nil
}

// Submit runs f at once: the CPU backend runs its ops before returning.
func (b *fakeGPUBackend) Submit(f func(stream uintptr) error) error { return f(0) }

// fakeGPU returns device fakegpu:i.
func fakeGPU(t testing.TB, i int) tensor.Device {
	t.Helper()
	d, err := tensor.Open("fakegpu", i)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func fakeGPUList(t testing.TB, n int) []tensor.Device {
	out := make([]tensor.Device, n)
	for i := range out {
		out[i] = fakeGPU(t, i)
	}
	return out
}

// fakeNCCL is the fake library, built for one test.
type fakeNCCL struct {
	stat     func(what int32) int32
	setAsync func(code int32)
}

// useFakeNCCL builds testdata/fakenccl.c into a fresh library (fresh state)
// and points KILN_NCCL_LIBRARY at it; without gcc it skips t.
func useFakeNCCL(t *testing.T) *fakeNCCL {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not installed: the fake NCCL library cannot be built")
	}
	src, err := filepath.Abs("testdata/fakenccl.c")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(t.TempDir(), "libnccl.so.2")
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-O1", "-pthread", "-Wall", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("building the fake NCCL: %v\n%s", err, out)
	}
	t.Setenv("KILN_NCCL_LIBRARY", lib)
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNCCL{}
	purego.RegisterLibFunc(&f.stat, h, "fakeNcclStat")
	purego.RegisterLibFunc(&f.setAsync, h, "fakeNcclSetAsyncError")
	return f
}

// The fake library's counters (fakeNcclStat).
const (
	statGroupedCalls = 0
	statInitAllSize  = 1
	statDestroyed    = 2
	statAborted      = 3
	statCollectives  = 4
	statInitRank     = 5
	statDevice0      = 100
)

func TestNCCLFakeGroup(t *testing.T) {
	fake := useFakeNCCL(t)
	devices := []tensor.Device{fakeGPU(t, 2), fakeGPU(t, 0), fakeGPU(t, 3), fakeGPU(t, 1)}
	comms, err := NewNCCLGroup(devices)
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.stat(statInitAllSize); got != 4 {
		t.Errorf("ncclCommInitAll of %d devices, want 4", got)
	}
	for i, want := range []int32{2, 0, 3, 1} {
		if got := fake.stat(statDevice0 + int32(i)); got != want {
			t.Errorf("device %d passed as ordinal %d, want %d", i, got, want)
		}
	}
	for r, c := range comms {
		if c.Rank() != r || c.Size() != 4 || c.LocalRank() != r || c.Backend() != "nccl" {
			t.Errorf("member %d: rank %d of %d, local %d, backend %q", r, c.Rank(), c.Size(), c.LocalRank(), c.Backend())
		}
	}
	for _, dtype := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32} {
		noMemberErrors(t, checkAllReduce(comms, dtype))
	}
	noMemberErrors(t, checkCollectives(comms))
	if fake.stat(statGroupedCalls) == 0 {
		t.Error("no collective was issued as one NCCL group")
	}
	closeAll(t, comms)
	if got := fake.stat(statDestroyed); got != 4 {
		t.Errorf("%d communicators destroyed, want 4", got)
	}
	if err := comms[0].Barrier(); !errors.Is(err, ErrClosed) {
		t.Errorf("Barrier after Close: %v, want ErrClosed", err)
	}
}

func TestNCCLFakeWorldOfOne(t *testing.T) {
	useFakeNCCL(t)
	comms, err := NewNCCLGroup([]tensor.Device{fakeGPU(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	noMemberErrors(t, checkAllReduce(comms, tensor.Float32))
	noMemberErrors(t, checkCollectives(comms))
	closeAll(t, comms)
}

// runProcesses starts an NCCL communicator per rank, as NCCL would in one
// process per GPU, bootstrapped over an in-process group, and runs f on
// each.
func runProcesses(t *testing.T, n int, cfg Config, f func(c Communicator) error) []error {
	t.Helper()
	boot := NewLocalGroup(n)
	comms := make([]Communicator, n)
	noMemberErrors(t, runMembers(boot, func(b Communicator) error {
		c, err := NCCL(t.Context(), b, fakeGPU(t, b.Rank()), cfg)
		comms[b.Rank()] = c
		return err
	}))
	errs := runMembers(comms, f)
	for _, c := range comms {
		_ = c.Close()
	}
	return errs
}

func TestNCCLFakeProcesses(t *testing.T) {
	fake := useFakeNCCL(t)
	errs := runProcesses(t, 3, Config{}, func(c Communicator) error {
		if c.Backend() != "nccl" || c.Size() != 3 {
			t.Errorf("rank %d: backend %q, size %d", c.Rank(), c.Backend(), c.Size())
		}
		if err := allReduceScript(c, tensor.Float32); err != nil {
			return err
		}
		return collectivesScript(c)
	})
	noMemberErrors(t, errs)
	if got := fake.stat(statInitRank); got != 3 {
		t.Errorf("%d ncclCommInitRank calls, want 3", got)
	}
	if got := fake.stat(statDestroyed); got != 3 {
		t.Errorf("%d communicators destroyed, want 3", got)
	}
}

func TestNCCLFakeMismatch(t *testing.T) {
	useFakeNCCL(t)
	shapeOf := func(r int) []int { return []int{2 + r} }
	check := func(t *testing.T, errs []error) {
		for r, err := range errs {
			if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "shape") {
				t.Errorf("rank %d: %v, want ErrMismatch naming the shapes", r, err)
			}
		}
	}
	allReduce := func(c Communicator) error {
		x := tensor.ZerosOf(c.(*ncclComm).dev, tensor.Float32, shapeOf(c.Rank())...)
		err := c.AllReduce(x, Sum)
		if err == nil {
			return nil
		}
		if again := c.Barrier(); again == nil || !strings.Contains(again.Error(), "broken") {
			t.Errorf("rank %d: a collective after the mismatch: %v, want a broken communicator", c.Rank(), again)
		}
		return err
	}
	t.Run("group", func(t *testing.T) {
		comms, err := NewNCCLGroup(fakeGPUList(t, 2))
		if err != nil {
			t.Fatal(err)
		}
		check(t, runMembers(comms, allReduce))
		closeAll(t, comms)
	})
	t.Run("processes", func(t *testing.T) {
		check(t, runProcesses(t, 2, Config{}, allReduce))
	})
}

func TestNCCLFakeRejects(t *testing.T) {
	useFakeNCCL(t)
	comms, err := NewNCCLGroup([]tensor.Device{fakeGPU(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(t, comms)
	c := comms[0]
	dev := c.(*ncclComm).dev
	for _, tc := range []struct {
		name string
		run  func() error
		is   error
		want string
	}{
		{"a tensor on another device", func() error { return c.AllReduce(tensor.Zeros(tensor.CPU(), 2), Sum) }, nil, "the tensor is on cpu"},
		{"Mean of integers", func() error { return c.AllReduce(tensor.ZerosOf(dev, tensor.Int64, 2), Mean) }, ErrUnsupported, "Mean of a int64"},
		{"booleans", func() error { return c.Broadcast(tensor.ZerosOf(dev, tensor.Bool, 2), 0) }, ErrUnsupported, "bool"},
		{"a root outside the group", func() error { return c.Broadcast(tensor.Zeros(dev, 2), 1) }, nil, "root 1 outside"},
		{"a scalar all-gather", func() error { _, err := c.AllGather(tensor.Scalar(dev, 1)); return err }, ErrUnsupported, "scalar"},
		{"a nil tensor", func() error { return c.AllReduce(nil, Sum) }, nil, "nil tensor"},
		{"a released tensor", func() error { x := tensor.Zeros(dev, 2); x.Release(); return c.AllReduce(x, Sum) }, nil, "released"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	// Refused calls leave the communicator working.
	noMemberErrors(t, checkAllReduce(comms, tensor.Float32))
}

// A rank that never calls the collective: the others time out and abort
// NCCL, in a group (the rendezvous times out) and between processes (the
// watchdog aborts the blocked NCCL call).
func TestNCCLFakeTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	onlyRankZero := func(c Communicator) error {
		if c.Rank() != 0 {
			return nil
		}
		start := time.Now()
		err := c.AllReduce(tensor.Zeros(c.(*ncclComm).dev, 4), Sum)
		if d := time.Since(start); d > 20*timeout {
			t.Errorf("the timeout took %s", d)
		}
		if again := c.Barrier(); again == nil || !strings.Contains(again.Error(), "broken") {
			t.Errorf("a collective after the timeout: %v, want a broken communicator", again)
		}
		return err
	}
	t.Run("group", func(t *testing.T) {
		useFakeNCCL(t)
		comms, err := NewNCCLGroupConfig(fakeGPUList(t, 2), Config{Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		err = onlyRankZero(comms[0])
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "[1] never arrived") {
			t.Errorf("err = %v, want ErrTimeout saying rank 1 never arrived", err)
		}
		closeAll(t, comms)
	})
	t.Run("processes", func(t *testing.T) {
		fake := useFakeNCCL(t)
		errs := runProcesses(t, 2, Config{Timeout: timeout}, onlyRankZero)
		if !errors.Is(errs[0], ErrTimeout) || !strings.Contains(errs[0].Error(), "aborted") {
			t.Errorf("err = %v, want ErrTimeout saying NCCL was aborted", errs[0])
		}
		if got := fake.stat(statAborted); got != 1 {
			t.Errorf("%d communicators aborted, want 1", got)
		}
	})
}

// An asynchronous NCCL error (a peer died) ends a waiting collective
// without waiting for the timeout.
func TestNCCLFakeAsyncError(t *testing.T) {
	fake := useFakeNCCL(t)
	go func() {
		time.Sleep(100 * time.Millisecond)
		fake.setAsync(6) // ncclRemoteError
	}()
	start := time.Now()
	errs := runProcesses(t, 2, Config{Timeout: time.Minute}, func(c Communicator) error {
		if c.Rank() != 0 {
			return nil
		}
		return c.AllReduce(tensor.Zeros(c.(*ncclComm).dev, 4), Sum)
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "remote process exited") {
		t.Errorf("err = %v, want NCCL's remote error", errs[0])
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the error took %s to surface", d)
	}
	if got := fake.stat(statAborted); got != 1 {
		t.Errorf("%d communicators aborted, want 1", got)
	}
}

// A rank that cannot start NCCL makes every rank fail instead of leaving
// the others waiting in ncclCommInitRank.
func TestNCCLFakeRankNotReady(t *testing.T) {
	useFakeNCCL(t)
	boot := NewLocalGroup(2)
	errs := runMembers(boot, func(b Communicator) error {
		dev := fakeGPU(t, 0)
		if b.Rank() == 1 {
			dev = tensor.CPU()
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c, err := NCCL(ctx, b, dev, Config{})
		if err == nil {
			c.Close()
		}
		return err
	})
	if !errors.Is(errs[0], ErrNoNCCL) || !strings.Contains(errs[0].Error(), "rank(s) [1]") {
		t.Errorf("rank 0: %v, want ErrNoNCCL naming rank 1", errs[0])
	}
	if !errors.Is(errs[1], ErrUnsupported) {
		t.Errorf("rank 1: %v, want ErrUnsupported (the CPU)", errs[1])
	}
}

// The library named by KILN_NCCL_LIBRARY is the one loaded.
func TestNCCLFakeLibraryPath(t *testing.T) {
	useFakeNCCL(t)
	l, err := loadNCCL()
	if err != nil {
		t.Fatal(err)
	}
	if l.path != os.Getenv("KILN_NCCL_LIBRARY") || l.versionString() != "2.99.1" {
		t.Errorf("loaded %s version %s, want the fake (2.99.1)", l.path, l.versionString())
	}
}

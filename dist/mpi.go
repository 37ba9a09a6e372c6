package dist

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/kiln-ml/kiln/tensor"
)

// DefaultMPILibrary is the Open MPI library OpenMPI loads unless told
// otherwise (Debian's libopenmpi3, brought by openmpi-bin).
const DefaultMPILibrary = "libmpi.so.40"

// Open MPI constants (mpi.h of Open MPI 4 and 5).
const (
	mpiSuccess        = 0
	mpiThreadFunneled = 1
	mpiInPlace        = uintptr(1) // MPI_IN_PLACE, passed as an integer: 1 is no valid Go pointer
	mpiMaxErrorString = 256
	headerLen         = 5 + maxHeaderDims // collective, op, root, dtype, rank count, dims
	maxHeaderDims     = 8
)

// mpiLib is Open MPI's API bound through purego. Handles (communicator,
// datatypes, ops) are the addresses of Open MPI's predefined globals.
type mpiLib struct {
	commWorld, float32, float64, int64, opSum, opMax, opMin, errorsReturn uintptr

	initThread        func(argc, argv unsafe.Pointer, required int32, provided *int32) int32
	commRank          func(comm uintptr, rank *int32) int32
	commSize          func(comm uintptr, size *int32) int32
	commSetErrhandler func(comm, handler uintptr) int32
	allreduce         func(inPlace uintptr, recv unsafe.Pointer, count int32, dtype, op, comm uintptr) int32
	bcast             func(buf unsafe.Pointer, count int32, dtype uintptr, root int32, comm uintptr) int32
	allgather         func(send unsafe.Pointer, scount int32, sdtype uintptr, recv unsafe.Pointer, rcount int32, rdtype, comm uintptr) int32
	allgatherv        func(send unsafe.Pointer, scount int32, sdtype uintptr, recv unsafe.Pointer, rcounts, displs *int32, rdtype, comm uintptr) int32
	reduceScatter     func(send, recv unsafe.Pointer, rcounts *int32, dtype, op, comm uintptr) int32
	barrier           func(comm uintptr) int32
	finalize          func() int32
	errorString       func(code int32, s *byte, n *int32) int32
}

// loadMPI opens the library and binds its symbols.
func loadMPI(path string) (*mpiLib, error) {
	h, err := dlopen(path)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot load %s (install Debian's openmpi-bin, which brings libopenmpi3, or point KILN_MPI_LIBRARY at Open MPI's libmpi): %v", ErrNoLibrary, path, err)
	}
	m := &mpiLib{}
	globals := map[string]*uintptr{
		"ompi_mpi_comm_world": &m.commWorld, "ompi_mpi_float": &m.float32, "ompi_mpi_double": &m.float64,
		"ompi_mpi_int64_t": &m.int64, "ompi_mpi_op_sum": &m.opSum, "ompi_mpi_op_max": &m.opMax,
		"ompi_mpi_op_min": &m.opMin, "ompi_mpi_errors_return": &m.errorsReturn,
	}
	for name, p := range globals {
		if *p, err = dlsym(h, name); err != nil {
			return nil, fmt.Errorf("%w: %s lacks %s (not Open MPI? MPICH's ABI is not supported): %v", ErrNoLibrary, path, name, err)
		}
	}
	funcs := map[string]any{
		"MPI_Init_thread": &m.initThread, "MPI_Comm_rank": &m.commRank, "MPI_Comm_size": &m.commSize,
		"MPI_Comm_set_errhandler": &m.commSetErrhandler, "MPI_Allreduce": &m.allreduce, "MPI_Bcast": &m.bcast,
		"MPI_Allgather": &m.allgather, "MPI_Allgatherv": &m.allgatherv, "MPI_Reduce_scatter": &m.reduceScatter,
		"MPI_Barrier": &m.barrier, "MPI_Finalize": &m.finalize, "MPI_Error_string": &m.errorString,
	}
	for name, fn := range funcs {
		addr, err := dlsym(h, name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s lacks %s: %v", ErrNoLibrary, path, name, err)
		}
		registerFunc(fn, addr)
	}
	return m, nil
}

// check turns an MPI return code into an error with MPI's message.
func (m *mpiLib) check(rank int, call string, code int32) error {
	if code == mpiSuccess {
		return nil
	}
	buf := make([]byte, mpiMaxErrorString)
	var n int32
	msg := "unknown error"
	if m.errorString(code, &buf[0], &n) == mpiSuccess && n > 0 && int(n) <= len(buf) {
		msg = string(buf[:n])
	}
	return fmt.Errorf("dist: rank %d: %s failed: %s (MPI error %d)", rank, call, msg, code)
}

func (m *mpiLib) dtype(d tensor.DType) uintptr {
	switch d {
	case tensor.Float32:
		return m.float32
	case tensor.Float64:
		return m.float64
	}
	return m.int64
}

func (m *mpiLib) op(op ReduceOp) uintptr {
	switch op {
	case Max:
		return m.opMax
	case Min:
		return m.opMin
	}
	return m.opSum // Mean is a Sum divided afterwards
}

// mpiStarted guards MPI_Init_thread, which may run once per process.
var (
	mpiMu      sync.Mutex
	mpiStarted bool
)

// mpiComm is the Open MPI communicator over MPI_COMM_WORLD. Every MPI call
// runs on one goroutine locked to its OS thread.
type mpiComm struct {
	lib       *mpiLib
	rank      int
	size      int
	localRank int
	timeout   time.Duration

	work   chan func()
	header []int64 // agree's buffer: this rank's header, then every rank's
	mu     sync.Mutex
	broken error
	closed bool
}

// OpenMPI loads Open MPI (cfg.Library, else $KILN_MPI_LIBRARY, else
// libmpi.so.40), initialises it and returns a communicator over
// MPI_COMM_WORLD. The process must have been started by mpirun, srun or
// another PMIx launcher. MPI can be initialised once per process: a second
// call fails. It fails with ErrNoLibrary, naming the library and the Debian
// package to install, when the library is missing, and with ErrTimeout when
// ctx ends before MPI is initialised.
//
// MPI cannot interrupt a collective: when a rank dies, Open MPI's mpirun
// ends the job; when a rank hangs, the other ranks' collectives return
// ErrTimeout after cfg.Timeout (a watchdog; the MPI call itself is left
// blocked and the communicator is unusable afterwards).
//
// A contiguous tensor on the CPU is handed to MPI in place: AllReduce and
// Broadcast read and write its own storage (MPI_IN_PLACE), and the other
// collectives read it, without a copy. Other tensors (strided views, GPU
// tensors) go through a host copy (tensor.HeldBytes). After ErrTimeout
// the tensor's values are undefined: MPI may still write them should the
// blocked call ever return, and its storage stays allocated for that.
func OpenMPI(ctx context.Context, cfg Config) (Communicator, error) {
	path := cfg.Library
	if path == "" {
		path = os.Getenv("KILN_MPI_LIBRARY")
	}
	if path == "" {
		path = DefaultMPILibrary
	}
	lib, err := loadMPI(path)
	if err != nil {
		return nil, err
	}
	mpiMu.Lock()
	defer mpiMu.Unlock()
	if mpiStarted {
		return nil, errors.New("dist: MPI is already initialised in this process (OpenMPI may be called once)")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	c := &mpiComm{lib: lib, timeout: timeout, work: make(chan func())}
	go c.serve()
	mpiStarted = true
	var within time.Duration
	if d, ok := ctx.Deadline(); ok {
		within = time.Until(d)
	}
	err = c.call(ctx, "MPI_Init_thread", within, func() error {
		var provided, rank, size int32
		if err := lib.check(-1, "MPI_Init_thread", lib.initThread(nil, nil, mpiThreadFunneled, &provided)); err != nil {
			return err
		}
		if provided < mpiThreadFunneled {
			return fmt.Errorf("dist: MPI_Init_thread provided thread level %d, need MPI_THREAD_FUNNELED (%d)", provided, mpiThreadFunneled)
		}
		if err := lib.check(-1, "MPI_Comm_set_errhandler", lib.commSetErrhandler(lib.commWorld, lib.errorsReturn)); err != nil {
			return err
		}
		if err := lib.check(-1, "MPI_Comm_rank", lib.commRank(lib.commWorld, &rank)); err != nil {
			return err
		}
		if err := lib.check(-1, "MPI_Comm_size", lib.commSize(lib.commWorld, &size)); err != nil {
			return err
		}
		c.rank, c.size = int(rank), int(size)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if l := Launcher(); l.Found() {
		c.localRank = l.LocalRank
	}
	return c, nil
}

// serve runs MPI calls on one locked OS thread.
func (c *mpiComm) serve() {
	runtime.LockOSThread() // never unlocked: MPI was initialised on this thread
	for f := range c.work {
		f()
	}
}

// call runs f on the MPI thread and waits for it, at most until ctx ends.
// A call that does not return in time breaks the communicator.
func (c *mpiComm) call(ctx context.Context, name string, within time.Duration, f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: rank %d: %s after Close", ErrClosed, c.rank, name)
	}
	if c.broken != nil {
		return fmt.Errorf("rank %d: %s: communicator broken: %w", c.rank, name, c.broken)
	}
	done := make(chan error, 1)
	select {
	case c.work <- func() { done <- f() }:
	case <-ctx.Done():
		return fmt.Errorf("%w: rank %d: %s: the MPI thread is busy", ErrTimeout, c.rank, name)
	}
	select {
	case err := <-done:
		if errors.Is(err, errLeft) {
			c.broken = err // no collective can complete any more
		}
		return err
	case <-ctx.Done():
		c.broken = fmt.Errorf("%w: rank %d: collective %s did not complete in %s (a rank died or stopped calling collectives; the MPI call is left blocked)", ErrTimeout, c.rank, name, within)
		return c.broken
	}
}

// collective runs f under the communicator's timeout.
func (c *mpiComm) collective(name string, f func() error) error {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if c.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	defer cancel()
	return c.call(ctx, name, c.timeout, f)
}

func (c *mpiComm) Rank() int       { return c.rank }
func (c *mpiComm) Size() int       { return c.size }
func (c *mpiComm) LocalRank() int  { return c.localRank }
func (c *mpiComm) Backend() string { return "mpi" }

// Close finalises MPI and stops the MPI thread. The ranks first agree
// that all of them are closing: when one closes while others wait in a
// collective, every rank's call fails at once with ErrClosed naming the
// rank that left, and the communicator is broken everywhere. On a broken
// communicator Close does nothing (finalising would block) and returns
// nil.
func (c *mpiComm) Close() error {
	c.mu.Lock()
	skip := c.closed || c.broken != nil
	c.mu.Unlock()
	if skip {
		return nil
	}
	// The ranks first agree that all of them are closing: a rank that
	// closes while the others wait in a collective (it failed, or its
	// loop ended early) would otherwise leave them blocked until their
	// timeout. They all learn it from the headers and break instead.
	err := c.collective("Close", func() error {
		if _, err := c.agree(&localCall{name: "Close"}); err != nil {
			return err
		}
		return c.lib.check(c.rank, "MPI_Finalize", c.lib.finalize())
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.broken == nil {
		close(c.work)
	}
	return err
}

// agree exchanges every rank's call description and checks they fit
// together, so that disagreeing ranks all fail with the same error instead
// of corrupting memory or hanging. It returns every rank's header
// (headerLen int64s per rank: collective, op, root, dtype, rank count,
// dims), valid until the next collective. It runs on the MPI thread, and
// allocates nothing when the ranks agree (the common case, checked first
// by comparing headers).
func (c *mpiComm) agree(call *localCall) ([]int64, error) {
	if len(call.shape) > maxHeaderDims {
		return nil, fmt.Errorf("%w: rank %d: %s of a %d-dimensional tensor (at most %d)", ErrUnsupported, c.rank, call.name, len(call.shape), maxHeaderDims)
	}
	if c.header == nil {
		c.header = make([]int64, headerLen*(c.size+1))
	}
	mine, all := c.header[:headerLen], c.header[headerLen:]
	clear(mine)
	mine[0], mine[1], mine[2] = collectiveID(call.name), int64(call.op), int64(call.root)
	mine[3], mine[4] = int64(call.dtype), int64(len(call.shape))
	for i, d := range call.shape {
		mine[5+i] = int64(d)
	}
	err := c.lib.check(c.rank, "MPI_Allgather", c.lib.allgather(
		unsafe.Pointer(&mine[0]), headerLen, c.lib.int64,
		unsafe.Pointer(&all[0]), headerLen, c.lib.int64, c.lib.commWorld))
	runtime.KeepAlive(c.header)
	if err != nil {
		return nil, err
	}
	same := true
	for r := 0; r < c.size && same; r++ {
		same = slices.Equal(all[r*headerLen:(r+1)*headerLen], mine)
	}
	if same {
		return all, nil
	}
	calls := make([]*localCall, c.size)
	for r := range calls {
		h := all[r*headerLen : (r+1)*headerLen]
		shape := make([]int, min(max(h[4], 0), maxHeaderDims))
		for i := range shape {
			shape[i] = int(h[5+i])
		}
		calls[r] = &localCall{name: collectiveName(h[0]), op: ReduceOp(h[1]), root: int(h[2]),
			payload: payload{dtype: tensor.DType(h[3]), shape: shape}}
	}
	for r, cl := range calls {
		if cl.name != "Close" {
			continue
		}
		for q, other := range calls {
			if other.name != "Close" {
				return all, fmt.Errorf("%w: rank %d: rank %d left the group (Close) while rank %d called %s%w",
					ErrClosed, c.rank, r, q, describe(other), errLeft)
			}
		}
	}
	return all, checkCalls(calls)
}

// errLeft marks the error of a collective that a rank's Close met: the
// communicator is broken on every rank, since they all saw it. It wraps
// no text of its own.
var errLeft = leftError{}

type leftError struct{}

func (leftError) Error() string { return "" }

var collectives = []string{"AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Barrier", "Close"}

func collectiveID(name string) int64 {
	for i, n := range collectives {
		if n == name {
			return int64(i)
		}
	}
	return -1
}

func collectiveName(id int64) string {
	if id >= 0 && int(id) < len(collectives) {
		return collectives[id]
	}
	return fmt.Sprintf("collective %d", id)
}

// count checks an element count fits MPI's int.
func count(rank int, name string, n int) (int32, error) {
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%w: rank %d: %s of %d elements (MPI counts stop at 2³¹−1; split the tensor)", ErrUnsupported, rank, name, n)
	}
	return int32(n), nil
}

// addr is the address of b's first byte, or nil when b is empty. Buffers
// are passed as pointers, never uintptr, so that they live on the heap (Go's
// heap does not move; a goroutine's stack does, even during purego's call
// setup) and stay alive across the call.
func addr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// holdPayload checks t like readPayload and holds its bytes for MPI: on the
// CPU, a contiguous tensor's own storage, which MPI then reads and writes
// in place; elsewhere a copy (see tensor.HeldBytes). The caller releases
// the hold, through collectiveHolding.
func holdPayload(op string, rank int, t *tensor.Tensor, rop ReduceOp, reduces bool) (p payload, h *tensor.HeldBytes, err error) {
	if err := checkArgs(op, rank, t, rop, reduces); err != nil {
		return p, nil, err
	}
	defer catchPanic(op, rank, &err)
	h = t.HoldBytes()
	return payload{dtype: t.DType(), shape: t.Shape(), raw: h.Bytes()}, h, nil
}

// collectiveHolding runs f, which hands h's bytes to MPI, under the
// communicator's timeout. When f fails, h is released; when it succeeds,
// the caller stores and releases h (storeHeld). When the watchdog gives up
// on f, MPI may still read or write the bytes: h is released only once f
// returns, if ever, so that MPI never writes into memory that was freed and
// reused (the tensor's values are then undefined).
func (c *mpiComm) collectiveHolding(name string, h *tensor.HeldBytes, f func() error) error {
	finished := make(chan struct{})
	err := c.collective(name, func() error {
		defer close(finished)
		return f()
	})
	select {
	case <-finished:
		if err != nil {
			h.Release()
		}
	default: // f still blocks on the MPI thread, or never started
		go func() {
			<-finished
			h.Release()
		}()
	}
	return err
}

// storeHeld makes h's bytes the tensor's values (a no-op when MPI wrote the
// tensor's own storage) and releases h.
func storeHeld(op string, rank int, h *tensor.HeldBytes) (err error) {
	defer h.Release()
	defer catchPanic(op, rank, &err)
	h.Store()
	return nil
}

// AllReduce reduces t in place over all ranks with MPI_Allreduce
// (MPI_IN_PLACE on t's own storage for a contiguous CPU tensor).
func (c *mpiComm) AllReduce(t *tensor.Tensor, op ReduceOp) error {
	p, h, err := holdPayload("AllReduce", c.rank, t, op, true)
	if err != nil {
		return err
	}
	esize, _ := elemSize(p.dtype)
	n, err := count(c.rank, "AllReduce", len(p.raw)/esize)
	if err != nil {
		h.Release()
		return err
	}
	err = c.collectiveHolding("AllReduce", h, func() error {
		if _, err := c.agree(&localCall{name: "AllReduce", op: op, payload: p}); err != nil {
			return err
		}
		code := c.lib.allreduce(mpiInPlace, addr(p.raw), n, c.lib.dtype(p.dtype), c.lib.op(op), c.lib.commWorld)
		if err := c.lib.check(c.rank, "MPI_Allreduce", code); err != nil {
			return err
		}
		if op == Mean {
			divide(p.dtype, p.raw, c.size)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return storeHeld("AllReduce", c.rank, h)
}

// Broadcast copies rank root's t into every rank's t with MPI_Bcast.
func (c *mpiComm) Broadcast(t *tensor.Tensor, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("dist: rank %d: Broadcast from root %d outside a world of %d", c.rank, root, c.size)
	}
	p, h, err := holdPayload("Broadcast", c.rank, t, Sum, false)
	if err != nil {
		return err
	}
	esize, _ := elemSize(p.dtype)
	n, err := count(c.rank, "Broadcast", len(p.raw)/esize)
	if err != nil {
		h.Release()
		return err
	}
	err = c.collectiveHolding("Broadcast", h, func() error {
		if _, err := c.agree(&localCall{name: "Broadcast", root: root, payload: p}); err != nil {
			return err
		}
		return c.lib.check(c.rank, "MPI_Bcast", c.lib.bcast(addr(p.raw), n, c.lib.dtype(p.dtype), int32(root), c.lib.commWorld))
	})
	if err != nil {
		return err
	}
	return storeHeld("Broadcast", c.rank, h)
}

// AllGather concatenates every rank's t along dimension 0 with MPI_Allgatherv.
func (c *mpiComm) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	p, h, err := holdPayload("AllGather", c.rank, t, Sum, false)
	if err != nil {
		return nil, err
	}
	if len(p.shape) == 0 {
		h.Release()
		return nil, fmt.Errorf("%w: rank %d: AllGather of a scalar (needs at least one dimension)", ErrUnsupported, c.rank)
	}
	esize, _ := elemSize(p.dtype)
	var out []byte
	var shape []int
	err = c.collectiveHolding("AllGather", h, func() error {
		headers, err := c.agree(&localCall{name: "AllGather", payload: p})
		if err != nil {
			return err
		}
		rowElems := rowBytes(p.shape, esize) / esize
		counts, displs := make([]int32, c.size), make([]int32, c.size)
		rows, total := 0, 0
		for r := range counts {
			rankRows := int(headers[r*headerLen+5]) // dimension 0 of rank r
			n, err := count(c.rank, "AllGather", rankRows*rowElems)
			if err != nil {
				return err
			}
			d, err := count(c.rank, "AllGather", total)
			if err != nil {
				return err
			}
			counts[r], displs[r] = n, d
			rows += rankRows
			total += int(n)
		}
		out = make([]byte, total*esize)
		shape = append([]int{rows}, p.shape[1:]...)
		code := c.lib.allgatherv(addr(p.raw), counts[c.rank], c.lib.dtype(p.dtype), addr(out), &counts[0], &displs[0], c.lib.dtype(p.dtype), c.lib.commWorld)
		runtime.KeepAlive(out)
		return c.lib.check(c.rank, "MPI_Allgatherv", code)
	})
	if err != nil {
		return nil, err
	}
	h.Release()
	return newTensor("AllGather", c.rank, t, out, shape)
}

// ReduceScatter reduces t over all ranks and returns this rank's rows, with
// MPI_Reduce_scatter.
func (c *mpiComm) ReduceScatter(t *tensor.Tensor, op ReduceOp) (*tensor.Tensor, error) {
	p, h, err := holdPayload("ReduceScatter", c.rank, t, op, true)
	if err != nil {
		return nil, err
	}
	if len(p.shape) == 0 {
		h.Release()
		return nil, fmt.Errorf("%w: rank %d: ReduceScatter of a scalar (needs at least one dimension)", ErrUnsupported, c.rank)
	}
	esize, _ := elemSize(p.dtype)
	if _, err := count(c.rank, "ReduceScatter", len(p.raw)/esize); err != nil {
		h.Release()
		return nil, err
	}
	rowElems := rowBytes(p.shape, esize) / esize
	counts := make([]int32, c.size)
	for r := range counts {
		_, rows := rowSplit(p.shape[0], c.size, r)
		counts[r] = int32(rows * rowElems)
	}
	_, myRows := rowSplit(p.shape[0], c.size, c.rank)
	out := make([]byte, int(counts[c.rank])*esize)
	err = c.collectiveHolding("ReduceScatter", h, func() error {
		if _, err := c.agree(&localCall{name: "ReduceScatter", op: op, payload: p}); err != nil {
			return err
		}
		code := c.lib.reduceScatter(addr(p.raw), addr(out), &counts[0], c.lib.dtype(p.dtype), c.lib.op(op), c.lib.commWorld)
		runtime.KeepAlive(out)
		return c.lib.check(c.rank, "MPI_Reduce_scatter", code)
	})
	if err != nil {
		return nil, err
	}
	h.Release()
	if op == Mean {
		divide(p.dtype, out, c.size)
	}
	return newTensor("ReduceScatter", c.rank, t, out, append([]int{myRows}, p.shape[1:]...))
}

// Barrier waits for every rank with MPI_Barrier.
func (c *mpiComm) Barrier() error {
	return c.collective("Barrier", func() error {
		if _, err := c.agree(&localCall{name: "Barrier"}); err != nil {
			return err
		}
		return c.lib.check(c.rank, "MPI_Barrier", c.lib.barrier(c.lib.commWorld))
	})
}

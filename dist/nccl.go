package dist

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// deviceMemory is what NCCL needs from a device's backend: device addresses
// of tensor buffers, a turn on the device's thread with its stream, and a
// wait for the stream. The CUDA backend (backends/cuda.Backend) provides
// it; this package does not import it, so it builds with -tags kiln_nocuda.
type deviceMemory interface {
	DevicePointer(buf backends.Buffer) (uintptr, int64, error)
	Submit(f func(stream uintptr) error) error
	Sync() error
}

// pollInterval is how often a waiting collective asks NCCL for
// asynchronous errors.
const pollInterval = 10 * time.Millisecond

// abortGrace is how long a collective waits, after aborting NCCL, for the
// blocked call to return before giving up on it.
const abortGrace = 30 * time.Second

// cudaMemory returns dev's backend as deviceMemory, or an ErrUnsupported
// error saying NCCL needs a CUDA device.
func cudaMemory(op, which string, dev tensor.Device) (mem deviceMemory, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %s: %v", ErrUnsupported, op, which, r)
		}
	}()
	m, ok := dev.Backend().(deviceMemory)
	if !ok {
		return nil, fmt.Errorf("%w: %s: %s is %s, not a CUDA device (NCCL works on cuda:N devices)", ErrUnsupported, op, which, dev)
	}
	return m, nil
}

// timeoutOf applies Config's convention: zero means DefaultTimeout,
// negative means none.
func timeoutOf(cfg Config) time.Duration {
	if cfg.Timeout == 0 {
		return DefaultTimeout
	}
	return cfg.Timeout
}

// NCCL returns this process's NCCL communicator over the CUDA device dev,
// one rank per process, with boot's ranks and size: typically boot is the
// MPI communicator from Init under mpirun, with one process per GPU and dev
// = cuda:<boot.LocalRank()>. Every rank of boot must call it. Rank 0 makes
// NCCL's unique id and broadcasts it through boot; then every rank calls
// ncclCommInitRank, which waits for all of them, at most until ctx ends.
// cfg.Timeout bounds each collective (cfg.Library, the MPI library, is not
// used: NCCL is $KILN_NCCL_LIBRARY or libnccl.so.2).
//
// It fails with ErrUnsupported when dev is not a CUDA device, with ErrNoNCCL
// when NCCL cannot be loaded (every rank fails, naming the ranks that could
// not load it), with boot's error when the bootstrap collectives fail, and
// with ErrTimeout when ctx ends first; ncclCommInitRank is then left
// blocked on dev's thread, so the device is unusable and the program should
// exit.
func NCCL(ctx context.Context, boot Communicator, dev tensor.Device, cfg Config) (Communicator, error) {
	if boot == nil {
		return nil, errors.New("dist: NCCL: no bootstrap communicator (pass the one from Init or OpenMPI)")
	}
	rank, size := boot.Rank(), boot.Size()
	mem, localErr := cudaMemory("NCCL", fmt.Sprintf("rank %d's device", rank), dev)
	var lib *ncclLib
	if localErr == nil {
		lib, localErr = loadNCCL()
	}

	// Every rank learns whether all are ready before any of them waits in
	// ncclCommInitRank for one that gave up.
	ready := make([]byte, 8)
	if localErr == nil {
		le.PutUint64(ready, 1)
	}
	flags, err := bootAllGather(boot, ready)
	if err != nil {
		return nil, fmt.Errorf("dist: rank %d: NCCL: exchanging readiness over %s: %w", rank, boot.Backend(), err)
	}
	if localErr != nil {
		return nil, fmt.Errorf("dist: rank %d: %w", rank, localErr)
	}
	var missing []int
	for r := range size {
		if le.Uint64(flags[8*r:]) != 1 {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: rank %d: rank(s) %v could not load NCCL or use their device", ErrNoNCCL, rank, missing)
	}

	// Rank 0's id goes out as 17 int64 words: a status word, then the id.
	var id ncclUniqueID
	var idErr error
	msg := make([]byte, 8+ncclUniqueIDBytes)
	if rank == 0 {
		if idErr = lib.err(0, "ncclGetUniqueId", lib.getUniqueID(&id), 0); idErr == nil {
			le.PutUint64(msg, 1)
			copy(msg[8:], id.Internal[:])
		}
	}
	if msg, err = bootBroadcast(boot, msg); err != nil {
		return nil, fmt.Errorf("dist: rank %d: NCCL: broadcasting the unique id over %s: %w", rank, boot.Backend(), err)
	}
	if idErr != nil {
		return nil, idErr
	}
	if le.Uint64(msg) != 1 {
		return nil, fmt.Errorf("dist: rank %d: NCCL: rank 0 could not create NCCL's unique id", rank)
	}
	copy(id.Internal[:], msg[8:])

	var handle uintptr
	done := make(chan error, 1)
	go func() {
		done <- mem.Submit(func(uintptr) error {
			return lib.err(rank, "ncclCommInitRank", lib.commInitRank(&handle, int32(size), id, int32(rank)), 0)
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: rank %d: ncclCommInitRank did not complete before the context ended (%v): a rank never called it; the call is left blocked and %s is unusable", ErrTimeout, rank, ctx.Err(), dev)
	}
	st := &ncclState{lib: lib, handles: []uintptr{handle}, timeout: timeoutOf(cfg)}
	return &ncclComm{st: st, handle: handle, rank: rank, size: size, localRank: boot.LocalRank(),
		dev: dev.Inner(), mem: mem}, nil
}

// bootAllGather gathers every rank's 8 bytes through boot as int64s.
func bootAllGather(boot Communicator, mine []byte) (all []byte, err error) {
	defer catchPanic("AllGather", boot.Rank(), &err)
	t := tensor.FromBytes(tensor.CPU(), tensor.Int64, mine, 1)
	defer t.Release()
	out, err := boot.AllGather(t)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	return out.Bytes(), nil
}

// bootBroadcast sends rank 0's msg (a multiple of 8 bytes) to every rank of
// boot as int64s.
func bootBroadcast(boot Communicator, msg []byte) (out []byte, err error) {
	defer catchPanic("Broadcast", boot.Rank(), &err)
	t := tensor.FromBytes(tensor.CPU(), tensor.Int64, msg, len(msg)/8)
	defer t.Release()
	if err := boot.Broadcast(t, 0); err != nil {
		return nil, err
	}
	return t.Bytes(), nil
}

// NewNCCLGroup returns one NCCL communicator per device, all in this
// process (ncclCommInitAll), with the default timeout. devices must be
// distinct CUDA devices; one device gives a group of one. Use each member
// from its own goroutine, as with NewLocalGroup: a collective returns once
// every member has called it, and the members' calls are issued together
// inside ncclGroupStart/ncclGroupEnd from one OS thread. It fails with
// ErrUnsupported when a device is not a CUDA device and with ErrNoNCCL when
// NCCL cannot be loaded.
func NewNCCLGroup(devices []tensor.Device) ([]Communicator, error) {
	return NewNCCLGroupConfig(devices, Config{})
}

// NewNCCLGroupConfig is NewNCCLGroup with a config: cfg.Timeout bounds how
// long a member waits for the others and for NCCL (see Config).
// cfg.Library, the MPI library, is not used.
func NewNCCLGroupConfig(devices []tensor.Device, cfg Config) ([]Communicator, error) {
	if len(devices) == 0 {
		return nil, errors.New("dist: NewNCCLGroup: no devices")
	}
	mems := make([]deviceMemory, len(devices))
	ordinals := make([]int32, len(devices))
	for i, d := range devices {
		m, err := cudaMemory("NewNCCLGroup", fmt.Sprintf("device %d", i), d)
		if err != nil {
			return nil, err
		}
		for j := range i {
			if d.Same(devices[j]) {
				return nil, fmt.Errorf("%w: NewNCCLGroup: %s is listed twice (NCCL needs one rank per GPU)", ErrUnsupported, d)
			}
		}
		mems[i], ordinals[i] = m, int32(d.Info().Index)
	}
	lib, err := loadNCCL()
	if err != nil {
		return nil, err
	}
	n := len(devices)
	handles := make([]uintptr, n)
	thread := newOSThread()
	thread.call(func() {
		err = lib.err(-1, "ncclCommInitAll", lib.commInitAll(&handles[0], int32(n), &ordinals[0]), 0)
	})
	if err != nil {
		thread.stop()
		return nil, fmt.Errorf("%w (devices %v)", err, devices)
	}
	st := &ncclState{lib: lib, handles: handles, timeout: timeoutOf(cfg)}
	g := &ncclGroup{st: st, size: n, open: n, thread: thread}
	g.round = g.newRound()
	out := make([]Communicator, n)
	for r := range out {
		out[r] = &ncclComm{st: st, handle: handles[r], rank: r, size: n, localRank: r,
			dev: devices[r].Inner(), mem: mems[r], group: g}
	}
	return out, nil
}

// ncclState is what the members of one NCCL communicator in this process
// share: their handles and the error that broke them. A process-wide
// communicator (NCCL) has one member, a group (NewNCCLGroup) several.
type ncclState struct {
	lib     *ncclLib
	handles []uintptr
	timeout time.Duration

	mu       sync.Mutex
	broken   error
	released bool // the handles were aborted or destroyed
}

// failure returns the error that broke the communicator, or nil.
func (s *ncclState) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// fail breaks the communicator with err unless it is already broken.
func (s *ncclState) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		s.broken = err
	}
}

// abort breaks the communicator with err and aborts its NCCL communicators,
// which makes NCCL's blocked calls and kernels return.
func (s *ncclState) abort(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		s.broken = err
	}
	if s.released {
		return
	}
	s.released = true
	for _, h := range s.handles {
		_ = s.lib.commAbort(h)
	}
}

// asyncError asks NCCL whether any of the communicators hit an error
// asynchronously (a peer died, a network failure).
func (s *ncclState) asyncError(rank int, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	for _, h := range s.handles {
		var state int32
		if code := s.lib.commGetAsyncError(h, &state); code != ncclSuccess {
			return s.lib.err(rank, "ncclCommGetAsyncError", code, h)
		}
		if state != ncclSuccess && state != ncclInProgress {
			return s.lib.err(rank, name+" (asynchronous error)", state, h)
		}
	}
	return nil
}

// ncclComm is one rank's NCCL Communicator.
type ncclComm struct {
	st                    *ncclState
	handle                uintptr
	rank, size, localRank int
	dev                   tensor.Device // without autodiff flags
	mem                   deviceMemory
	group                 *ncclGroup // nil for a one-per-process communicator
	closed                bool
}

func (c *ncclComm) Rank() int       { return c.rank }
func (c *ncclComm) Size() int       { return c.size }
func (c *ncclComm) LocalRank() int  { return c.localRank }
func (c *ncclComm) Backend() string { return "nccl" }

// Close destroys the NCCL communicator (ncclCommDestroy) after its queued
// work. In a group the first Close breaks the group, like NewLocalGroup's,
// and the last one destroys every member's communicator. After an abort
// (a timeout or an asynchronous error) there is nothing left to destroy.
func (c *ncclComm) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.group != nil {
		return c.group.leave(c)
	}
	c.st.mu.Lock()
	released := c.st.released
	c.st.released = true
	c.st.mu.Unlock()
	if released {
		return nil
	}
	lib := c.st.lib
	return c.mem.Submit(func(uintptr) error {
		return lib.err(c.rank, "ncclCommDestroy", lib.commDestroy(c.handle), 0)
	})
}

// usable reports why a collective cannot start: the communicator is closed
// or broken.
func (c *ncclComm) usable(name string) error {
	if c.closed {
		return fmt.Errorf("%w: rank %d: %s after Close", ErrClosed, c.rank, name)
	}
	if err := c.st.failure(); err != nil {
		return fmt.Errorf("rank %d: %s: communicator broken: %w", c.rank, name, err)
	}
	return nil
}

// check validates a collective's tensor and op and returns NCCL's dtype and
// the element size.
func (c *ncclComm) check(name string, t *tensor.Tensor, op ReduceOp, reduces bool) (dtype int32, esize int, err error) {
	if err := c.usable(name); err != nil {
		return 0, 0, err
	}
	if t == nil {
		return 0, 0, fmt.Errorf("dist: rank %d: %s: nil tensor", c.rank, name)
	}
	if t.Released() {
		return 0, 0, fmt.Errorf("dist: rank %d: %s: the tensor was released", c.rank, name)
	}
	if !t.Device().Same(c.dev) {
		return 0, 0, fmt.Errorf("dist: rank %d: %s: the tensor is on %s, the communicator on %s", c.rank, name, t.Device(), c.dev)
	}
	dtype, ok := ncclType(t.DType())
	if !ok && t.DType() == tensor.Int16 {
		return 0, 0, fmt.Errorf("%w: rank %d: %s of an int16 tensor over NCCL: NCCL has no 16-bit integer type (convert to Int32 first)", ErrUnsupported, c.rank, name)
	}
	if !ok {
		return 0, 0, fmt.Errorf("%w: rank %d: %s of a %s tensor over NCCL", ErrUnsupported, c.rank, name, t.DType())
	}
	if reduces {
		if op < Sum || op > Min {
			return 0, 0, fmt.Errorf("%w: rank %d: %s with %s", ErrUnsupported, c.rank, name, op)
		}
		if op == Mean && !t.DType().IsFloat() {
			return 0, 0, fmt.Errorf("%w: rank %d: %s Mean of a %s tensor (use Sum and divide)", ErrUnsupported, c.rank, name, t.DType())
		}
	}
	return dtype, t.DType().Size(), nil
}

// pointer returns the device address of t's buffer.
func (c *ncclComm) pointer(t *tensor.Tensor) (uintptr, error) {
	p, _, err := c.mem.DevicePointer(tensor.BufferOf(t))
	if err != nil {
		return 0, fmt.Errorf("dist: rank %d: %w", c.rank, err)
	}
	return p, nil
}

// dense returns a tensor holding t's elements row-major at the start of its
// own buffer, as NCCL reads them: t itself when it is laid out so, else a
// copy. The caller releases a copy.
func (c *ncclComm) dense(t *tensor.Tensor, esize int) (*tensor.Tensor, uintptr, error) {
	w := t
	if !t.IsContiguous() || tensor.BufferOf(t).Bytes() != int64(t.NumElements()*esize) {
		w = tensor.ZerosOf(c.dev, t.DType(), t.Shape()...)
		w.Assign(t)
	}
	p, err := c.pointer(w)
	if err != nil && w != t {
		w.Release()
	}
	return w, p, err
}

// release releases the tensors that are not keep.
func release(keep *tensor.Tensor, ts ...*tensor.Tensor) {
	for _, t := range ts {
		if t != nil && t != keep {
			t.Release()
		}
	}
}

// scale divides t's elements by n in place (the second half of Mean).
func scale(t *tensor.Tensor, n int) {
	d := t.Detach()
	q := d.DivScalar(float64(n))
	t.Assign(q)
	q.Release()
	d.Release()
}

// enqueueFunc puts one member's NCCL call on stream and returns NCCL's
// result.
type enqueueFunc func(l *ncclLib, comm, stream uintptr) int32

// agree exchanges every rank's call and checks they fit together (see
// checkCalls); it returns every rank's call. Disagreeing ranks all fail
// with ErrMismatch and the communicator is broken.
func (c *ncclComm) agree(call *localCall) ([]*localCall, error) {
	var calls []*localCall
	var err error
	if c.group != nil {
		calls, err = c.group.agree(c, call)
	} else {
		calls, err = c.exchangeHeaders(call)
	}
	if err != nil {
		c.st.fail(err)
		return nil, err
	}
	return calls, nil
}

// exchangeHeaders gathers every rank's call header over NCCL itself.
func (c *ncclComm) exchangeHeaders(call *localCall) (calls []*localCall, err error) {
	if len(call.shape) > maxHeaderDims {
		return nil, fmt.Errorf("%w: rank %d: %s of a %d-dimensional tensor (at most %d)", ErrUnsupported, c.rank, call.name, len(call.shape), maxHeaderDims)
	}
	defer catchPanic(call.name, c.rank, &err)
	mine := tensor.FromBytes(c.dev, tensor.Int64, encodeHeader(call), headerLen)
	all := tensor.ZerosOf(c.dev, tensor.Int64, c.size*headerLen)
	defer release(nil, mine, all)
	src, err := c.pointer(mine)
	if err != nil {
		return nil, err
	}
	dst, err := c.pointer(all)
	if err != nil {
		return nil, err
	}
	err = c.issue(call.name+" header", func(l *ncclLib, comm, stream uintptr) int32 {
		return l.allGather(src, dst, headerLen, ncclInt64, comm, stream)
	}, nil)
	if err != nil {
		return nil, err
	}
	calls = decodeHeaders(all.Bytes(), c.size)
	return calls, checkCalls(calls)
}

// encodeHeader writes a call as headerLen little-endian int64s: collective,
// op, root, dtype, rank count, dimensions.
func encodeHeader(call *localCall) []byte {
	h := make([]byte, 8*headerLen)
	put := func(i int, v int64) { le.PutUint64(h[8*i:], uint64(v)) }
	put(0, collectiveID(call.name))
	put(1, int64(call.op))
	put(2, int64(call.root))
	put(3, int64(call.dtype))
	put(4, int64(len(call.shape)))
	for i, d := range call.shape {
		put(5+i, int64(d))
	}
	return h
}

// decodeHeaders reads size headers written by encodeHeader.
func decodeHeaders(raw []byte, size int) []*localCall {
	calls := make([]*localCall, size)
	for r := range calls {
		get := func(i int) int64 { return int64(le.Uint64(raw[8*(r*headerLen+i):])) }
		shape := make([]int, min(max(get(4), 0), maxHeaderDims))
		for i := range shape {
			shape[i] = int(get(5 + i))
		}
		calls[r] = &localCall{name: collectiveName(get(0)), op: ReduceOp(get(1)), root: int(get(2)),
			payload: payload{dtype: tensor.DType(get(3)), shape: shape}}
	}
	return calls
}

// issue enqueues this member's NCCL call on its device's stream, after the
// work queued there before, and waits until the device has run it. In a
// group the members' calls are issued together; prep is this member's
// failure to prepare its buffers, which fails the collective for every
// member instead of leaving them waiting. NCCL errors, device errors,
// asynchronous errors and timeouts abort the communicator.
func (c *ncclComm) issue(name string, f enqueueFunc, prep error) error {
	if c.group != nil {
		if err := c.group.issue(c, name, f, prep); err != nil {
			return err
		}
	} else {
		if prep != nil {
			// The other ranks will time out: there is no way to tell them.
			c.st.abort(prep)
			return prep
		}
		lib := c.st.lib
		err := c.watch(name, func() error {
			return c.mem.Submit(func(stream uintptr) error {
				return lib.err(c.rank, "nccl"+name, f(lib, c.handle, stream), c.handle)
			})
		})
		if err != nil {
			c.st.abort(err)
			return err
		}
	}
	if err := c.watch(name, c.mem.Sync); err != nil {
		err = fmt.Errorf("dist: rank %d: %s: waiting for %s: %w", c.rank, name, c.dev, err)
		c.st.abort(err)
		return c.st.failure()
	}
	return nil
}

// watch runs f, a call that may block in NCCL or on the device, and polls
// NCCL for asynchronous errors meanwhile. When NCCL reports one, or the
// timeout passes, it aborts the communicator, which makes NCCL's blocked
// calls and kernels return, and returns the error that broke it.
func (c *ncclComm) watch(name string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	var expire <-chan time.Time
	if c.st.timeout > 0 {
		timer := time.NewTimer(c.st.timeout)
		defer timer.Stop()
		expire = timer.C
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if err := c.st.asyncError(c.rank, name); err != nil {
				c.st.abort(err)
				return c.afterAbort(done)
			}
		case <-expire:
			c.st.abort(fmt.Errorf("%w: rank %d: collective %s did not complete in %s (a rank died, hung or stopped calling collectives); the NCCL communicator was aborted",
				ErrTimeout, c.rank, name, c.st.timeout))
			return c.afterAbort(done)
		}
	}
}

// afterAbort gives the blocked call a moment to return once NCCL has been
// aborted, and returns the error that broke the communicator.
func (c *ncclComm) afterAbort(done <-chan error) error {
	select {
	case <-done:
	case <-time.After(abortGrace):
	}
	return c.st.failure()
}

// AllReduce reduces t in place over all ranks with ncclAllReduce; Mean is
// a Sum divided on the device.
func (c *ncclComm) AllReduce(t *tensor.Tensor, op ReduceOp) (err error) {
	const name = "AllReduce"
	dtype, esize, err := c.check(name, t, op, true)
	if err != nil {
		return err
	}
	defer catchPanic(name, c.rank, &err)
	w, p, err := c.dense(t, esize)
	if err != nil {
		return err
	}
	defer release(t, w)
	if _, err := c.agree(&localCall{name: name, op: op, payload: payload{dtype: t.DType(), shape: t.Shape()}}); err != nil {
		return err
	}
	if n := uintptr(t.NumElements()); n > 0 {
		err := c.issue(name, func(l *ncclLib, comm, stream uintptr) int32 {
			return l.allReduce(p, p, n, dtype, ncclOp(op), comm, stream)
		}, nil)
		if err != nil {
			return err
		}
	}
	if w != t {
		t.Assign(w)
	}
	if op == Mean {
		scale(t, c.size)
	}
	return nil
}

// Broadcast copies rank root's t into every rank's t with ncclBroadcast.
func (c *ncclComm) Broadcast(t *tensor.Tensor, root int) (err error) {
	const name = "Broadcast"
	if root < 0 || root >= c.size {
		return fmt.Errorf("dist: rank %d: Broadcast from root %d outside a group of %d", c.rank, root, c.size)
	}
	dtype, esize, err := c.check(name, t, Sum, false)
	if err != nil {
		return err
	}
	defer catchPanic(name, c.rank, &err)
	w, p, err := c.dense(t, esize)
	if err != nil {
		return err
	}
	defer release(t, w)
	if _, err := c.agree(&localCall{name: name, root: root, payload: payload{dtype: t.DType(), shape: t.Shape()}}); err != nil {
		return err
	}
	if n := uintptr(t.NumElements()); n > 0 {
		err := c.issue(name, func(l *ncclLib, comm, stream uintptr) int32 {
			return l.broadcast(p, p, n, dtype, int32(root), comm, stream)
		}, nil)
		if err != nil {
			return err
		}
	}
	if w != t {
		t.Assign(w)
	}
	return nil
}

// AllGather concatenates every rank's t along dimension 0 with
// ncclAllGather. When the ranks' dimension 0 differ, each rank's rows are
// padded to the longest and the padding is cut out afterwards.
func (c *ncclComm) AllGather(t *tensor.Tensor) (out *tensor.Tensor, err error) {
	const name = "AllGather"
	dtype, esize, err := c.check(name, t, Sum, false)
	if err != nil {
		return nil, err
	}
	if t.Dims() == 0 {
		return nil, fmt.Errorf("%w: rank %d: AllGather of a scalar (needs at least one dimension)", ErrUnsupported, c.rank)
	}
	defer catchPanic(name, c.rank, &err)
	src, sp, err := c.dense(t, esize)
	if err != nil {
		return nil, err
	}
	defer release(t, src)
	calls, err := c.agree(&localCall{name: name, payload: payload{dtype: t.DType(), shape: t.Shape()}})
	if err != nil {
		return nil, err
	}
	rest := t.Shape()[1:]
	rowElems := backends.NumElements(rest)
	rows := make([]int, c.size)
	longest, total, even := 0, 0, true
	for r, call := range calls {
		rows[r] = call.shape[0]
		longest, total = max(longest, rows[r]), total+rows[r]
		even = even && rows[r] == rows[0]
	}
	if total*rowElems == 0 {
		return tensor.ZerosOf(c.dev, t.DType(), append([]int{total}, rest...)...), nil
	}

	var pad, gathered *tensor.Tensor
	var from, to uintptr
	prep := func() (err error) {
		defer catchPanic(name, c.rank, &err)
		from = sp
		if !even {
			pad = tensor.ZerosOf(c.dev, t.DType(), append([]int{longest}, rest...)...)
			if rows[c.rank] > 0 {
				head := pad.Narrow(0, 0, rows[c.rank])
				head.Assign(src)
				head.Release()
			}
			if from, err = c.pointer(pad); err != nil {
				return err
			}
		}
		gathered = tensor.ZerosOf(c.dev, t.DType(), append([]int{c.size * longest}, rest...)...)
		to, err = c.pointer(gathered)
		return err
	}()
	n := uintptr(longest * rowElems)
	err = c.issue(name, func(l *ncclLib, comm, stream uintptr) int32 {
		return l.allGather(from, to, n, dtype, comm, stream)
	}, prep)
	release(nil, pad)
	if err != nil {
		release(nil, gathered)
		return nil, err
	}
	if even {
		return gathered, nil
	}
	defer gathered.Release()
	var parts []*tensor.Tensor
	for r, k := range rows {
		if k > 0 {
			parts = append(parts, gathered.Narrow(0, r*longest, k))
		}
	}
	out = tensor.Cat(parts, 0)
	release(nil, parts...)
	return out, nil
}

// ReduceScatter reduces t over all ranks and returns this rank's rows, with
// ncclReduceScatter when dimension 0 divides by the group size; otherwise
// (NCCL splits evenly only) with an all-reduce of a copy, of which this rank
// keeps its rows.
func (c *ncclComm) ReduceScatter(t *tensor.Tensor, op ReduceOp) (out *tensor.Tensor, err error) {
	const name = "ReduceScatter"
	dtype, esize, err := c.check(name, t, op, true)
	if err != nil {
		return nil, err
	}
	if t.Dims() == 0 {
		return nil, fmt.Errorf("%w: rank %d: ReduceScatter of a scalar (needs at least one dimension)", ErrUnsupported, c.rank)
	}
	defer catchPanic(name, c.rank, &err)
	shape := t.Shape()
	rest := shape[1:]
	rowElems := backends.NumElements(rest)
	start, count := rowSplit(shape[0], c.size, c.rank)
	even := shape[0]%c.size == 0

	var src, work *tensor.Tensor
	var sp, wp uintptr
	if even {
		src, sp, err = c.dense(t, esize)
		if err != nil {
			return nil, err
		}
		defer release(t, src)
		out = tensor.ZerosOf(c.dev, t.DType(), append([]int{count}, rest...)...)
		if wp, err = c.pointer(out); err != nil {
			out.Release()
			return nil, err
		}
	} else {
		work = tensor.ZerosOf(c.dev, t.DType(), shape...)
		defer work.Release()
		work.Assign(t)
		if wp, err = c.pointer(work); err != nil {
			return nil, err
		}
	}
	if _, err := c.agree(&localCall{name: name, op: op, payload: payload{dtype: t.DType(), shape: shape}}); err != nil {
		release(nil, out)
		return nil, err
	}
	if shape[0]*rowElems > 0 {
		var f enqueueFunc
		if even {
			n := uintptr(count * rowElems)
			f = func(l *ncclLib, comm, stream uintptr) int32 {
				return l.reduceScatter(sp, wp, n, dtype, ncclOp(op), comm, stream)
			}
		} else {
			n := uintptr(shape[0] * rowElems)
			f = func(l *ncclLib, comm, stream uintptr) int32 {
				return l.allReduce(wp, wp, n, dtype, ncclOp(op), comm, stream)
			}
		}
		if err := c.issue(name, f, nil); err != nil {
			release(nil, out)
			return nil, err
		}
	}
	if !even {
		out = tensor.ZerosOf(c.dev, t.DType(), append([]int{count}, rest...)...)
		if count > 0 {
			mine := work.Narrow(0, start, count)
			out.Assign(mine)
			mine.Release()
		}
	}
	if op == Mean {
		scale(out, c.size)
	}
	return out, nil
}

// Barrier returns once every rank has called it (and, over NCCL, once the
// call headers every rank sent have arrived).
func (c *ncclComm) Barrier() error {
	if err := c.usable("Barrier"); err != nil {
		return err
	}
	_, err := c.agree(&localCall{name: "Barrier"})
	return err
}

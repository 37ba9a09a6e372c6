package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kiln-ml/kiln/backends"
)

// ErrConnectionLost is wrapped by every Read, Sync and Alloc error after
// the connection to the server broke (the server stopped, the network
// dropped, keepalive found no answer). The backend stays broken: its
// buffers were freed by the server when the stream ended.
var ErrConnectionLost = errors.New("connection to the server lost")

// Options configures Dial. The zero value is plain text and no token,
// which every server refuses: set Token.
type Options struct {
	// Token is the server's secret, sent with the stream.
	Token string
	// TLS, when set, makes the connection use TLS with this configuration
	// (RootCAs holding the CA or the server's own certificate).
	TLS *tls.Config
	// DialTimeout bounds connecting and the first exchange; 0 means 10s.
	DialTimeout time.Duration
	// KeepaliveTime is how long an idle connection waits before pinging
	// the server; a ping unanswered for KeepaliveTime/2 (at least one
	// second) breaks the connection. 0 means 10s, the least gRPC allows.
	KeepaliveTime time.Duration
}

// flushBytes is how many bytes of calls the client gathers before sending
// them without waiting for a sync point.
const flushBytes = 256 << 10

// Backend is a backends.Backend whose buffers live on a server's device
// and whose calls travel over one gRPC stream. Kernel calls, Alloc, Free
// and Write are queued and sent in batches without waiting; Read, Sync, a
// full batch and a batch holding enough work (see pipelineWork) send, and
// only Read and Sync wait for the server's answer.
// A failure on the server, and one found in the client (a buffer of
// another backend), is the sticky error of the next Read or Sync. It is
// safe for concurrent use.
type Backend struct {
	addr   string
	device string
	info   backends.DeviceInfo
	caps   uint64 // fused interfaces the server's device offers
	conn   *grpc.ClientConn
	stream grpc.ClientStream
	cancel context.CancelFunc

	mu          sync.Mutex // guards the fields below and sending
	pending     encoder
	pendingWork int64   // estimated work of the pending calls (see pipelineWork)
	pendingPool *[]byte // the pooled bytes pending started in
	nextBuf     uint64
	nextReq     uint64
	err         error // sticky failure found by the client

	wmu     sync.Mutex
	waiters map[uint64]*waiter
	dead    error // set once, when the connection broke
	deadCh  chan struct{}

	live, peak, buffers, allocs atomic.Int64

	// Wire counters, for benchmarks: calls queued, frames and bytes sent
	// (guarded by mu), and waits (round trips).
	calls, frames, sentBytes int64
	waits                    atomic.Int64
}

// buffer is a handle on a server buffer: an id in this client's table.
type buffer struct {
	owner *Backend
	id    uint64
	bytes int64
}

// Bytes implements backends.Buffer.
func (b *buffer) Bytes() int64 { return b.bytes }

// waiter is a call waiting for its reply.
type waiter struct {
	done  chan struct{}
	err   error
	dst   []byte // read destination
	info  backends.DeviceInfo
	stats [5]int64
	caps  uint64 // fused interfaces the server's device offers
}

// Dial connects to the server at addr ("host:port") and opens device
// ("cpu:0", "cuda:1") there. It fails when the server cannot be reached,
// refuses the token (ErrUnauthenticated) or has no such device.
func Dial(addr, device string, opts Options) (*Backend, error) {
	kind, index, err := splitDevice(device)
	if err != nil {
		return nil, err
	}
	timeout := opts.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ka := opts.KeepaliveTime
	if ka <= 0 {
		ka = 10 * time.Second
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: ka, Timeout: max(ka/2, time.Second), PermitWithoutStream: true}),
		grpc.WithInitialWindowSize(windowBytes),
		grpc.WithInitialConnWindowSize(2*windowBytes),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(codecName), grpc.MaxCallRecvMsgSize(4*chunkBytes)),
	)
	if err != nil {
		return nil, fmt.Errorf("remote: %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() { timedOut.Store(true); cancel() })
	fail := func(err error) (*Backend, error) {
		timer.Stop()
		cancel()
		conn.Close()
		if timedOut.Load() {
			return nil, fmt.Errorf("remote: %s: no answer within %v: %w", addr, timeout, err)
		}
		return nil, err
	}
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+opts.Token)
	stream, err := conn.NewStream(ctx, &serviceDesc.Streams[0], sessionMethod)
	if err != nil {
		return fail(fmt.Errorf("remote: %s: %w", addr, translate(err)))
	}
	c := &Backend{addr: addr, device: device, conn: conn, stream: stream, cancel: cancel,
		waiters: map[uint64]*waiter{}, deadCh: make(chan struct{}), nextBuf: 1}
	c.newPendingLocked()
	go c.receive()
	w := c.request(func(e *encoder, req uint64) {
		e.op(opHello)
		e.u(req)
		e.u(protocolVersion)
		e.str(kind)
		e.i(int64(index))
	})
	if err := c.wait(w); err != nil {
		return fail(err)
	}
	if !timer.Stop() {
		return fail(errors.New("dial timed out"))
	}
	c.info = w.info
	c.caps = w.caps
	c.info.Detail = fmt.Sprintf("%s on %s via remote://%s/%s", c.info.Name, w.info.String(), addr, device)
	c.info.Name = fmt.Sprintf("%s (remote %s)", w.info.Name, addr)
	c.info.Kind = "remote"
	return c, nil
}

// splitDevice parses "cpu", "cpu:0", "cuda:1".
func splitDevice(device string) (string, int, error) {
	kind, idx := device, 0
	if k, i, ok := cutLast(device, ':'); ok {
		n := 0
		for _, r := range i {
			if r < '0' || r > '9' || n > 1<<20 {
				return "", 0, fmt.Errorf("remote: device %q: bad index %q", device, i)
			}
			n = n*10 + int(r-'0')
		}
		if i == "" {
			return "", 0, fmt.Errorf("remote: device %q: empty index", device)
		}
		kind, idx = k, n
	}
	if kind == "" {
		return "", 0, fmt.Errorf("remote: empty device name")
	}
	return kind, idx, nil
}

func cutLast(s string, sep byte) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// translate turns a gRPC status into the package's errors.
func translate(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.Unauthenticated:
		return fmt.Errorf("%w (%s): check KILN_REMOTE_TOKEN against the token kiln serve printed", ErrUnauthenticated, st.Message())
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s", ErrConnectionLost, st.Message())
	}
	return fmt.Errorf("%s: %s", st.Code(), st.Message())
}

// Close ends the session: the server frees every buffer of this client.
// Later calls fail with ErrConnectionLost.
func (c *Backend) Close() error {
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
	c.cancel()
	c.markDead(errors.New("closed"))
	return c.conn.Close()
}

// Addr returns the server's address.
func (c *Backend) Addr() string { return c.addr }

// receive reads replies until the stream breaks, then marks the backend
// dead so every waiter returns.
func (c *Backend) receive() {
	for {
		var f frame
		if err := c.stream.RecvMsg(&f); err != nil {
			c.markDead(translate(err))
			return
		}
		err := c.dispatch(f.b) // copies read data out
		f.release()
		if err != nil {
			c.markDead(err)
			c.cancel()
			return
		}
	}
}

// dispatch decodes one reply frame and wakes its waiters.
func (c *Backend) dispatch(p []byte) error {
	d := &decoder{b: p}
	for d.more() {
		op, req := d.byte1(), d.u()
		c.wmu.Lock()
		w := c.waiters[req]
		delete(c.waiters, req)
		c.wmu.Unlock()
		if w == nil {
			return fmt.Errorf("reply to unknown request %d", req)
		}
		switch op {
		case repHello:
			w.err = d.errorField(c.addr)
			if w.err == nil {
				w.info = backends.DeviceInfo{Kind: d.str(), Index: d.int(), Name: d.str(),
					MemoryBytes: d.i(), Cores: d.int(), Detail: d.str()}
				w.caps = d.u()
			}
		case repRead:
			w.err = d.errorField(c.addr)
			if w.err == nil {
				data := d.bytes()
				if len(data) != len(w.dst) && d.err == nil {
					return fmt.Errorf("read reply of %d bytes for %d", len(data), len(w.dst))
				}
				copy(w.dst, data)
			}
		case repSync:
			w.err = d.errorField(c.addr)
		case repStats:
			for k := range w.stats {
				w.stats[k] = d.i()
			}
		default:
			return fmt.Errorf("unknown reply %d", op)
		}
		if d.err != nil {
			return d.err
		}
		close(w.done)
	}
	return d.err
}

// markDead records the first reason the connection is gone and wakes every
// waiter.
func (c *Backend) markDead(err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dead != nil {
		return
	}
	if !errors.Is(err, ErrConnectionLost) && !errors.Is(err, ErrUnauthenticated) {
		err = fmt.Errorf("%w: %w", ErrConnectionLost, err)
	}
	c.dead = fmt.Errorf("remote %s: %w", c.addr, err)
	close(c.deadCh)
}

func (c *Backend) deadErr() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.dead
}

// flushLocked sends the pending calls. c.mu is held.
func (c *Backend) flushLocked() {
	if len(c.pending.b) == 0 {
		return
	}
	f := &frame{b: c.pending.b}
	if p := c.pendingPool; p != nil {
		if cap(f.b) == cap(*p) && &f.b[:1][0] == &(*p)[:1][0] {
			*p = f.b // still the pooled bytes: gRPC returns them when written
			f = &frame{pooled: p}
		} else {
			mem.DefaultBufferPool().Put(p) // outgrown: f.b is a copy
		}
	}
	// gRPC may still hold the bytes after SendMsg returns: the next batch
	// gets new ones.
	c.newPendingLocked()
	c.pendingWork = 0
	if c.deadErr() != nil {
		return
	}
	c.frames++
	c.sentBytes += int64(len(f.b))
	if f.pooled != nil {
		c.sentBytes += int64(len(*f.pooled))
	}
	if err := c.stream.SendMsg(f); err != nil && !errors.Is(err, io.EOF) {
		// Waiters wake even if the receiver has not seen the failure yet.
		c.markDead(translate(err))
	}
	// io.EOF: the server ended the stream (a refused token, say); the
	// receiver's RecvMsg returns its status, which is the error to report,
	// so the bare EOF must not be recorded first.
}

// pendingBytes is the capacity of a batch's pooled buffer, enough for a
// training step's calls; a larger batch grows out of it onto the heap.
const pendingBytes = 4 << 10

// newPendingLocked gives the next batch a buffer from gRPC's pool, which
// takes it back once the batch is written: no allocation, and no growing
// from nothing, per batch. c.mu is held (or c is not yet shared).
func (c *Backend) newPendingLocked() {
	p := mem.DefaultBufferPool().Get(pendingBytes)
	c.pendingPool = p
	c.pending.b = (*p)[:0]
}

// request queues a call that waits, registers its waiter and sends.
func (c *Backend) request(build func(e *encoder, req uint64)) *waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.requestLocked(build, nil)
	c.flushLocked()
	return w
}

func (c *Backend) requestLocked(build func(e *encoder, req uint64), dst []byte) *waiter {
	c.nextReq++
	w := &waiter{done: make(chan struct{}), dst: dst}
	c.wmu.Lock()
	c.waiters[c.nextReq] = w
	c.wmu.Unlock()
	build(&c.pending, c.nextReq)
	return w
}

// wait blocks until w's reply arrives or the connection breaks.
func (c *Backend) wait(w *waiter) error {
	c.waits.Add(1)
	select {
	case <-w.done:
		return w.err
	case <-c.deadCh:
		select {
		case <-w.done: // answered before the break
			return w.err
		default:
		}
		return c.deadErr()
	}
}

// send queues one call that does not wait. build encodes it, failing when
// a view is not one of this backend's buffers; the call is then dropped and
// the failure becomes the sticky error. work is the call's estimated cost
// (see pipelineWork): once the queued calls hold enough, they are sent, so
// that the server computes while the client records the calls that follow.
func (c *Backend) send(name string, work int64, build func(e *encoder) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pendingWork >= pipelineWork {
		// Sent one call late, so that a sync point right after a long
		// kernel (a step's optimizer update, then its loss read) still
		// goes out in one frame with it.
		c.flushLocked()
	}
	mark := len(c.pending.b)
	c.calls++
	if err := build(&c.pending); err != nil {
		c.pending.b = c.pending.b[:mark]
		if c.err == nil {
			c.err = fmt.Errorf("remote %s: %s: %w", c.addr, name, err)
		}
		return
	}
	c.pendingWork += work
	if len(c.pending.b) >= flushBytes {
		c.flushLocked()
	}
}

// pipelineWork is the estimated work of queued calls from which the client
// sends them, with the next call, before a sync point asks, so that the
// server starts on them while the client records the calls that follow
// (the forward pass of a large model runs while its backward pass is
// still being recorded). The unit is one element of an element-wise
// kernel's output, about a nanosecond on one core; matrix products count a
// sixteenth per multiply-add (see matmulWork). Below it, a batch waits for
// a sync point or flushBytes: an extra frame costs both sides tens of
// microseconds of CPU (a system call and a goroutine hand-off on each
// side), which only milliseconds of kernel time hide. On loopback with
// two cores an MLP step's matrix products (about 10^6 units each) sent
// early measured no faster: the server's kernels already use every core.
const pipelineWork = 4 << 20

// elements is the element count of v, the work unit of most calls.
func elements(v backends.View) int64 { return int64(backends.NumElements(v.Shape)) }

// matmulWork estimates a matrix product out = a·b (batched or not): its
// output elements plus a sixteenth of its multiply-adds (a blocked GEMM
// runs about sixteen per nanosecond and core).
func matmulWork(out, a backends.View) int64 {
	k := int64(1)
	if n := len(a.Shape); n > 0 {
		k = int64(a.Shape[n-1])
	}
	return elements(out) + elements(out)*k/16
}

// id returns the server id of a buffer of this backend.
func (c *Backend) id(buf backends.Buffer) (uint64, error) {
	b, ok := buf.(*buffer)
	if !ok || b == nil || b.owner != c {
		return 0, fmt.Errorf("buffer %T is not a buffer of this remote device", buf)
	}
	return b.id, nil
}

// views encodes vs in order.
func (c *Backend) views(e *encoder, vs ...backends.View) error {
	for _, v := range vs {
		if v.Buf == nil { // an unused view (AdamStep's moments on the first step): id 0
			e.view(0, v)
			continue
		}
		id, err := c.id(v.Buf)
		if err != nil {
			return err
		}
		e.view(id, v)
	}
	return nil
}

// takeErr returns the client's sticky error and forgets it.
func (c *Backend) takeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	c.err = nil
	return err
}

// Info implements backends.Backend: the server's device, with Kind
// "remote".
func (c *Backend) Info() backends.DeviceInfo { return c.info }

// Alloc implements backends.Backend. The buffer is allocated on the server
// without waiting: a failure there (out of memory) is the sticky error of
// the next Read or Sync. Alloc fails at once when the connection is lost.
func (c *Backend) Alloc(dtype backends.DType, n int) (backends.Buffer, error) {
	if err := c.deadErr(); err != nil {
		return nil, err
	}
	if !dtype.Valid() || n < 0 {
		return nil, fmt.Errorf("remote: alloc %d elements of dtype %d", n, dtype)
	}
	c.mu.Lock()
	id := c.nextBuf
	c.nextBuf++
	c.mu.Unlock()
	b := &buffer{owner: c, id: id, bytes: int64(n) * int64(dtype.Size())}
	c.send("Alloc", 0, func(e *encoder) error {
		e.op(opAlloc)
		e.u(id)
		e.b = append(e.b, byte(dtype))
		e.i(int64(n))
		return nil
	})
	live := c.live.Add(b.bytes)
	for p := c.peak.Load(); live > p && !c.peak.CompareAndSwap(p, live); p = c.peak.Load() {
	}
	c.buffers.Add(1)
	c.allocs.Add(1)
	return b, nil
}

// Free implements backends.Backend.
func (c *Backend) Free(buf backends.Buffer) {
	id, err := c.id(buf)
	c.send("Free", 0, func(e *encoder) error {
		if err != nil {
			return err
		}
		e.op(opFree)
		e.u(id)
		return nil
	})
	if err == nil {
		c.live.Add(-buf.Bytes())
		c.buffers.Add(-1)
	}
}

// Write implements backends.Backend: src is copied into the outgoing batch
// (in calls of at most 1 MiB) before Write returns.
func (c *Backend) Write(buf backends.Buffer, off int64, src []byte) {
	id, err := c.id(buf)
	if err == nil && len(src) >= directBytes {
		c.writeDirect(id, off, src)
		return
	}
	for first := true; first || len(src) > 0; first = false {
		n := min(len(src), chunkBytes)
		chunk := src[:n]
		c.send("Write", int64(len(chunk))/4, func(e *encoder) error {
			if err != nil {
				return err
			}
			e.op(opWrite)
			e.u(id)
			e.i(off)
			e.bytes(chunk)
			return nil
		})
		src, off = src[n:], off+int64(n)
	}
}

// directBytes is the write size from which each chunk goes in a frame of
// its own, copied once into a pooled buffer.
const directBytes = 64 << 10

// writeDirect sends src as write calls, one pooled frame per chunk, after
// the pending calls.
func (c *Backend) writeDirect(id uint64, off int64, src []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	for len(src) > 0 {
		if c.deadErr() != nil {
			return
		}
		n := min(len(src), chunkBytes)
		var h encoder
		h.op(opWrite)
		h.u(id)
		h.i(off)
		h.u(uint64(n))
		p := mem.DefaultBufferPool().Get(len(h.b) + n)
		copy(*p, h.b)
		copy((*p)[len(h.b):], src[:n])
		c.frames++
		c.sentBytes += int64(len(*p))
		if err := c.stream.SendMsg(&frame{pooled: p}); err != nil {
			c.markDead(err)
			return
		}
		src, off = src[n:], off+int64(n)
	}
}

// Read implements backends.Backend: it sends the batch and waits for the
// bytes (in replies of at most 1 MiB, all requested at once).
func (c *Backend) Read(buf backends.Buffer, off int64, dst []byte) error {
	if err := c.deadErr(); err != nil {
		return err
	}
	id, err := c.id(buf)
	if err != nil {
		return fmt.Errorf("remote %s: Read: %w", c.addr, err)
	}
	var ws []*waiter
	c.mu.Lock()
	for first := true; first || len(dst) > 0; first = false {
		n := min(len(dst), chunkBytes)
		o := off
		ws = append(ws, c.requestLocked(func(e *encoder, req uint64) {
			e.op(opRead)
			e.u(req)
			e.u(id)
			e.i(o)
			e.u(uint64(n))
		}, dst[:n]))
		dst, off = dst[n:], off+int64(n)
	}
	c.flushLocked()
	c.mu.Unlock()
	first := c.takeErr()
	for _, w := range ws {
		if err := c.wait(w); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Sync implements backends.Backend: it sends the batch and waits until the
// server has run it, returning the first failure since the last Read or
// Sync, or the lost connection.
func (c *Backend) Sync() error {
	if err := c.deadErr(); err != nil {
		return err
	}
	w := c.request(func(e *encoder, req uint64) {
		e.op(opSync)
		e.u(req)
	})
	err := c.takeErr()
	if e := c.wait(w); err == nil {
		err = e
	}
	return err
}

// MemoryStats implements backends.Backend with this client's own
// accounting (the server's device may have other clients).
func (c *Backend) MemoryStats() backends.MemoryStats {
	return backends.MemoryStats{LiveBytes: c.live.Load(), PeakBytes: c.peak.Load(),
		LiveBuffers: c.buffers.Load(), ReservedBytes: c.live.Load(), Allocations: c.allocs.Load()}
}

// ServerMemoryStats asks the server for its device's memory statistics
// (every client's buffers together). It waits for the reply.
func (c *Backend) ServerMemoryStats() (backends.MemoryStats, error) {
	if err := c.deadErr(); err != nil {
		return backends.MemoryStats{}, err
	}
	w := c.request(func(e *encoder, req uint64) {
		e.op(opStats)
		e.u(req)
	})
	if err := c.wait(w); err != nil {
		return backends.MemoryStats{}, err
	}
	s := w.stats
	return backends.MemoryStats{LiveBytes: s[0], PeakBytes: s[1], LiveBuffers: s[2], ReservedBytes: s[3], Allocations: s[4]}, nil
}

// Fill implements backends.Backend.
func (c *Backend) Fill(out backends.View, v float64) {
	c.send("Fill", elements(out), func(e *encoder) error {
		e.op(opFill)
		if err := c.views(e, out); err != nil {
			return err
		}
		e.f(v)
		return nil
	})
}

// Copy implements backends.Backend.
func (c *Backend) Copy(out, x backends.View) {
	c.send("Copy", elements(out), func(e *encoder) error { e.op(opCopy); return c.views(e, out, x) })
}

// Unary implements backends.Backend.
func (c *Backend) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	c.send("Unary", elements(out), func(e *encoder) error {
		e.op(opUnary)
		e.op(byte(op))
		if err := c.views(e, out, x); err != nil {
			return err
		}
		e.f(p0)
		e.f(p1)
		return nil
	})
}

// UnaryGrad implements backends.Backend.
func (c *Backend) UnaryGrad(op backends.UnaryOp, out, x, g backends.View, p0, p1 float64) {
	c.send("UnaryGrad", elements(out), func(e *encoder) error {
		e.op(opUnaryGrad)
		e.op(byte(op))
		if err := c.views(e, out, x, g); err != nil {
			return err
		}
		e.f(p0)
		e.f(p1)
		return nil
	})
}

// Binary implements backends.Backend.
func (c *Backend) Binary(op backends.BinaryOp, out, a, b backends.View) {
	c.send("Binary", elements(out), func(e *encoder) error {
		e.op(opBinary)
		e.op(byte(op))
		return c.views(e, out, a, b)
	})
}

// BinaryScalar implements backends.Backend.
func (c *Backend) BinaryScalar(op backends.BinaryOp, out, a backends.View, s float64, reverse bool) {
	c.send("BinaryScalar", elements(out), func(e *encoder) error {
		e.op(opBinaryScalar)
		e.op(byte(op))
		if err := c.views(e, out, a); err != nil {
			return err
		}
		e.f(s)
		e.flag(reverse)
		return nil
	})
}

// Where implements backends.Backend.
func (c *Backend) Where(out, cond, a, b backends.View) {
	c.send("Where", elements(out), func(e *encoder) error { e.op(opWhere); return c.views(e, out, cond, a, b) })
}

// Reduce implements backends.Backend.
func (c *Backend) Reduce(op backends.ReduceOp, out, x backends.View, axes []int) {
	c.send("Reduce", elements(x), func(e *encoder) error {
		e.op(opReduce)
		e.op(byte(op))
		if err := c.views(e, out, x); err != nil {
			return err
		}
		e.ints(axes)
		return nil
	})
}

// ArgReduce implements backends.Backend.
func (c *Backend) ArgReduce(op backends.ReduceOp, out, x backends.View, axis int) {
	c.axisCall("ArgReduce", opArgReduce, op, out, x, axis)
}

// Scan implements backends.Backend.
func (c *Backend) Scan(op backends.ReduceOp, out, x backends.View, axis int) {
	c.axisCall("Scan", opScan, op, out, x, axis)
}

func (c *Backend) axisCall(name string, code byte, op backends.ReduceOp, out, x backends.View, axis int) {
	c.send(name, elements(x), func(e *encoder) error {
		e.op(code)
		e.op(byte(op))
		if err := c.views(e, out, x); err != nil {
			return err
		}
		e.i(int64(axis))
		return nil
	})
}

// Sort implements backends.Backend.
func (c *Backend) Sort(values, indices, x backends.View, axis int, descending bool) {
	c.send("Sort", 4*elements(x), func(e *encoder) error {
		e.op(opSort)
		if err := c.views(e, values, indices, x); err != nil {
			return err
		}
		e.i(int64(axis))
		e.flag(descending)
		return nil
	})
}

// Matmul implements backends.Backend.
func (c *Backend) Matmul(out, a, b backends.View) {
	c.send("Matmul", matmulWork(out, a), func(e *encoder) error { e.op(opMatmul); return c.views(e, out, a, b) })
}

// Gather implements backends.Backend.
func (c *Backend) Gather(out, x, index backends.View, axis int) {
	c.send("Gather", elements(out), func(e *encoder) error {
		e.op(opGather)
		if err := c.views(e, out, x, index); err != nil {
			return err
		}
		e.i(int64(axis))
		return nil
	})
}

// Scatter implements backends.Backend.
func (c *Backend) Scatter(out, index, src backends.View, axis int, add bool) {
	c.send("Scatter", elements(src), func(e *encoder) error {
		e.op(opScatter)
		if err := c.views(e, out, index, src); err != nil {
			return err
		}
		e.i(int64(axis))
		e.flag(add)
		return nil
	})
}

// Im2Col implements backends.Backend.
func (c *Backend) Im2Col(out, x backends.View, g backends.ConvGeometry) {
	c.send("Im2Col", elements(out), func(e *encoder) error {
		e.op(opIm2Col)
		if err := c.views(e, out, x); err != nil {
			return err
		}
		e.geometry(g)
		return nil
	})
}

// Col2Im implements backends.Backend.
func (c *Backend) Col2Im(out, cols backends.View, g backends.ConvGeometry) {
	c.send("Col2Im", elements(cols), func(e *encoder) error {
		e.op(opCol2Im)
		if err := c.views(e, out, cols); err != nil {
			return err
		}
		e.geometry(g)
		return nil
	})
}

// Random implements backends.Backend.
func (c *Backend) Random(out backends.View, kind backends.RandomKind, seed, counter uint64, p0, p1 float64) {
	c.send("Random", elements(out), func(e *encoder) error {
		e.op(opRandom)
		if err := c.views(e, out); err != nil {
			return err
		}
		e.op(byte(kind))
		e.u64(seed)
		e.u64(counter)
		e.f(p0)
		e.f(p1)
		return nil
	})
}

var _ backends.Backend = (*Backend)(nil)

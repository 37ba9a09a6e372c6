package remote

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kiln-ml/kiln/backends"
)

// ErrUnauthenticated is wrapped by the error of Dial (and of opening a
// remote device) when the server refuses the token.
var ErrUnauthenticated = errors.New("the server refused the token")

// ServerConfig configures a Server. The zero value serves every registered
// device in plain text, which only loopback use should accept; Token must
// be set.
type ServerConfig struct {
	// Token is the secret every client sends; a stream without it is
	// refused. It must not be empty.
	Token string
	// TLS, when set, makes the server speak TLS with these settings (its
	// certificate and key).
	TLS credentials.TransportCredentials `json:"-"`
	// Open opens the backend a client names ("cpu", 0). Nil means the
	// registered driver of that kind (backends.Lookup).
	Open func(kind string, index int) (backends.Backend, error) `json:"-"`
	// MaxSessionBytes caps the bytes one session may hold in buffers; an
	// allocation beyond it is the session's sticky error, wrapping
	// backends.ErrOutOfMemory. 0 means no cap beyond the device's own.
	MaxSessionBytes int64
	// Log, when set, receives one line per session opened and closed.
	Log func(format string, args ...any) `json:"-"`
}

// Server serves local backends to remote clients over gRPC. Each client
// stream is a session with its own buffer table and its own sticky error;
// the server frees a session's buffers when its stream ends, however it
// ends (the client closed it, the connection dropped, keepalive gave up).
type Server struct {
	cfg  ServerConfig
	grpc *grpc.Server

	mu      sync.Mutex
	devices map[string]*device // opened backends, by "kind:index"

	buffers  atomic.Int64 // live buffers over all sessions
	sessions atomic.Int64 // open sessions
}

// device is one opened backend with the lock that serialises sessions on it:
// a frame runs under the lock and ends with a Sync, so a failure is
// charged to the session whose calls caused it.
type device struct {
	mu      sync.Mutex
	backend backends.Backend
}

// NewServer returns a server for cfg. It fails when cfg.Token is empty.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Token == "" {
		return nil, errors.New("remote: server: empty token (every server needs one)")
	}
	s := &Server{cfg: cfg, devices: map[string]*device{}}
	opts := []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		// Find dead clients, so their buffers are freed.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.MaxRecvMsgSize(4 * chunkBytes),
		// Windows of several chunks keep bulk transfers streaming.
		grpc.InitialWindowSize(windowBytes),
		grpc.InitialConnWindowSize(2 * windowBytes),
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(cfg.TLS))
	}
	s.grpc = grpc.NewServer(opts...)
	s.grpc.RegisterService(&serviceDesc, s)
	return s, nil
}

// Serve accepts clients on l until Stop; it returns the listener's error.
func (s *Server) Serve(l net.Listener) error { return s.grpc.Serve(l) }

// Stop closes every connection and session at once (freeing their buffers)
// and stops Serve.
func (s *Server) Stop() { s.grpc.Stop() }

// LiveBuffers returns the number of buffers the server holds for all its
// clients.
func (s *Server) LiveBuffers() int64 { return s.buffers.Load() }

// Sessions returns the number of clients connected now.
func (s *Server) Sessions() int64 { return s.sessions.Load() }

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log(format, args...)
	}
}

// authorize checks the stream's token in constant time.
func (s *Server) authorize(stream grpc.ServerStream) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	for _, v := range md.Get("authorization") {
		tok, ok := strings.CutPrefix(v, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "kiln serve: wrong or missing token")
}

func (s *Server) open(kind string, index int) (*device, error) {
	key := fmt.Sprintf("%s:%d", kind, index)
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.devices[key]; ok {
		return d, nil
	}
	open := s.cfg.Open
	if open == nil {
		open = func(kind string, index int) (backends.Backend, error) {
			drv, err := backends.Lookup(kind)
			if err != nil {
				return nil, err
			}
			return drv.Open(index)
		}
	}
	b, err := open(kind, index)
	if err != nil {
		return nil, err
	}
	d := &device{backend: b}
	s.devices[key] = d
	return d, nil
}

// session is one client's stream: its buffer table and sticky error.
type session struct {
	srv   *Server
	dev   *device
	bufs  map[uint64]backends.Buffer
	bytes int64 // held in bufs
	// scratch receives reads before they are copied into a reply.
	scratch []byte
	// ints is the decoders' unused room for view dimensions, kept from
	// frame to frame (see decoder.ints).
	ints []int
	err  error // sticky: the first failure since the last read or sync
}

// session runs one client stream to its end.
func (s *Server) session(stream grpc.ServerStream) error {
	if err := s.authorize(stream); err != nil {
		return err
	}
	s.sessions.Add(1)
	defer s.sessions.Add(-1)
	ss := &session{srv: s, bufs: map[uint64]backends.Buffer{}}
	defer ss.freeAll()
	for {
		var in frame
		if err := stream.RecvMsg(&in); err != nil {
			return nil // the client went away; its buffers go with it
		}
		send := func(out []byte) error { return stream.SendMsg(&frame{b: out}) }
		err := ss.run(in.b, send)
		in.release() // Write copied what it kept
		if err != nil {
			if errors.Is(err, errSend) {
				return nil // the client went away
			}
			return status.Error(codes.InvalidArgument, err.Error())
		}
	}
}

func (ss *session) fail(err error) {
	if ss.err == nil {
		ss.err = err
	}
}

// take returns the sticky error and forgets it.
func (ss *session) take() error {
	err := ss.err
	ss.err = nil
	return err
}

func (ss *session) freeAll() {
	if ss.dev == nil {
		return
	}
	ss.dev.mu.Lock()
	defer ss.dev.mu.Unlock()
	ss.srv.logf("session closed, freeing its %d buffers", len(ss.bufs))
	for id, b := range ss.bufs {
		ss.dev.backend.Free(b)
		delete(ss.bufs, id)
		ss.srv.buffers.Add(-1)
	}
}

// resolve puts the session's buffer behind a wire view, or records an
// error naming the unknown id.
func (ss *session) resolve(w wireView, ok *bool) backends.View {
	if w.id == 0 { // a view the call leaves unused (ids start at 1)
		return w.view
	}
	b, found := ss.bufs[w.id]
	if !found {
		ss.fail(fmt.Errorf("buffer %d does not exist in this session (freed, or never allocated)", w.id))
		*ok = false
		return w.view
	}
	w.view.Buf = b
	return w.view
}

// errSend wraps a failure to send replies: the client is gone.
var errSend = errors.New("sending replies")

// run executes one frame of calls and sends the replies, in frames of
// about chunkBytes. A frame that does not decode ends the session with the
// returned error.
func (ss *session) run(p []byte, send func([]byte) error) (err error) {
	d := &decoder{b: p, ints: ss.ints}
	defer func() { ss.ints = d.ints }()
	var out encoder
	var locked *device
	lock := func() {
		if ss.dev != nil && locked == nil {
			locked = ss.dev
			locked.mu.Lock()
		}
	}
	defer func() {
		if locked != nil {
			// Charge failures of this frame's calls to this session.
			if e := locked.backend.Sync(); e != nil {
				ss.fail(e)
			}
			locked.mu.Unlock()
		}
	}()
	lock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("remote: server: call failed: %v", r)
		}
	}()
	flush := func() error {
		if len(out.b) == 0 {
			return nil
		}
		b := out.b
		out.b = nil
		if err := send(b); err != nil {
			return fmt.Errorf("%w: %w", errSend, err)
		}
		return nil
	}
	for d.more() {
		op := d.byte1()
		if ss.dev == nil && op != opHello {
			err = errors.New("remote: server: first call must be hello")
			break
		}
		if err = ss.call(op, d, &out); err != nil {
			break
		}
		lock() // after hello
		if len(out.b) >= chunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if e := flush(); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	return d.err
}

// call decodes and runs one call.
func (ss *session) call(op byte, d *decoder, out *encoder) error {
	b := func() backends.Backend { return ss.dev.backend }
	ok := true
	v := func() backends.View {
		w := d.view()
		if d.err != nil {
			return w.view
		}
		return ss.resolve(w, &ok)
	}
	run := func(f func()) {
		if d.err == nil && ok {
			f()
		}
	}
	switch op {
	case opHello:
		req, version, kind, index := d.u(), d.u(), d.str(), d.int()
		if d.err != nil {
			return d.err
		}
		if ss.dev != nil {
			return errors.New("remote: server: hello twice in one session")
		}
		out.op(repHello)
		out.u(req)
		if version != protocolVersion {
			out.errorField(fmt.Errorf("protocol version %d, the server speaks %d (upgrade the older of the two)", version, protocolVersion))
			return nil
		}
		dev, err := ss.srv.open(kind, index)
		if err != nil {
			out.errorField(err)
			return nil
		}
		ss.dev = dev
		info := dev.backend.Info()
		out.errorField(nil)
		out.str(info.Kind)
		out.i(int64(info.Index))
		out.str(info.Name)
		out.i(info.MemoryBytes)
		out.i(int64(info.Cores))
		out.str(info.Detail)
		out.u(capabilities(dev.backend))
		ss.srv.logf("session opened on %s", info)
		return nil
	case opAlloc:
		id, dt, n := d.u(), backends.DType(d.byte1()), d.int()
		if d.err != nil {
			return d.err
		}
		if _, dup := ss.bufs[id]; dup {
			ss.fail(fmt.Errorf("buffer %d allocated twice", id))
			return nil
		}
		if !dt.Valid() || n < 0 {
			ss.fail(fmt.Errorf("alloc: bad dtype %d or count %d", dt, n))
			return nil
		}
		size := int64(n) * int64(dt.Size())
		if max := ss.srv.cfg.MaxSessionBytes; max > 0 && (n > int(max) || ss.bytes+size > max) {
			ss.fail(fmt.Errorf("alloc %d × %s: %w: the session would hold more than the server's cap of %d bytes", n, dt, backends.ErrOutOfMemory, max))
			return nil
		}
		buf, err := b().Alloc(dt, n)
		if err != nil {
			ss.fail(fmt.Errorf("alloc %d × %s: %w", n, dt, err))
			return nil
		}
		ss.bufs[id] = buf
		ss.bytes += size
		ss.srv.buffers.Add(1)
	case opFree:
		id := d.u()
		if buf, found := ss.bufs[id]; found {
			b().Free(buf)
			delete(ss.bufs, id)
			ss.bytes -= buf.Bytes()
			ss.srv.buffers.Add(-1)
		}
	case opWrite:
		id, off, data := d.u(), d.i(), d.bytes()
		if d.err != nil {
			return d.err
		}
		buf, found := ss.bufs[id]
		if !found {
			ss.fail(fmt.Errorf("write: buffer %d does not exist in this session", id))
			return nil
		}
		b().Write(buf, off, data)
	case opRead:
		req, id, off, n := d.u(), d.u(), d.i(), d.count(chunkBytes)
		if d.err != nil {
			return d.err
		}
		if cap(ss.scratch) < n {
			ss.scratch = make([]byte, chunkBytes)
		}
		data := ss.scratch[:n] // copied into the reply below
		var err error
		if buf, found := ss.bufs[id]; !found {
			err = fmt.Errorf("read: buffer %d does not exist in this session", id)
		} else {
			err = b().Read(buf, off, data)
		}
		if e := ss.take(); e != nil {
			err = e // the earlier failure is the cause
		}
		out.op(repRead)
		out.u(req)
		out.errorField(err)
		if err == nil {
			out.bytes(data)
		}
	case opSync:
		req := d.u()
		err := ss.take()
		if e := b().Sync(); err == nil {
			err = e
		}
		out.op(repSync)
		out.u(req)
		out.errorField(err)
	case opStats:
		req := d.u()
		m := b().MemoryStats()
		out.op(repStats)
		out.u(req)
		for _, x := range []int64{m.LiveBytes, m.PeakBytes, m.LiveBuffers, m.ReservedBytes, m.Allocations} {
			out.i(x)
		}
	case opFill:
		o, x := v(), d.f()
		run(func() { b().Fill(o, x) })
	case opCopy:
		o, x := v(), v()
		run(func() { b().Copy(o, x) })
	case opUnary:
		u := backends.UnaryOp(d.byte1())
		o, x, p0, p1 := v(), v(), d.f(), d.f()
		run(func() { b().Unary(u, o, x, p0, p1) })
	case opUnaryGrad:
		u := backends.UnaryOp(d.byte1())
		o, x, g, p0, p1 := v(), v(), v(), d.f(), d.f()
		run(func() { b().UnaryGrad(u, o, x, g, p0, p1) })
	case opBinary:
		bo := backends.BinaryOp(d.byte1())
		o, x, y := v(), v(), v()
		run(func() { b().Binary(bo, o, x, y) })
	case opBinaryScalar:
		bo := backends.BinaryOp(d.byte1())
		o, x, s, rev := v(), v(), d.f(), d.flag()
		run(func() { b().BinaryScalar(bo, o, x, s, rev) })
	case opWhere:
		o, c, x, y := v(), v(), v(), v()
		run(func() { b().Where(o, c, x, y) })
	case opReduce:
		r := backends.ReduceOp(d.byte1())
		o, x, axes := v(), v(), d.intSlice()
		run(func() { b().Reduce(r, o, x, axes) })
	case opArgReduce:
		r := backends.ReduceOp(d.byte1())
		o, x, axis := v(), v(), d.int()
		run(func() { b().ArgReduce(r, o, x, axis) })
	case opScan:
		r := backends.ReduceOp(d.byte1())
		o, x, axis := v(), v(), d.int()
		run(func() { b().Scan(r, o, x, axis) })
	case opSort:
		vals, idx, x, axis, desc := v(), v(), v(), d.int(), d.flag()
		run(func() { b().Sort(vals, idx, x, axis, desc) })
	case opMatmul:
		o, x, y := v(), v(), v()
		run(func() { b().Matmul(o, x, y) })
	case opGather:
		o, x, idx, axis := v(), v(), v(), d.int()
		run(func() { b().Gather(o, x, idx, axis) })
	case opScatter:
		o, idx, src, axis, add := v(), v(), v(), d.int(), d.flag()
		run(func() { b().Scatter(o, idx, src, axis, add) })
	case opIm2Col:
		o, x, g := v(), v(), d.geometry()
		run(func() { b().Im2Col(o, x, g) })
	case opCol2Im:
		o, x, g := v(), v(), d.geometry()
		run(func() { b().Col2Im(o, x, g) })
	case opRandom:
		o, kind, seed, counter, p0, p1 := v(), backends.RandomKind(d.byte1()), d.u64(), d.u64(), d.f(), d.f()
		run(func() { b().Random(o, kind, seed, counter, p0, p1) })
	default:
		if !ss.fusedCall(op, d, v, &ok) {
			return fmt.Errorf("remote: server: unknown call %d", op)
		}
	}
	return d.err
}

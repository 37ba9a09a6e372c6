package jupyter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Config configures a Server. Zero values get the documented defaults.
type Config struct {
	// Connection says where to listen and the signing key (usually from
	// ReadConnectionFile). Port 0 binds a free port; ConnectionInfo reports
	// the ports actually bound.
	Connection ConnectionInfo
	// Handler runs the cells. Required.
	Handler Handler
	// Logger receives protocol problems (dropped messages, bad signatures).
	// Default: text to stderr.
	Logger *slog.Logger
	// HistoryFile, if set, persists the execution history across kernel
	// starts as JSON lines. Default: history in memory only.
	HistoryFile string
	// FlushInterval is the longest stream output stays buffered. Default 50 ms.
	FlushInterval time.Duration
	// MaxStreamBuffer bounds buffered stream output in bytes. Default 1 MiB.
	MaxStreamBuffer int
	// StopOnErrorGrace: after a cell fails with stop_on_error, execute
	// requests that arrived before the failure plus this grace are aborted.
	// Default 0 (ipykernel's default).
	StopOnErrorGrace time.Duration
	// NoSignalHandler leaves SIGINT alone. By default Serve traps SIGINT and
	// interrupts the running cell instead of letting the process die.
	NoSignalHandler bool
	// IOPubHighWater is how many messages zmq4's PUB socket queues before it
	// drops new ones. Default 1000 (libzmq's default).
	IOPubHighWater int
	// ShutdownGrace is how long Serve waits for a running cell to return
	// after a shutdown. Default 2 s.
	ShutdownGrace time.Duration
	// MaxMessage is the largest message, in bytes (all its frames
	// together), any of the kernel's sockets accepts. What a larger one
	// sends beyond the limit is dropped as it arrives, never buffered (see
	// limit.go); the refusal is logged, and a shell or control request
	// gets an error reply (ename "MessageTooLarge") naming the limit.
	// Default DefaultMaxMessage; negative means no limit.
	MaxMessage int64
}

// Server is a Jupyter kernel: it serves a Handler over the five ZeroMQ
// sockets of a connection file. Shell requests are handled one at a time in
// arrival order; control requests (interrupt, shutdown) are handled
// concurrently, so they work while a cell runs.
type Server struct {
	cfg     Config
	h       Handler
	log     *slog.Logger
	signer  *Signer
	session string
	info    ConnectionInfo

	sockCancel                       context.CancelFunc
	shell, control, stdin, iopub, hb zmq4.Socket
	shellOut, controlOut, stdinOut   *outbox
	iopubOut                         *outbox
	pub                              *publisher
	history                          *History
	comms                            *Comms
	replay                           replayGuard

	shellQ  chan queued
	current atomic.Pointer[Message] // shell request being handled

	// Owned by the shell goroutine.
	execCount   int
	abortBefore time.Time

	mu         sync.Mutex
	cellCancel context.CancelFunc
	inputWait  *inputWait
	inputMu    sync.Mutex // one input_request at a time

	serving   atomic.Bool
	stopOnce  sync.Once
	stopped   chan struct{}
	restart   atomic.Bool
	closeOnce sync.Once
}

type queued struct {
	msg     *Message
	arrived time.Time
}

type inputWait struct {
	id string
	ch chan string
}

// NewServer binds the kernel's sockets. It fails if the configuration is
// invalid or a port cannot be bound.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Handler == nil {
		return nil, errors.New("jupyter: Config.Handler is nil")
	}
	if err := cfg.Connection.check(); err != nil {
		return nil, fmt.Errorf("jupyter: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 50 * time.Millisecond
	}
	if cfg.MaxStreamBuffer <= 0 {
		cfg.MaxStreamBuffer = 1 << 20
	}
	if cfg.IOPubHighWater <= 0 {
		cfg.IOPubHighWater = 1000
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 2 * time.Second
	}
	if cfg.MaxMessage == 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	signer, err := NewSigner(cfg.Connection.SignatureScheme, cfg.Connection.Key)
	if err != nil {
		return nil, err
	}
	history, err := NewHistory(cfg.HistoryFile)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, h: cfg.Handler, log: cfg.Logger, signer: signer, session: NewID(),
		info: cfg.Connection, history: history,
		shellQ: make(chan queued, 1024), stopped: make(chan struct{}),
	}
	s.replay.init(1 << 14)
	s.comms = newComms(s)

	ctx, cancel := context.WithCancel(context.Background())
	s.sockCancel = cancel
	zlog := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	opts := []zmq4.Option{zmq4.WithLogger(zlog), zmq4.WithTimeout(10 * time.Second)}
	s.shell = zmq4.NewRouter(ctx, opts...)
	s.control = zmq4.NewRouter(ctx, opts...)
	s.stdin = zmq4.NewRouter(ctx, opts...)
	s.iopub = zmq4.NewPub(ctx, opts...)
	s.hb = zmq4.NewRep(ctx, opts...)
	for _, b := range []struct {
		sock zmq4.Socket
		port *int
	}{{s.shell, &s.info.ShellPort}, {s.control, &s.info.ControlPort}, {s.stdin, &s.info.StdinPort},
		{s.iopub, &s.info.IOPubPort}, {s.hb, &s.info.HBPort}} {
		ep, err := zmqEndpoint(s.info.IP, *b.port, s.cfg.MaxMessage)
		if err == nil {
			err = b.sock.Listen(ep)
		}
		if err != nil {
			s.closeSockets()
			history.Close()
			return nil, fmt.Errorf("jupyter: bind: %w", err)
		}
		if a, ok := b.sock.Addr().(*net.TCPAddr); ok {
			*b.port = a.Port
		}
	}
	if err := s.iopub.SetOption(zmq4.OptionHWM, cfg.IOPubHighWater); err != nil {
		s.log.Warn("jupyter: cannot set iopub high-water mark", "err", err)
	}
	s.shellOut = newOutbox("shell", s.shell, 256, s.log)
	s.controlOut = newOutbox("control", s.control, 256, s.log)
	s.stdinOut = newOutbox("stdin", s.stdin, 64, s.log)
	s.iopubOut = newOutbox("iopub", s.iopub, 4096, s.log)
	s.pub = newPublisher(s.session, signer, s.iopubOut, cfg.FlushInterval, cfg.MaxStreamBuffer, s.log)
	return s, nil
}

// Run serves h on the kernel described by connectionFile until a
// shutdown_request or ctx ends: the body of a kernel process's main.
// It fails if the file is invalid or the ports cannot be bound.
func Run(ctx context.Context, connectionFile string, h Handler, logger *slog.Logger) error {
	info, err := ReadConnectionFile(connectionFile)
	if err != nil {
		return err
	}
	s, err := NewServer(Config{Connection: info, Handler: h, Logger: logger})
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// ConnectionInfo returns the connection info with the ports actually bound.
func (s *Server) ConnectionInfo() ConnectionInfo { return s.info }

// Session returns the kernel's session id (the session of its headers).
func (s *Server) Session() string { return s.session }

// Comms returns the comm registry, where the session registers targets.
func (s *Server) Comms() *Comms { return s.comms }

// History returns the execution history.
func (s *Server) History() *History { return s.history }

// RestartRequested reports whether the kernel stopped because of a
// shutdown_request asking for a restart.
func (s *Server) RestartRequested() bool { return s.restart.Load() }

// Serve handles requests until a shutdown_request arrives (it then returns
// nil) or ctx ends (it returns nil too); it closes the sockets before it
// returns. It fails if called twice.
func (s *Server) Serve(ctx context.Context) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("jupyter: Serve called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.close()

	if !s.cfg.NoSignalHandler {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		go func() {
			for {
				select {
				case <-sig:
					s.log.Info("jupyter: SIGINT, interrupting")
					s.Interrupt()
				case <-ctx.Done():
					return
				}
			}
		}()
	}

	s.status(nil, "starting")
	go s.heartbeat(ctx)
	go s.recvLoop(ctx, s.shell, "shell", func(m *Message, at time.Time) {
		select {
		case s.shellQ <- queued{m, at}:
		case <-ctx.Done():
		}
	})
	go s.recvLoop(ctx, s.control, "control", s.handleControl)
	go s.recvLoop(ctx, s.stdin, "stdin", s.handleStdin)
	shellDone := make(chan struct{})
	go func() {
		defer close(shellDone)
		s.shellLoop(ctx)
	}()

	select {
	case <-ctx.Done():
	case <-s.stopped:
	}
	cancel()
	select {
	case <-shellDone:
	case <-time.After(s.cfg.ShutdownGrace):
		s.log.Warn("jupyter: cell still running at shutdown")
	}
	return nil
}

// Interrupt interrupts the running cell, as interrupt_request does: it
// cancels the cell's context and calls Handler.Interrupt.
func (s *Server) Interrupt() {
	s.mu.Lock()
	if s.cellCancel != nil {
		s.cellCancel()
	}
	s.mu.Unlock()
	s.guard("Interrupt", s.h.Interrupt)
}

func (s *Server) requestStop(restart bool) {
	s.restart.Store(restart)
	s.stopOnce.Do(func() { close(s.stopped) })
}

// close flushes output and closes the sockets.
func (s *Server) close() {
	s.closeOnce.Do(func() {
		s.pub.flush()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		for _, o := range []*outbox{s.shellOut, s.controlOut, s.stdinOut, s.iopubOut} {
			o.drain(ctx)
		}
		cancel()
		// zmq4's PUB hands messages to its own sending goroutine; give it a
		// moment before the connections close.
		time.Sleep(50 * time.Millisecond)
		for _, o := range []*outbox{s.shellOut, s.controlOut, s.stdinOut, s.iopubOut} {
			o.close()
		}
		s.closeSockets()
		s.history.Close()
	})
}

func (s *Server) closeSockets() {
	for _, sock := range []zmq4.Socket{s.shell, s.control, s.stdin, s.iopub, s.hb} {
		if sock != nil {
			sock.Close()
		}
	}
	s.sockCancel()
}

// recvLoop reads one socket, parses and authenticates each message, and
// hands the good ones to deliver. Bad ones are logged and dropped.
func (s *Server) recvLoop(ctx context.Context, sock zmq4.Socket, name string, deliver func(*Message, time.Time)) {
	for {
		zm, err := sock.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Debug("jupyter: receive failed", "channel", name, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		at := time.Now()
		if size, ok := refusedSize(zm.Frames); ok {
			err := &TooLargeError{Size: size, Limit: s.cfg.MaxMessage}
			m := parseRefused(zm.Frames)
			if m == nil {
				s.log.Warn("jupyter: message dropped", "channel", name, "err", err)
				continue
			}
			s.log.Warn("jupyter: message dropped", "channel", name, "msg_type", m.Type(), "err", err)
			m.refused = err
			deliver(m, at)
			continue
		}
		m, err := ParseMessage(zm.Frames, s.signer)
		if err != nil {
			s.log.Warn("jupyter: message dropped", "channel", name, "err", err)
			continue
		}
		if s.signer.Enabled() && !s.replay.fresh(m.signature) {
			s.log.Warn("jupyter: replayed message dropped", "channel", name, "msg_type", m.Type())
			continue
		}
		deliver(m, at)
	}
}

func (s *Server) heartbeat(ctx context.Context) {
	for {
		m, err := s.hb.Recv()
		if size, ok := refusedSize(m.Frames); ok && err == nil {
			s.log.Warn("jupyter: heartbeat dropped", "err", &TooLargeError{Size: size, Limit: s.cfg.MaxMessage})
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if err := s.hb.Send(m); err != nil && ctx.Err() == nil {
			s.log.Debug("jupyter: heartbeat send failed", "err", err)
		}
	}
}

// status publishes an execution_state on iopub (after flushing streams).
func (s *Server) status(parent *Message, state string) {
	if err := s.pub.publish("status", parent, KernelStatus{ExecutionState: state}); err != nil {
		s.log.Error("jupyter: publish status", "err", err)
	}
}

// reply sends a reply to req on out, the outbox of the socket req came on.
func (s *Server) reply(out *outbox, req *Message, msgType string, content any, metadata map[string]any) {
	m, err := NewMessage(s.session, msgType, req, content)
	if err != nil {
		s.log.Error("jupyter: cannot build reply", "msg_type", msgType, "err", err)
		m, _ = NewMessage(s.session, msgType, req, map[string]any{
			"status": StatusError, "ename": "EncodingError", "evalue": err.Error(), "traceback": []string{}})
	}
	if metadata != nil {
		m.Metadata = metadata
	}
	frames, err := m.Frames(s.signer)
	if err != nil {
		s.log.Error("jupyter: cannot serialise reply", "msg_type", msgType, "err", err)
		return
	}
	out.send(frames)
}

func (s *Server) replyError(out *outbox, req *Message, msgType, ename, evalue string) {
	s.reply(out, req, msgType, map[string]any{
		"status": StatusError, "ename": ename, "evalue": evalue, "traceback": []string{}}, nil)
}

func replyType(reqType string) string {
	return strings.TrimSuffix(reqType, "_request") + "_reply"
}

// guard runs f, turning a panic into a logged error.
func (s *Server) guard(what string, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in %s: %v", what, r)
			s.log.Error("jupyter: handler panicked", "in", what, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
	return nil
}

// publishComm publishes a comm message with the current shell request (if
// any) as parent.
func (s *Server) publishComm(msgType string, content any, buffers [][]byte) error {
	m, err := NewMessage(s.session, msgType, s.current.Load(), content)
	if err != nil {
		return err
	}
	m.Buffers = buffers
	s.pub.mu.Lock()
	defer s.pub.mu.Unlock()
	s.pub.flushLocked(true)
	s.pub.sendLocked(m)
	return nil
}

// handleControl serves one control request (in the control goroutine).
func (s *Server) handleControl(m *Message, _ time.Time) {
	if m.refused != nil {
		s.refuse(s.controlOut, m)
		return
	}
	s.status(m, "busy")
	switch m.Type() {
	case "interrupt_request":
		s.Interrupt()
		s.reply(s.controlOut, m, "interrupt_reply", map[string]any{"status": StatusOK}, nil)
	case "shutdown_request":
		s.shutdown(s.controlOut, m)
	case "kernel_info_request":
		s.reply(s.controlOut, m, "kernel_info_reply", s.kernelInfo(), nil)
	default:
		s.unknown(s.controlOut, m)
	}
	s.status(m, "idle")
	if m.Type() == "shutdown_request" {
		s.requestStop(s.restart.Load())
	}
}

// shutdown answers a shutdown_request; the caller stops the server after
// publishing idle.
func (s *Server) shutdown(out *outbox, m *Message) {
	var req ShutdownRequest
	if err := m.Decode(&req); err != nil {
		s.log.Warn("jupyter: bad shutdown_request content, shutting down anyway", "err", err)
	}
	s.restart.Store(req.Restart)
	s.guard("Shutdown", func() { s.h.Shutdown(req.Restart) })
	s.mu.Lock()
	if s.cellCancel != nil {
		s.cellCancel()
	}
	s.mu.Unlock()
	rep := ShutdownReply{Status: StatusOK, Restart: req.Restart}
	s.reply(out, m, "shutdown_reply", rep, nil)
	// ipykernel also broadcasts the reply, so every client learns of it.
	_ = s.pub.publish("shutdown_reply", m, rep)
}

// refuse answers a request refused for its size with an error naming the
// limit. The request's signature could not be checked (its signed frames
// did not all arrive): the reply repeats nothing of it but its header.
func (s *Server) refuse(out *outbox, m *Message) {
	if !strings.HasSuffix(m.Type(), "_request") {
		return
	}
	s.status(m, "busy")
	s.replyError(out, m, replyType(m.Type()), "MessageTooLarge", m.refused.Error())
	s.status(m, "idle")
}

func (s *Server) unknown(out *outbox, m *Message) {
	if strings.HasSuffix(m.Type(), "_request") {
		s.log.Info("jupyter: unsupported request", "msg_type", m.Type())
		s.replyError(out, m, replyType(m.Type()), "UnsupportedRequest",
			fmt.Sprintf("the Kiln kernel does not support %s", m.Type()))
		return
	}
	s.log.Info("jupyter: unexpected message dropped", "msg_type", m.Type())
}

func (s *Server) kernelInfo() KernelInfo {
	var info KernelInfo
	if err := s.guard("KernelInfo", func() { info = s.h.KernelInfo() }); err != nil {
		info = KernelInfo{Implementation: "kiln"}
	}
	info.Status = StatusOK
	info.ProtocolVersion = ProtocolVersion
	if info.HelpLinks == nil {
		info.HelpLinks = []HelpLink{}
	}
	return info
}

// handleStdin takes input_reply messages for a waiting Input call.
func (s *Server) handleStdin(m *Message, _ time.Time) {
	if m.refused != nil {
		return // logged; the protocol has no reply to give
	}
	if m.Type() != "input_reply" {
		s.log.Info("jupyter: unexpected message on stdin dropped", "msg_type", m.Type())
		return
	}
	var rep InputReply
	if err := m.Decode(&rep); err != nil {
		s.log.Warn("jupyter: bad input_reply dropped", "err", err)
		return
	}
	s.mu.Lock()
	w := s.inputWait
	// jupyter_client's KernelClient.input sends no parent header; frontends
	// that do must name the pending input_request.
	if w == nil || (m.Parent.MsgID != "" && m.Parent.MsgID != w.id) {
		s.mu.Unlock()
		s.log.Info("jupyter: input_reply without a pending input_request dropped")
		return
	}
	s.inputWait = nil
	s.mu.Unlock()
	w.ch <- rep.Value
}

// replayGuard remembers recent signatures: jupyter_client rejects a signed
// message seen before, and so does the kernel, so a captured request cannot
// be replayed.
type replayGuard struct {
	mu   sync.Mutex
	seen map[string]struct{}
	ring []string
	next int
}

func (g *replayGuard) init(n int) {
	g.seen = make(map[string]struct{}, n)
	g.ring = make([]string, n)
}

func (g *replayGuard) fresh(sig string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.seen[sig]; ok {
		return false
	}
	if old := g.ring[g.next]; old != "" {
		delete(g.seen, old)
	}
	g.ring[g.next] = sig
	g.seen[sig] = struct{}{}
	g.next = (g.next + 1) % len(g.ring)
	return true
}

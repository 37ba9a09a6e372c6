package jupyter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Channel names one of a kernel's request sockets.
type Channel string

// The channels a client sends requests on.
const (
	Shell   Channel = "shell"
	Control Channel = "control"
	Stdin   Channel = "stdin"
)

// ErrClientClosed is returned by calls on a closed KernelClient.
var ErrClientClosed = errors.New("jupyter: client closed")

// ClientOptions configures Dial. The zero value is usable.
type ClientOptions struct {
	// Logger receives dropped or unexpected messages. Default: discard.
	Logger *slog.Logger
	// Process, when set, is the kernel's process: when it exits, pending and
	// later calls fail with its *KernelDiedError and Done is closed.
	Process *KernelProcess
	// Input answers input_request messages of executions that have no
	// ExecuteHandlers.Input. Default: reply "" and log.
	Input func(req InputRequest) (string, error)
	// IdleTimeout bounds how long Execute waits for the idle status after
	// the execute_reply arrived, since IOPub may drop messages. Default 5 s.
	IdleTimeout time.Duration
	// MaxMessage is the largest message, in bytes, the client accepts from
	// the kernel; what a larger one sends beyond it is dropped as it
	// arrives and the message is logged and dropped (see Config.MaxMessage).
	// A shell or control reply refused this way ends its request with an
	// error reply of ename "MessageTooLarge". Default DefaultMaxMessage;
	// negative means no limit.
	MaxMessage int64
}

// KernelClient talks to one kernel over its connection info: requests on
// shell and control with replies matched by msg_id, IOPub output routed to
// the execution that caused it and to subscribers, stdin input requests
// answered by callbacks. Its methods are safe for concurrent use.
type KernelClient struct {
	info    ConnectionInfo
	signer  *Signer
	session string
	log     *slog.Logger
	opts    ClientOptions

	ctx                          context.Context
	cancel                       context.CancelFunc
	shell, control, stdin, iopub zmq4.Socket
	outs                         map[Channel]*outbox

	mu       sync.Mutex
	pending  map[string]chan *Message // request msg_id → its reply
	watchers map[string]func(*Message)
	inputs   map[string]func(InputRequest) (string, error)
	subs     map[int]func(*Message)
	nextSub  int
	done     chan struct{}
	err      error
}

// DialFile connects to the kernel of a connection file; see Dial.
func DialFile(ctx context.Context, path string, opts *ClientOptions) (*KernelClient, error) {
	info, err := ReadConnectionFile(path)
	if err != nil {
		return nil, err
	}
	return Dial(ctx, info, opts)
}

// Dial connects a client to the kernel described by info. It waits until
// the TCP connections are made (the kernel may still be starting) or ctx
// ends; it does not wait for the kernel to answer (see WaitForReady). It
// fails if info is invalid or the kernel cannot be reached.
func Dial(ctx context.Context, info ConnectionInfo, opts *ClientOptions) (*KernelClient, error) {
	if err := info.check(); err != nil {
		return nil, fmt.Errorf("jupyter: %w", err)
	}
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Second
	}
	if o.MaxMessage == 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	signer, err := NewSigner(info.SignatureScheme, info.Key)
	if err != nil {
		return nil, err
	}
	c := &KernelClient{
		info: info, signer: signer, session: NewID(), log: o.Logger, opts: o,
		pending: map[string]chan *Message{}, watchers: map[string]func(*Message){},
		inputs: map[string]func(InputRequest) (string, error){}, subs: map[int]func(*Message){},
		done: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// Dialling retries until the kernel listens; ctx bounds it by cancelling
	// the sockets' own context.
	stop := context.AfterFunc(ctx, c.cancel)
	defer stop()

	// jupyter_client gives the shell, control and stdin sockets one identity;
	// kernels rely on it to send input_request to the right peer.
	id := zmq4.SocketIdentity(c.session)
	zlog := slog.NewLogLogger(c.log.Handler(), slog.LevelDebug)
	sockOpts := []zmq4.Option{zmq4.WithID(id), zmq4.WithLogger(zlog), zmq4.WithTimeout(10 * time.Second),
		zmq4.WithDialerRetry(50 * time.Millisecond), zmq4.WithDialerMaxRetries(-1)}
	c.shell = zmq4.NewDealer(c.ctx, sockOpts...)
	c.control = zmq4.NewDealer(c.ctx, sockOpts...)
	c.stdin = zmq4.NewDealer(c.ctx, sockOpts...)
	c.iopub = zmq4.NewSub(c.ctx, sockOpts[1:]...)
	for _, d := range []struct {
		sock zmq4.Socket
		port int
	}{{c.shell, info.ShellPort}, {c.control, info.ControlPort}, {c.stdin, info.StdinPort}, {c.iopub, info.IOPubPort}} {
		ep, err := zmqEndpoint(info.IP, d.port, o.MaxMessage)
		if err == nil {
			err = d.sock.Dial(ep)
		}
		if err != nil {
			c.closeSockets()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("jupyter: connect to kernel at %s: %w", info.IP, ctx.Err())
			}
			return nil, fmt.Errorf("jupyter: connect to kernel: %w", err)
		}
	}
	if err := c.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		c.closeSockets()
		return nil, fmt.Errorf("jupyter: subscribe to iopub: %w", err)
	}
	if ctx.Err() != nil {
		c.closeSockets()
		return nil, fmt.Errorf("jupyter: connect to kernel: %w", ctx.Err())
	}
	c.outs = map[Channel]*outbox{
		Shell:   newOutbox("shell", c.shell, 256, c.log),
		Control: newOutbox("control", c.control, 64, c.log),
		Stdin:   newOutbox("stdin", c.stdin, 64, c.log),
	}
	go c.readLoop(c.shell, "shell", c.deliverReply)
	go c.readLoop(c.control, "control", c.deliverReply)
	go c.readLoop(c.stdin, "stdin", c.handleInputRequest)
	go c.readLoop(c.iopub, "iopub", c.deliverIOPub)
	if p := o.Process; p != nil {
		go func() {
			select {
			case <-p.Done():
				c.fail(p.Err())
			case <-c.ctx.Done():
			}
		}()
	}
	return c, nil
}

// Connection returns the connection info the client uses.
func (c *KernelClient) Connection() ConnectionInfo { return c.info }

// Session returns the client's session id.
func (c *KernelClient) Session() string { return c.session }

// Done is closed when the client is closed or its kernel process died.
func (c *KernelClient) Done() <-chan struct{} { return c.done }

// Err returns why the client stopped (ErrClientClosed or the process's
// *KernelDiedError), or nil while it works.
func (c *KernelClient) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the sockets; pending calls fail with ErrClientClosed. It does
// not stop the kernel (see Shutdown).
func (c *KernelClient) Close() error {
	c.fail(ErrClientClosed)
	return nil
}

func (c *KernelClient) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if err == nil {
		err = ErrClientClosed
	}
	c.err = err
	close(c.done)
	c.mu.Unlock()
	for _, o := range c.outs {
		o.close()
	}
	c.closeSockets()
}

func (c *KernelClient) closeSockets() {
	for _, s := range []zmq4.Socket{c.shell, c.control, c.stdin, c.iopub} {
		if s != nil {
			s.Close()
		}
	}
	c.cancel()
}

func (c *KernelClient) readLoop(sock zmq4.Socket, name string, deliver func(*Message)) {
	for {
		zm, err := sock.Recv()
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if size, ok := refusedSize(zm.Frames); ok {
			err := &TooLargeError{Size: size, Limit: c.opts.MaxMessage}
			c.log.Warn("jupyter client: message dropped", "channel", name, "err", err)
			if name == "shell" || name == "control" {
				c.failRefusedReply(zm.Frames, err)
			}
			continue
		}
		m, err := ParseMessage(zm.Frames, c.signer)
		if err != nil {
			c.log.Warn("jupyter client: message dropped", "channel", name, "err", err)
			continue
		}
		deliver(m)
	}
}

// failRefusedReply answers the request whose reply was refused for its
// size with an error reply of its own making (ename "MessageTooLarge"), so
// that the caller learns why instead of waiting for its timeout. The
// reply's parent header is read without its signature (the signed frames
// did not all arrive); it only ever ends a request of this client's that
// is waiting, which is all an unsigned parent id can do.
func (c *KernelClient) failRefusedReply(frames [][]byte, refused *TooLargeError) {
	parent, ok := refusedParent(frames)
	if !ok {
		return
	}
	c.mu.Lock()
	_, waiting := c.pending[parent.MsgID]
	c.mu.Unlock()
	if !waiting {
		return
	}
	m, err := NewMessage(c.session, replyType(parent.MsgType), &Message{Header: parent}, map[string]any{
		"status": StatusError, "ename": "MessageTooLarge",
		"evalue": "the kernel's reply was refused: " + refused.Error(), "traceback": []string{}})
	if err != nil {
		return
	}
	c.deliverReply(m)
}

func (c *KernelClient) deliverReply(m *Message) {
	c.mu.Lock()
	ch := c.pending[m.Parent.MsgID]
	delete(c.pending, m.Parent.MsgID)
	c.mu.Unlock()
	if ch == nil {
		c.log.Debug("jupyter client: unsolicited reply dropped", "msg_type", m.Type())
		return
	}
	ch <- m
}

func (c *KernelClient) deliverIOPub(m *Message) {
	c.mu.Lock()
	w := c.watchers[m.Parent.MsgID]
	subs := make([]func(*Message), 0, len(c.subs))
	for _, f := range c.subs {
		subs = append(subs, f)
	}
	c.mu.Unlock()
	if w != nil {
		w(m)
	}
	for _, f := range subs {
		f(m)
	}
}

func (c *KernelClient) handleInputRequest(m *Message) {
	if m.Type() != "input_request" {
		c.log.Debug("jupyter client: unexpected stdin message", "msg_type", m.Type())
		return
	}
	var req InputRequest
	if err := m.Decode(&req); err != nil {
		c.log.Warn("jupyter client: bad input_request", "err", err)
	}
	c.mu.Lock()
	f := c.inputs[m.Parent.MsgID]
	c.mu.Unlock()
	if f == nil {
		f = c.opts.Input
	}
	// The answer may take a person's time: never block the reader.
	go func() {
		value := ""
		if f != nil {
			v, err := f(req)
			if err != nil {
				c.log.Info("jupyter client: input handler failed; replying empty", "err", err)
			}
			value = v
		} else {
			c.log.Warn("jupyter client: input_request without an input handler; replying empty")
		}
		rep, err := NewMessage(c.session, "input_reply", m, InputReply{Value: value})
		if err != nil {
			return
		}
		rep.Identities = nil
		c.sendMessage(Stdin, rep)
	}()
}

// SubscribeIOPub calls f for every IOPub message (in arrival order, on the
// client's IOPub goroutine, so f must not block) until the returned cancel
// function is called.
func (c *KernelClient) SubscribeIOPub(f func(*Message)) (cancel func()) {
	c.mu.Lock()
	id := c.nextSub
	c.nextSub++
	c.subs[id] = f
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.subs, id)
		c.mu.Unlock()
	}
}

func (c *KernelClient) sendMessage(ch Channel, m *Message) error {
	if err := c.Err(); err != nil {
		return err
	}
	out := c.outs[ch]
	if out == nil {
		return fmt.Errorf("jupyter: cannot send on channel %q", ch)
	}
	frames, err := m.Frames(c.signer)
	if err != nil {
		return err
	}
	if !out.send(frames) {
		return fmt.Errorf("jupyter: %s channel congested, %s dropped", ch, m.Type())
	}
	return nil
}

// Send sends a request of msgType with content on ch without waiting for a
// reply, returning the message sent (its Header.MsgID identifies the reply
// and the IOPub output).
func (c *KernelClient) Send(ch Channel, msgType string, content any) (*Message, error) {
	m, err := NewMessage(c.session, msgType, nil, content)
	if err != nil {
		return nil, err
	}
	return m, c.sendMessage(ch, m)
}

// Call is a request in flight, started by SendRequest.
type Call struct {
	// Request is the message sent; Request.Header.MsgID is the parent id of
	// the reply and of the request's IOPub output.
	Request *Message
	c       *KernelClient
	wait    chan *Message
}

// Wait waits for the reply. It fails with ctx's error, ErrClientClosed, or
// the kernel process's *KernelDiedError. Call it once.
func (call *Call) Wait(ctx context.Context) (*Message, error) {
	defer call.c.forget(call.Request.Header.MsgID)
	return call.c.await(ctx, call.wait)
}

// SendRequest sends msgType with content on ch and returns at once; the
// reply is collected by the returned Call. Several requests can be in
// flight; the kernel answers shell requests in order.
func (c *KernelClient) SendRequest(ch Channel, msgType string, content any) (*Call, error) {
	m, err := NewMessage(c.session, msgType, nil, content)
	if err != nil {
		return nil, err
	}
	call := &Call{Request: m, c: c, wait: c.expect(m.Header.MsgID)}
	if err := c.sendMessage(ch, m); err != nil {
		c.forget(m.Header.MsgID)
		return nil, err
	}
	return call, nil
}

// Request sends msgType with content on ch and waits for the reply. It fails
// with ctx's error, ErrClientClosed, or the kernel process's
// *KernelDiedError.
func (c *KernelClient) Request(ctx context.Context, ch Channel, msgType string, content any) (*Message, error) {
	call, err := c.SendRequest(ch, msgType, content)
	if err != nil {
		return nil, err
	}
	return call.Wait(ctx)
}

func (c *KernelClient) expect(msgID string) chan *Message {
	ch := make(chan *Message, 1)
	c.mu.Lock()
	c.pending[msgID] = ch
	c.mu.Unlock()
	return ch
}

func (c *KernelClient) forget(msgID string) {
	c.mu.Lock()
	delete(c.pending, msgID)
	delete(c.watchers, msgID)
	delete(c.inputs, msgID)
	c.mu.Unlock()
}

func (c *KernelClient) await(ctx context.Context, wait chan *Message) (*Message, error) {
	select {
	case r := <-wait:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.Err()
	}
}

// requestInto sends a request and decodes the reply content into v; a reply
// with status "error" becomes a *ReplyError.
func (c *KernelClient) requestInto(ctx context.Context, ch Channel, msgType string, content, v any) error {
	r, err := c.Request(ctx, ch, msgType, content)
	if err != nil {
		return err
	}
	if err := replyErr(r); err != nil {
		return err
	}
	return r.Decode(v)
}

// ReplyError is a reply with status "error".
type ReplyError struct {
	MsgType string
	ErrorContent
}

// Error names the reply type and the kernel's error.
func (e *ReplyError) Error() string {
	return fmt.Sprintf("jupyter: %s: %s: %s", e.MsgType, e.Ename, e.Evalue)
}

func replyErr(r *Message) error {
	var st struct {
		Status string `json:"status"`
		ErrorContent
	}
	if err := r.Decode(&st); err != nil {
		return err
	}
	if st.Status == StatusError {
		return &ReplyError{MsgType: r.Type(), ErrorContent: st.ErrorContent}
	}
	return nil
}

// KernelInfo asks for kernel_info.
func (c *KernelClient) KernelInfo(ctx context.Context) (KernelInfo, error) {
	var info KernelInfo
	err := c.requestInto(ctx, Shell, "kernel_info_request", nil, &info)
	return info, err
}

// WaitForReady waits until the kernel answers kernel_info and its IOPub
// output reaches this client (a SUB socket misses what is published before
// its subscription arrives, so it asks again until an IOPub message comes),
// as jupyter_client does. It fails with ctx's error or when the kernel died.
func (c *KernelClient) WaitForReady(ctx context.Context) (KernelInfo, error) {
	seen := make(chan struct{}, 1)
	cancel := c.SubscribeIOPub(func(*Message) {
		select {
		case seen <- struct{}{}:
		default:
		}
	})
	defer cancel()
	for {
		attempt, stop := context.WithTimeout(ctx, time.Second)
		info, err := c.KernelInfo(attempt)
		stop()
		if err == nil {
			select {
			case <-seen:
				return info, nil
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				return KernelInfo{}, ctx.Err()
			}
		} else if ctx.Err() != nil {
			return KernelInfo{}, ctx.Err()
		} else if !errors.Is(err, context.DeadlineExceeded) {
			return KernelInfo{}, err
		}
	}
}

// ExecuteHandlers receive what an execution produces. Both are optional.
type ExecuteHandlers struct {
	// Output is called for each IOPub message of the execution (stream,
	// display_data, update_display_data, clear_output, execute_input,
	// execute_result, error, status), on the IOPub goroutine: do not block.
	Output func(*Message)
	// Input answers input_request (sent only when AllowStdin is set). It may
	// block, e.g. waiting for a person.
	Input func(req InputRequest) (string, error)
}

// Execute runs req and waits for its execute_reply and for the kernel's
// idle status after it, so all output has been delivered to h.Output when
// it returns. A cell error is not a Go error: it is in the reply (Status
// "error", ErrorContent); an aborted cell has Status "aborted". It fails
// with ctx's error (the cell keeps running; see Interrupt), ErrClientClosed
// or *KernelDiedError.
func (c *KernelClient) Execute(ctx context.Context, req ExecuteRequest, h *ExecuteHandlers) (ExecuteReply, error) {
	if h == nil {
		h = &ExecuteHandlers{}
	}
	if req.UserExpressions == nil {
		req.UserExpressions = map[string]string{}
	}
	m, err := NewMessage(c.session, "execute_request", nil, req)
	if err != nil {
		return ExecuteReply{}, err
	}
	id := m.Header.MsgID
	idle := make(chan struct{})
	activity := make(chan struct{}, 1)
	var once sync.Once
	c.mu.Lock()
	c.watchers[id] = func(o *Message) {
		if h.Output != nil {
			h.Output(o)
		}
		select {
		case activity <- struct{}{}:
		default:
		}
		if o.Type() == "status" {
			var st KernelStatus
			if o.Decode(&st) == nil && st.ExecutionState == "idle" {
				once.Do(func() { close(idle) })
			}
		}
	}
	if h.Input != nil {
		c.inputs[id] = h.Input
	}
	c.mu.Unlock()
	wait := c.expect(id)
	defer c.forget(id)
	if err := c.sendMessage(Shell, m); err != nil {
		return ExecuteReply{}, err
	}
	r, err := c.await(ctx, wait)
	if err != nil {
		return ExecuteReply{}, err
	}
	var rep ExecuteReply
	if err := r.Decode(&rep); err != nil {
		return ExecuteReply{}, err
	}
	timer := time.NewTimer(c.opts.IdleTimeout)
	defer timer.Stop()
	for {
		select {
		case <-idle:
			return rep, nil
		case <-activity:
			timer.Reset(c.opts.IdleTimeout)
		case <-timer.C:
			c.log.Warn("jupyter client: no idle status after execute_reply; output may be incomplete")
			return rep, nil
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-c.done:
			return rep, c.Err()
		}
	}
}

// Complete asks for completions at cursor (a code-point offset).
func (c *KernelClient) Complete(ctx context.Context, code string, cursor int) (CompleteReply, error) {
	var r CompleteReply
	err := c.requestInto(ctx, Shell, "complete_request", CompleteRequest{Code: code, CursorPos: cursor}, &r)
	return r, err
}

// Inspect asks for documentation at cursor (a code-point offset).
func (c *KernelClient) Inspect(ctx context.Context, code string, cursor, detail int) (InspectReply, error) {
	var r InspectReply
	err := c.requestInto(ctx, Shell, "inspect_request", InspectRequest{Code: code, CursorPos: cursor, DetailLevel: detail}, &r)
	return r, err
}

// IsComplete asks whether code is ready to run.
func (c *KernelClient) IsComplete(ctx context.Context, code string) (IsCompleteReply, error) {
	var r IsCompleteReply
	err := c.requestInto(ctx, Shell, "is_complete_request", IsCompleteRequest{Code: code}, &r)
	return r, err
}

// History asks for execution history.
func (c *KernelClient) History(ctx context.Context, req HistoryRequest) (HistoryReply, error) {
	var r HistoryReply
	err := c.requestInto(ctx, Shell, "history_request", req, &r)
	return r, err
}

// CommInfo lists the kernel's open comms (of target, or all for "").
func (c *KernelClient) CommInfo(ctx context.Context, target string) (CommInfoReply, error) {
	var r CommInfoReply
	err := c.requestInto(ctx, Shell, "comm_info_request", CommInfoRequest{TargetName: target}, &r)
	return r, err
}

// Interrupt sends interrupt_request on the control channel and waits for the
// reply (for kernels with interrupt_mode "message"; KernelProcess.Interrupt
// sends SIGINT instead).
func (c *KernelClient) Interrupt(ctx context.Context) error {
	var r struct{}
	return c.requestInto(ctx, Control, "interrupt_request", nil, &r)
}

// Shutdown asks the kernel to exit (shutdown_request on control) and waits
// for the reply. With restart the kernel is told a new one will follow;
// KernelProcess.Restart starts the new one.
func (c *KernelClient) Shutdown(ctx context.Context, restart bool) error {
	var r ShutdownReply
	return c.requestInto(ctx, Control, "shutdown_request", ShutdownRequest{Restart: restart}, &r)
}

// Ping checks the kernel's heartbeat: it sends a ping on the hb socket and
// waits for the echo. It fails if none comes before ctx ends.
func (c *KernelClient) Ping(ctx context.Context) error {
	sctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	req := zmq4.NewReq(sctx, zmq4.WithLogger(slog.NewLogLogger(c.log.Handler(), slog.LevelDebug)),
		zmq4.WithDialerRetry(50*time.Millisecond), zmq4.WithDialerMaxRetries(-1))
	defer req.Close()
	errc := make(chan error, 1)
	go func() {
		ep, err := zmqEndpoint(c.info.IP, c.info.HBPort, c.opts.MaxMessage)
		if err == nil {
			err = req.Dial(ep)
		}
		if err != nil {
			errc <- err
			return
		}
		ping := []byte("ping " + NewID())
		if err := req.Send(zmq4.NewMsg(ping)); err != nil {
			errc <- err
			return
		}
		m, err := req.Recv()
		if err == nil && (len(m.Frames) == 0 || string(m.Frames[len(m.Frames)-1]) != string(ping)) {
			err = errors.New("jupyter: heartbeat echo does not match")
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("jupyter: heartbeat: %w", ctx.Err())
		}
		if err != nil {
			return fmt.Errorf("jupyter: heartbeat: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("jupyter: heartbeat: %w", ctx.Err())
	}
}

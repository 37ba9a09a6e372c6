package jupyter

import (
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// zmq4 writes to a TCP connection without a deadline, holding a lock shared
// by all peers of the socket: one peer that stops reading (a laptop that
// went to sleep, a frozen client) would stall every later send to every
// peer until TCP gives up, many minutes later. The sockets here therefore
// use their own transport, plain TCP whose writes fail when a peer takes no
// data for stallTimeout; zmq4 then drops that connection and carries on.
// Its reads enforce the message size limit (see limit.go); there is one
// transport per limit, named transportName and the limit.
const transportName = "kiln-tcp"

// stallTimeout is how long a write may make no progress (nanoseconds).
var stallTimeout atomic.Int64

func init() { stallTimeout.Store(int64(10 * time.Second)) }

// transports holds the names of the transports registered, by limit.
var transports struct {
	mu    sync.Mutex
	names map[int64]string
}

// zmqEndpoint is the zmq4 endpoint for port on ip, over stallTransport
// with messages limited to maxMessage bytes (no limit when <= 0).
func zmqEndpoint(ip string, port int, maxMessage int64) (string, error) {
	maxMessage = max(maxMessage, 0)
	transports.mu.Lock()
	defer transports.mu.Unlock()
	name, ok := transports.names[maxMessage]
	if !ok {
		name = transportName + "-" + strconv.FormatInt(maxMessage, 10)
		if err := zmq4.RegisterTransport(name, stallTransport{maxMessage: maxMessage}); err != nil {
			return "", err
		}
		if transports.names == nil {
			transports.names = map[int64]string{}
		}
		transports.names[maxMessage] = name
	}
	return name + "://" + net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

// stallTransport is TCP through stallConn; maxMessage limits what is read
// (none when 0).
type stallTransport struct{ maxMessage int64 }

func (t stallTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return newStallConn(c, t.maxMessage), nil
}

func (t stallTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return stallListener{l, t.maxMessage}, nil
}

// Addr maps Jupyter's "*" (all interfaces) and port "*" the way zmq4's tcp
// transport does.
func (stallTransport) Addr(ep string) (string, error) {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return "", err
	}
	if port == "*" || port == "" {
		port = "0"
	}
	if host == "*" || host == "" {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, port), nil
}

type stallListener struct {
	net.Listener
	maxMessage int64
}

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newStallConn(c, l.maxMessage), nil
}

// stallConn writes in pieces, each with a fresh deadline: a slow peer that
// keeps reading is never cut off, one that reads nothing is.
//
// It also gathers each message's writes into one. zmq4 writes every frame
// as two writes, its header and its body: 14 system calls (and, with
// TCP_NODELAY, 14 TCP segments) for one IOPub message, some 56 for a cell
// that shows nothing, about half of the kernel's CPU time per cell. stallConn
// follows ZMTP 3's framing (a 64-byte greeting, then frames of flags, size
// and body, where a frame without the MORE flag, or a command, ends a
// message) and holds what zmq4 writes until a message is complete. What
// reaches coalesceLimit bytes is written at once (a large message goes out
// as it comes), and a safety timer writes out anything held longer than
// coalesceDelay, so a framing it did not follow only costs time.
//
// Its reads go through a limitReader, which enforces the message size
// limit (see limit.go).
type stallConn struct {
	net.Conn
	rd *limitReader

	wmu   sync.Mutex
	fr    framer
	held  []byte
	err   error       // a failed write of held bytes, reported by the next Write
	timer *time.Timer // flushes held bytes if the message's end does not come
}

const coalesceLimit = 64 << 10

// coalesceDelay is a variable for the tests, which write a message in
// parts and must not see the timer flush between them on a busy machine.
var coalesceDelay = 2 * time.Millisecond

func newStallConn(c net.Conn, maxMessage int64) *stallConn {
	return &stallConn{Conn: c, rd: newLimitReader(c, maxMessage), fr: framer{greeting: zmtpGreeting}}
}

// Read reads the stream, less what the size limit refuses.
func (c *stallConn) Read(p []byte) (int, error) { return c.rd.Read(p) }

func (c *stallConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	end := c.fr.scan(p)
	if len(c.held)+len(p) >= coalesceLimit {
		end = len(p) // too big to hold: everything goes now
	}
	if end < 0 {
		c.hold(p)
		return len(p), nil
	}
	rest := p[:end]
	if len(c.held) > 0 {
		if len(c.held)+len(rest) <= coalesceLimit {
			c.held, rest = append(c.held, rest...), nil
		}
		if err := c.flushHeld(); err != nil {
			return 0, err
		}
	}
	if len(rest) > 0 {
		if n, err := c.write(rest); err != nil {
			return n, err
		}
	}
	if end < len(p) {
		c.hold(p[end:])
	}
	return len(p), nil
}

// hold keeps p for the next write, arming the safety timer.
func (c *stallConn) hold(p []byte) {
	if len(c.held) == 0 {
		if c.timer == nil {
			c.timer = time.AfterFunc(coalesceDelay, c.timedFlush)
		} else {
			c.timer.Reset(coalesceDelay)
		}
	}
	c.held = append(c.held, p...)
}

func (c *stallConn) timedFlush() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.held) > 0 && c.err == nil {
		c.err = c.flushHeld()
	}
}

// flushHeld writes the held bytes; the caller holds wmu.
func (c *stallConn) flushHeld() error {
	if c.timer != nil {
		c.timer.Stop()
	}
	_, err := c.write(c.held)
	if cap(c.held) > coalesceLimit {
		c.held = nil // do not keep a large buffer for the connection's life
	} else {
		c.held = c.held[:0]
	}
	return err
}

// write writes p in pieces with a fresh deadline each.
func (c *stallConn) write(p []byte) (int, error) {
	const piece = 64 << 10
	total := 0
	for len(p) > 0 {
		n := min(len(p), piece)
		if err := c.Conn.SetWriteDeadline(time.Now().Add(time.Duration(stallTimeout.Load()))); err != nil {
			return total, err
		}
		w, err := c.Conn.Write(p[:n])
		total += w
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				// zmq4 keeps a connection after a timeout; this one is
				// dead (and its stream cut mid-frame), so close it and
				// report an error zmq4 treats as fatal.
				c.Conn.Close()
				return total, stalledError{c.RemoteAddr()}
			}
			return total, err
		}
		p = p[n:]
	}
	return total, nil
}

// ZMTP 3 framing, as far as stallConn needs it.
const (
	zmtpGreeting = 64 // bytes of the greeting each side sends first
	zmtpMore     = 0x1
	zmtpLong     = 0x2
	zmtpCommand  = 0x4
)

// framer follows the frames of a ZMTP byte stream.
type framer struct {
	greeting int     // greeting bytes still to come
	hdr      [9]byte // the current frame's header so far
	hdrLen   int
	body     uint64 // body bytes of the current frame still to come
	inBody   bool
	ends     bool // the current frame ends a message
}

// scan consumes p and returns the offset just after the last message end in
// p (the greeting counts as one), or -1 if p ends none.
func (f *framer) scan(p []byte) int {
	end := -1
	for i := 0; i < len(p); {
		switch {
		case f.greeting > 0:
			n := min(f.greeting, len(p)-i)
			f.greeting -= n
			i += n
			if f.greeting == 0 {
				end = i
			}
		case f.inBody:
			n := int(min(f.body, uint64(len(p)-i)))
			f.body -= uint64(n)
			i += n
		default:
			f.hdr[f.hdrLen] = p[i]
			f.hdrLen++
			i++
			need := 2
			if f.hdr[0]&zmtpLong != 0 {
				need = 9
			}
			if f.hdrLen < need {
				continue
			}
			if need == 9 {
				f.body = binary.BigEndian.Uint64(f.hdr[1:9])
			} else {
				f.body = uint64(f.hdr[1])
			}
			f.ends = f.hdr[0]&zmtpCommand != 0 || f.hdr[0]&zmtpMore == 0
			f.hdrLen = 0
			f.inBody = true
		}
		if f.inBody && f.body == 0 {
			f.inBody = false
			if f.ends {
				end = i
			}
		}
	}
	return end
}

// stalledError reports a peer that took no data for stallTimeout. It is a
// net.Error that is not a timeout, so zmq4 closes the connection.
type stalledError struct{ addr net.Addr }

func (e stalledError) Error() string {
	return "jupyter: peer " + e.addr.String() + " stopped reading; connection dropped"
}
func (stalledError) Timeout() bool   { return false }
func (stalledError) Temporary() bool { return false }

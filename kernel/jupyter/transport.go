package jupyter

import (
	"context"
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
const transportName = "kiln-tcp"

// stallTimeout is how long a write may make no progress (nanoseconds).
var stallTimeout atomic.Int64

func init() { stallTimeout.Store(int64(10 * time.Second)) }

var registerTransport = sync.OnceValue(func() error {
	return zmq4.RegisterTransport(transportName, stallTransport{})
})

// zmqEndpoint is the zmq4 endpoint for port on ip, over stallTransport.
func zmqEndpoint(ip string, port int) (string, error) {
	if err := registerTransport(); err != nil {
		return "", err
	}
	return transportName + "://" + net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

type stallTransport struct{}

func (stallTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c}, nil
}

func (stallTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return stallListener{l}, nil
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

type stallListener struct{ net.Listener }

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c}, nil
}

// stallConn writes in pieces, each with a fresh deadline: a slow peer that
// keeps reading is never cut off, one that reads nothing is.
type stallConn struct{ net.Conn }

func (c *stallConn) Write(p []byte) (int, error) {
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

// stalledError reports a peer that took no data for stallTimeout. It is a
// net.Error that is not a timeout, so zmq4 closes the connection.
type stalledError struct{ addr net.Addr }

func (e stalledError) Error() string {
	return "jupyter: peer " + e.addr.String() + " stopped reading; connection dropped"
}
func (stalledError) Timeout() bool   { return false }
func (stalledError) Temporary() bool { return false }

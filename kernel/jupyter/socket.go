package jupyter

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// outbox sends messages on a zmq4 socket from its own goroutine, so that the
// kernel never blocks on a peer: zmq4 writes straight to the TCP connection
// (ROUTER) or without bound into a queue (PUB), and a peer that stopped
// reading would otherwise stall the caller for good. The queue is bounded;
// when it is full for longer than enqueueWait the message is dropped and
// logged.
type outbox struct {
	name    string
	sock    zmq4.Socket
	log     *slog.Logger
	q       chan [][]byte
	pending atomic.Int64
	dropped atomic.Int64
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// enqueueWait is how long send waits for room in a full queue.
const enqueueWait = 100 * time.Millisecond

func newOutbox(name string, sock zmq4.Socket, size int, log *slog.Logger) *outbox {
	o := &outbox{name: name, sock: sock, log: log, q: make(chan [][]byte, size),
		stop: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

func (o *outbox) run() {
	defer close(o.done)
	for {
		select {
		case <-o.stop:
			return
		case frames := <-o.q:
			if err := o.sock.Send(zmq4.NewMsgFrom(frames...)); err != nil {
				o.log.Warn("jupyter: send failed", "channel", o.name, "err", err)
			}
			o.pending.Add(-1)
		}
	}
}

// send queues frames; it reports false if they were dropped.
func (o *outbox) send(frames [][]byte) bool {
	o.pending.Add(1)
	select {
	case o.q <- frames:
		return true
	default:
	}
	t := time.NewTimer(enqueueWait)
	defer t.Stop()
	select {
	case o.q <- frames:
		return true
	case <-o.stop:
	case <-t.C:
	}
	o.pending.Add(-1)
	if n := o.dropped.Add(1); n == 1 || n%1000 == 0 {
		o.log.Warn("jupyter: peer not reading, message dropped", "channel", o.name, "dropped", n)
	}
	return false
}

// drain waits until everything queued has been handed to the socket, or
// until ctx ends.
func (o *outbox) drain(ctx context.Context) {
	for o.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-o.done:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// close stops the sending goroutine; the socket is closed by its owner.
func (o *outbox) close() {
	o.once.Do(func() { close(o.stop) })
}

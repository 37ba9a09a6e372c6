package jupyter

import (
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"
)

// publisher sends IOPub messages in order and coalesces stream output.
//
// Stream writes are buffered and published at most every interval (a timer
// armed by the first buffered write), before any other IOPub message (so the
// order of output is kept), and on explicit flushes (end of cell, before an
// input request, before idle). The buffer holds at most maxPending bytes: a
// writer that fills it flushes at once if the last flush is interval old,
// and otherwise sleeps until it is. Stream output is thereby limited to
// about maxPending bytes and a handful of messages per interval, whatever
// the cell does, and memory stays bounded even though zmq4's PUB socket
// queues without limit.
type publisher struct {
	session  string
	signer   *Signer
	out      *outbox
	log      *slog.Logger
	interval time.Duration

	mu           sync.Mutex
	maxPending   int
	pending      []streamChunk
	pendingBytes int
	timer        *time.Timer
	lastFlush    time.Time
	sent         int // messages handed to the outbox, for tests
}

type streamChunk struct {
	parent *Message
	name   string
	text   []byte
}

func newPublisher(session string, signer *Signer, out *outbox, interval time.Duration, maxPending int, log *slog.Logger) *publisher {
	return &publisher{session: session, signer: signer, out: out, log: log, interval: interval, maxPending: maxPending}
}

// publish flushes buffered streams and sends one IOPub message.
func (p *publisher) publish(msgType string, parent *Message, content any) error {
	m, err := NewMessage(p.session, msgType, parent, content)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked(true)
	p.sendLocked(m)
	return nil
}

// sendLocked signs and queues m. IOPub messages carry a topic frame instead
// of the request's routing identities.
func (p *publisher) sendLocked(m *Message) {
	m.Identities = [][]byte{[]byte("kernel." + p.session + "." + m.Header.MsgType)}
	frames, err := m.Frames(p.signer)
	if err != nil {
		p.log.Error("jupyter: cannot serialise iopub message", "msg_type", m.Header.MsgType, "err", err)
		return
	}
	p.sent++
	p.out.send(frames)
}

// write buffers stream text for parent.
func (p *publisher) write(parent *Message, name string, b []byte) {
	for len(b) > 0 {
		p.mu.Lock()
		room := p.maxPending - p.pendingBytes
		if room <= 0 {
			if wait := p.interval - time.Since(p.lastFlush); wait > 0 {
				p.mu.Unlock()
				time.Sleep(wait)
				continue
			}
			p.flushLocked(false)
			p.mu.Unlock()
			continue
		}
		n := min(room, len(b))
		if k := len(p.pending) - 1; k >= 0 && p.pending[k].parent == parent && p.pending[k].name == name {
			p.pending[k].text = append(p.pending[k].text, b[:n]...)
		} else {
			p.pending = append(p.pending, streamChunk{parent: parent, name: name, text: append([]byte(nil), b[:n]...)})
		}
		p.pendingBytes += n
		b = b[n:]
		if p.timer == nil {
			p.timer = time.AfterFunc(p.interval, p.timedFlush)
		}
		p.mu.Unlock()
	}
}

func (p *publisher) timedFlush() {
	p.mu.Lock()
	p.timer = nil
	p.flushLocked(false)
	p.mu.Unlock()
}

// flush publishes all buffered stream text.
func (p *publisher) flush() {
	p.mu.Lock()
	p.flushLocked(true)
	p.mu.Unlock()
}

// flushLocked publishes the buffered chunks. Unless all is set, an
// incomplete UTF-8 sequence at the end of the last chunk stays buffered
// (output read from a pipe can split a character between two reads).
func (p *publisher) flushLocked(all bool) {
	p.lastFlush = time.Now()
	if len(p.pending) == 0 {
		return
	}
	var keep []byte
	last := &p.pending[len(p.pending)-1]
	if !all {
		cut := incompleteSuffix(last.text)
		keep = append([]byte(nil), last.text[len(last.text)-cut:]...)
		last.text = last.text[:len(last.text)-cut]
	}
	for _, c := range p.pending {
		if len(c.text) == 0 {
			continue
		}
		m, err := NewMessage(p.session, "stream", c.parent, Stream{Name: c.name, Text: string(c.text)})
		if err != nil {
			continue
		}
		p.sendLocked(m)
	}
	p.pending = nil
	p.pendingBytes = 0
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if len(keep) > 0 {
		// Kept until more text arrives (which arms the timer again) or the
		// next full flush (end of cell, other output).
		p.pending = []streamChunk{{parent: last.parent, name: last.name, text: keep}}
		p.pendingBytes = len(keep)
	}
}

// incompleteSuffix returns how many trailing bytes of b start a UTF-8
// sequence that is not complete yet (0 to 3).
func incompleteSuffix(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0 // ASCII: nothing pending
		}
		if c >= 0xC0 { // a leading byte: complete if it needs no more than i bytes
			need := 0
			switch {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			default:
				need = 2
			}
			if need > i && utf8.RuneStart(c) {
				return i
			}
			return 0
		}
	}
	return 0
}

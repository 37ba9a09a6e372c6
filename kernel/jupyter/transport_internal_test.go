package jupyter

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"
)

// zmtpFrame encodes one ZMTP 3 frame the way zmq4 writes it: header, body.
func zmtpFrame(flags byte, body []byte) (hdr, b []byte) {
	if len(body) > 255 {
		hdr = make([]byte, 9)
		hdr[0] = flags | zmtpLong
		binary.BigEndian.PutUint64(hdr[1:], uint64(len(body)))
	} else {
		hdr = []byte{flags, byte(len(body))}
	}
	return hdr, body
}

// zmtpWrites returns the writes zmq4 makes for a message of frames.
func zmtpWrites(frames ...[]byte) [][]byte {
	var w [][]byte
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags = zmtpMore
		}
		h, b := zmtpFrame(flags, f)
		w = append(w, h, b)
	}
	return w
}

// connStream is a connection's writes, from the greeting on, and the offsets
// where messages end.
func connStream() (writes [][]byte, ends []int) {
	add := func(ws ...[]byte) {
		writes = append(writes, ws...)
		n := 0
		for _, w := range writes {
			n += len(w)
		}
		ends = append(ends, n)
	}
	add(bytes.Repeat([]byte{0xff}, zmtpGreeting))
	h, b := zmtpFrame(zmtpCommand, []byte("\x05READYsome metadata"))
	add(h, b)
	add(zmtpWrites([]byte("topic"), []byte("<IDS|MSG>"), nil, []byte("{}"), bytes.Repeat([]byte("x"), 300), []byte("{}"))...)
	add(zmtpWrites([]byte("single"))...)
	add(zmtpWrites(nil)...)
	return writes, ends
}

func TestFramerFindsMessageEnds(t *testing.T) {
	writes, ends := connStream()
	var all []byte
	for _, w := range writes {
		all = append(all, w...)
	}
	for _, chunk := range []int{1, 2, 3, 7, 64, 100, len(all)} {
		var f framer
		f.greeting = zmtpGreeting
		var got, want []int
		for off := 0; off < len(all); off += chunk {
			p := all[off:min(off+chunk, len(all))]
			if e := f.scan(p); e >= 0 {
				got = append(got, off+e)
			}
			// scan reports the last message end in p
			last := -1
			for _, e := range ends {
				if e > off && e <= off+len(p) {
					last = e
				}
			}
			if last >= 0 {
				want = append(want, last)
			}
		}
		if !equalInts(got, want) {
			t.Errorf("chunks of %d: ends %v, want %v", chunk, got, want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// recordConn is a net.Conn that records writes.
type recordConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (c *recordConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, append([]byte(nil), p...))
	return len(p), nil
}

func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }

func (c *recordConn) taken() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

func TestStallConnWritesAMessageAtOnce(t *testing.T) {
	// The safety timer must not flush a message's first parts while the
	// test is descheduled between its writes.
	old := coalesceDelay
	coalesceDelay = time.Hour
	defer func() { coalesceDelay = old }()
	rc := &recordConn{}
	c := newStallConn(rc, 0)
	writes, ends := connStream()
	for _, w := range writes {
		if n, err := c.Write(w); n != len(w) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	got := rc.taken()
	if len(got) != len(ends) {
		t.Fatalf("%d writes reached the connection, want one per message (%d)", len(got), len(ends))
	}
	prev := 0
	for i, w := range got {
		if len(w) != ends[i]-prev {
			t.Errorf("write %d has %d bytes, want %d", i, len(w), ends[i]-prev)
		}
		prev = ends[i]
	}
}

func TestStallConnPassesLargeMessagesThrough(t *testing.T) {
	rc := &recordConn{}
	c := newStallConn(rc, 0)
	c.Write(make([]byte, zmtpGreeting))
	rc.taken()
	big := bytes.Repeat([]byte("y"), 3*coalesceLimit)
	ws := zmtpWrites([]byte("topic"), big, []byte("{}"))
	for _, w := range ws {
		c.Write(w)
	}
	got := rc.taken()
	total := 0
	for _, w := range got {
		total += len(w)
	}
	want := 0
	for _, w := range ws {
		want += len(w)
	}
	if total != want {
		t.Fatalf("%d bytes written, want %d", total, want)
	}
	// the big body goes out as it comes, not copied into the held buffer
	if c.held != nil && cap(c.held) > coalesceLimit {
		t.Errorf("held buffer grew to %d bytes", cap(c.held))
	}
}

func TestStallConnFlushesAnUnfinishedMessage(t *testing.T) {
	rc := &recordConn{}
	c := newStallConn(rc, 0)
	c.Write(make([]byte, zmtpGreeting))
	rc.taken()
	h, _ := zmtpFrame(zmtpMore, []byte("abc"))
	c.Write(h) // a frame with MORE whose rest never comes
	c.Write([]byte("abc"))
	if w := rc.taken(); len(w) != 0 {
		t.Fatalf("written before the message ended: %q", w)
	}
	deadline := time.Now().Add(time.Second)
	for {
		if w := rc.taken(); len(w) > 0 {
			if !bytes.Equal(bytes.Join(w, nil), append(h, "abc"...)) {
				t.Errorf("flushed %q", w)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("held bytes were never written")
		}
		time.Sleep(time.Millisecond)
	}
}

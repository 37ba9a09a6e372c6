package jupyter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// DefaultMaxMessage is the default limit on the size of one message (all
// its frames together) that the kernel's and the client's sockets accept:
// 64 MiB.
const DefaultMaxMessage = 64 << 20

// The size limit.
//
// zmq4 has no option to limit what it receives: it reads a frame's header
// and allocates the whole body at once, so a peer announcing a 300 MB frame
// makes the process hold 300 MB before anything here could see the
// message. The limit is therefore enforced below zmq4, in the connection
// it reads from (stallConn, see transport.go), which follows ZMTP's
// framing: a frame whose body would take its message past the limit never
// reaches zmq4. Its header is rewritten, its body dropped as it arrives
// (never buffered), and a short stand-in frame takes its place, naming the
// size that was refused. The message then arrives, small, with the
// stand-in among its frames, so that the server can log the refusal and
// answer a request with an error, and the connection goes on. A command
// frame (ZMTP's own handshake and pings, all tiny) past the limit ends the
// connection instead.

// refusedPrefix starts the stand-in for a refused frame. It holds a random
// token of this process, so that a peer cannot pass a frame of its own off
// as a stand-in; the refused size follows it in decimal.
var refusedPrefix = []byte("\x00kiln: frame refused " + NewID() + " ")

// refusedFrame returns the stand-in for a refused frame of size bytes.
func refusedFrame(size uint64) []byte {
	return strconv.AppendUint(append([]byte(nil), refusedPrefix...), size, 10)
}

// refusedSize reports whether frames hold a stand-in for a refused frame,
// and the largest size refused.
func refusedSize(frames [][]byte) (size uint64, ok bool) {
	for _, f := range frames {
		if !bytes.HasPrefix(f, refusedPrefix) {
			continue
		}
		n, err := strconv.ParseUint(string(f[len(refusedPrefix):]), 10, 64)
		if err == nil {
			size, ok = max(size, n), true
		}
	}
	return size, ok
}

// parseRefused reads the routing identities and the header of a message
// that has a refused frame, without checking its signature (the signed
// frames did not all arrive). It returns nil when the header itself was
// refused or is not a valid header.
func parseRefused(frames [][]byte) *Message {
	d := -1
	for i, f := range frames {
		if string(f) == delimiter {
			d = i
			break
		}
	}
	if d < 0 || len(frames) < d+3 {
		return nil
	}
	header := frames[d+2]
	m := &Message{Metadata: map[string]any{}}
	if unmarshalObject("header", header, &m.Header) != nil || m.Header.MsgType == "" || m.Header.MsgID == "" {
		return nil
	}
	m.rawHeader = append([]byte(nil), header...)
	if d > 0 {
		m.Identities = cloneFrames(frames[:d])
	}
	return m
}

// refusedParent reads the parent header of a message that has a refused
// frame, without checking its signature; ok is false when the parent
// header itself was refused or is not a valid header.
func refusedParent(frames [][]byte) (parent Header, ok bool) {
	d := slices.IndexFunc(frames, func(f []byte) bool { return string(f) == delimiter })
	if d < 0 || len(frames) < d+4 {
		return Header{}, false
	}
	if unmarshalObject("parent_header", frames[d+3], &parent) != nil || parent.MsgID == "" || parent.MsgType == "" {
		return Header{}, false
	}
	return parent, true
}

// TooLargeError is the error of a message refused for its size.
type TooLargeError struct {
	Size  uint64 // the size of the frame refused, in bytes
	Limit int64  // the limit, in bytes
}

// Error names the size refused and the limit.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("jupyter: message refused: a frame of %d bytes takes it past the limit of %d bytes (%s)",
		e.Size, e.Limit, humanBytes(e.Limit))
}

// humanBytes writes n in the largest binary unit that divides it.
func humanBytes(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// limitReader passes a ZMTP 3 byte stream through, replacing each frame
// that takes its message past max bytes by a stand-in (see above).
type limitReader struct {
	r   io.Reader
	max int64 // no limit when <= 0

	buf      []byte // read from r, not yet passed on: buf[pos:end]
	pos, end int
	rerr     error  // r's error, reported once buf is empty
	out      []byte // rewritten header and stand-in, waiting for the reader

	greeting int // greeting bytes still to pass
	hdr      [9]byte
	hdrLen   int
	body     uint64 // body bytes of the current frame still to pass or drop
	drop     bool   // the current frame's body is dropped
	ends     bool   // the current frame ends its message
	msg      uint64 // bytes of the current message passed so far
}

func newLimitReader(r io.Reader, max int64) *limitReader {
	return &limitReader{r: r, max: max, greeting: zmtpGreeting}
}

func (l *limitReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(l.out) > 0 {
			n := copy(p, l.out)
			l.out = l.out[n:]
			return n, nil
		}
		if l.pos == l.end {
			if l.rerr != nil {
				return 0, l.rerr
			}
			if l.greeting == 0 && l.body > 0 && !l.drop {
				// The body of a frame: straight into p.
				n, err := l.r.Read(p[:min(uint64(len(p)), l.body)])
				l.passed(uint64(n))
				return n, err
			}
			if l.buf == nil {
				l.buf = make([]byte, 32<<10)
			}
			n, err := l.r.Read(l.buf)
			l.pos, l.end, l.rerr = 0, n, err
			continue
		}
		in := l.buf[l.pos:l.end]
		switch {
		case l.greeting > 0:
			n := copy(p, in[:min(len(in), l.greeting)])
			l.greeting -= n
			l.pos += n
			return n, nil
		case l.body > 0 && !l.drop:
			n := copy(p, in[:min(uint64(len(in)), l.body)])
			l.pos += n
			l.passed(uint64(n))
			return n, nil
		case l.body > 0:
			n := min(uint64(len(in)), l.body)
			l.pos += int(n)
			l.passed(n)
		default:
			if err := l.header(in[0]); err != nil {
				l.pos, l.end, l.rerr = 0, 0, err
				return 0, err
			}
			l.pos++
		}
	}
}

// header takes the next byte of a frame header; once the header is whole
// it decides whether the frame passes.
func (l *limitReader) header(b byte) error {
	l.hdr[l.hdrLen] = b
	l.hdrLen++
	flags := l.hdr[0]
	need := 2
	if flags&zmtpLong != 0 {
		need = 9
	}
	if l.hdrLen < need {
		return nil
	}
	size := uint64(l.hdr[1])
	if need == 9 {
		size = binary.BigEndian.Uint64(l.hdr[1:9])
	}
	hdr := l.hdr[:l.hdrLen]
	l.hdrLen = 0
	command := flags&zmtpCommand != 0
	l.ends = command || flags&zmtpMore == 0
	l.body, l.drop = size, false
	if l.max > 0 && (size > uint64(l.max) || l.msg+size > uint64(l.max)) {
		if command {
			return &TooLargeError{Size: size, Limit: l.max}
		}
		// Refused: a short frame stands in, the body is dropped.
		stand := refusedFrame(size)
		l.out = append(append(l.out[:0], flags&^zmtpLong, byte(len(stand))), stand...)
		l.drop = true
	} else {
		l.out = append(l.out[:0], hdr...)
		l.msg += size
	}
	if size == 0 {
		l.passed(0)
	}
	return nil
}

// passed records n body bytes passed or dropped.
func (l *limitReader) passed(n uint64) {
	l.body -= n
	if l.body == 0 && l.ends {
		l.msg = 0
	}
}

package jupyter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

// zmtpMessage is the ZMTP bytes of one message of frames.
func zmtpMessage(frames ...[]byte) []byte {
	var b []byte
	for _, w := range zmtpWrites(frames...) {
		b = append(b, w...)
	}
	return b
}

// readFrames parses a ZMTP stream after its greeting into messages.
func readFrames(t *testing.T, r io.Reader) [][][]byte {
	t.Helper()
	greeting := make([]byte, zmtpGreeting)
	if _, err := io.ReadFull(r, greeting); err != nil {
		t.Fatalf("greeting: %v", err)
	}
	var msgs [][][]byte
	var cur [][]byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err == io.EOF {
			return msgs
		} else if err != nil {
			t.Fatalf("header: %v", err)
		}
		size := uint64(h[1])
		if h[0]&zmtpLong != 0 {
			var l [8]byte
			l[0] = h[1]
			if _, err := io.ReadFull(r, l[1:]); err != nil {
				t.Fatalf("long header: %v", err)
			}
			size = binary.BigEndian.Uint64(l[:])
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatalf("body: %v", err)
		}
		cur = append(cur, body)
		if h[0]&zmtpMore == 0 {
			msgs, cur = append(msgs, cur), nil
		}
	}
}

func TestLimitReaderRefusesFramesPastTheLimit(t *testing.T) {
	small, big := bytes.Repeat([]byte("s"), 300), bytes.Repeat([]byte("b"), 1500)
	stream := append(make([]byte, zmtpGreeting), zmtpMessage([]byte("id"), small)...)
	stream = append(stream, zmtpMessage([]byte("id"), big, small)...) // big frame refused
	stream = append(stream, zmtpMessage(small, small, small, small)...)
	stream = append(stream, zmtpMessage(small)...)
	const limit = 1000
	for _, tc := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"whole reads", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := newLimitReader(tc.r(bytes.NewReader(stream)), limit)
			msgs := readFrames(t, lr)
			want := [][][]byte{
				{[]byte("id"), small},
				{[]byte("id"), refusedFrame(1500), small},
				// 300+300+300 pass; the fourth takes the message past 1000.
				{small, small, small, refusedFrame(300)},
				{small}, // the next message starts afresh
			}
			if len(msgs) != len(want) {
				t.Fatalf("got %d messages, want %d", len(msgs), len(want))
			}
			for i := range want {
				if len(msgs[i]) != len(want[i]) {
					t.Fatalf("message %d: %d frames, want %d", i, len(msgs[i]), len(want[i]))
				}
				for j := range want[i] {
					if !bytes.Equal(msgs[i][j], want[i][j]) {
						t.Errorf("message %d frame %d = %.40q…, want %.40q…", i, j, msgs[i][j], want[i][j])
					}
				}
			}
			if size, ok := refusedSize(msgs[1]); !ok || size != 1500 {
				t.Errorf("refusedSize = %d, %v; want 1500, true", size, ok)
			}
			if _, ok := refusedSize(msgs[0]); ok {
				t.Error("refusedSize found a stand-in in a message that had none")
			}
		})
	}
}

func TestLimitReaderEndsConnectionOnLargeCommand(t *testing.T) {
	h, b := zmtpFrame(zmtpCommand, bytes.Repeat([]byte("c"), 2000))
	stream := append(append(make([]byte, zmtpGreeting), h...), b...)
	_, err := io.ReadAll(newLimitReader(bytes.NewReader(stream), 1000))
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 2000 || tl.Limit != 1000 {
		t.Errorf("err = %v, want a TooLargeError for 2000 bytes", err)
	}
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestLimitReaderDoesNotBufferRefusedFrames passes a 256 MiB frame through
// and checks that it was dropped as it came, not held.
func TestLimitReaderDoesNotBufferRefusedFrames(t *testing.T) {
	const size = 256 << 20
	hdr := make([]byte, 9)
	hdr[0] = zmtpLong
	binary.BigEndian.PutUint64(hdr[1:], size)
	stream := io.MultiReader(bytes.NewReader(make([]byte, zmtpGreeting)), bytes.NewReader(hdr),
		io.LimitReader(zeros{}, size))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msgs := readFrames(t, newLimitReader(stream, DefaultMaxMessage))
	runtime.ReadMemStats(&after)
	if len(msgs) != 1 || len(msgs[0]) != 1 || !bytes.Equal(msgs[0][0], refusedFrame(size)) {
		t.Fatalf("got %d messages, want the stand-in alone", len(msgs))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("reading a refused 256 MiB frame allocated %d bytes", grew)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64 MiB", 1 << 30: "1 GiB", 3 << 10: "3 KiB", 1000: "1000 bytes"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

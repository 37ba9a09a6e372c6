package jupyter

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything\nat all", true},
		{"a*", "abc", true},
		{"a*", "bac", false},
		{"*c", "abc", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a*b*c", "a/x/b\nyc", true},
		{"a*b*c", "acb", false},
		{"[ab]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[^a-c]x", "dx", true},
		{"[!a]x", "ax", false},
		{"[]]", "]", true},
		{"[x", "[x", true},
		{"fmt.*", "fmt.Println(1)", true},
		{"Fmt*", "fmt", false},
		{"é*", "été", true},
	}
	for _, tc := range cases {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestOffsets(t *testing.T) {
	code := "aé😀b"
	for cp, b := range map[int]int{-1: len(code), 0: 0, 1: 1, 2: 3, 3: 7, 4: 8, 99: 8} {
		if got := byteOffset(code, cp); got != b {
			t.Errorf("byteOffset(%d) = %d, want %d", cp, got, b)
		}
	}
	for b, cp := range map[int]int{0: 0, 1: 1, 3: 2, 7: 3, 8: 4, 100: 4, -5: 0} {
		if got := codePointOffset(code, b); got != cp {
			t.Errorf("codePointOffset(%d) = %d, want %d", b, got, cp)
		}
	}
}

func TestIncompleteSuffix(t *testing.T) {
	euro := "€" // 3 bytes
	face := "😀" // 4 bytes
	cases := map[string]int{
		"":                 0,
		"abc":              0,
		"a" + euro:         0,
		"a" + euro[:1]:     1,
		"a" + euro[:2]:     2,
		"a" + face[:3]:     3,
		"a" + face:         0,
		"é"[:1]:            1,
		"\x80\x80\x80\x80": 0, // garbage stays garbage
	}
	for s, want := range cases {
		if got := incompleteSuffix([]byte(s)); got != want {
			t.Errorf("incompleteSuffix(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestPublisherKeepsCharactersWhole checks that a timed flush never splits
// a UTF-8 character written in two pieces (as a pipe reader may deliver it).
func TestPublisherKeepsCharactersWhole(t *testing.T) {
	sent := make(chan [][]byte, 100)
	p := newPublisher("s", nil, &outbox{q: make(chan [][]byte, 100), stop: make(chan struct{})},
		20*time.Millisecond, 1<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.out.q = sent
	parent := &Message{Header: Header{MsgID: "p"}}
	euro := []byte("€")
	p.write(parent, "stdout", append([]byte("price 5"), euro[:1]...))
	time.Sleep(60 * time.Millisecond) // a timed flush happens here
	p.write(parent, "stdout", euro[1:])
	p.flush()
	var text strings.Builder
	for len(sent) > 0 {
		frames := <-sent
		m, err := ParseMessage(frames, nil)
		if err != nil {
			t.Fatal(err)
		}
		var s Stream
		m.Decode(&s)
		if !utf8.ValidString(s.Text) {
			t.Errorf("stream message with a split character: %q", s.Text)
		}
		text.WriteString(s.Text)
	}
	if text.String() != "price 5€" {
		t.Errorf("text = %q", text.String())
	}
}

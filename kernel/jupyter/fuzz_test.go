package jupyter_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// The fuzz input is a key and a byte string read as frames: each frame is a
// uvarint length and that many bytes (fewer at the end of the input), so
// every input is some list of frames.
func decodeFrames(data []byte) [][]byte {
	var frames [][]byte
	for len(data) > 0 {
		n, k := binary.Uvarint(data)
		if k <= 0 {
			return append(frames, data)
		}
		data = data[k:]
		n = min(n, uint64(len(data)))
		frames = append(frames, data[:n])
		data = data[n:]
	}
	return frames
}

func encodeFrames(frames [][]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// fuzzSeeds are the seed messages, also written to testdata/fuzz by
// TestWriteFuzzSeeds.
func fuzzSeeds() map[string]struct {
	key    string
	frames [][]byte
} {
	signed := func(key string, m *jupyter.Message) [][]byte {
		s, _ := jupyter.NewSigner("hmac-sha256", key)
		f, err := m.Frames(s)
		if err != nil {
			panic(err)
		}
		return f
	}
	req, _ := jupyter.NewMessage("client", "execute_request", nil, jupyter.NewExecuteRequest("fmt.Println(\"é\")"))
	req.Identities = [][]byte{[]byte("peer-1")}
	rep, _ := jupyter.NewMessage("kernel", "execute_reply", req, jupyter.ExecuteReply{Status: "ok", ExecutionCount: 3})
	rep.Metadata = map[string]any{"started": "2026-01-01T00:00:00Z", "n": 1.5, "list": []any{true, nil}}
	comm, _ := jupyter.NewMessage("client", "comm_msg", nil, jupyter.CommMsg{CommID: "c", Data: map[string]any{"x": 1}})
	comm.Buffers = [][]byte{{0, 1, 2}, {}}
	return map[string]struct {
		key    string
		frames [][]byte
	}{
		"python_execute_request": {"k3y", pythonFrames},
		"signed_request":         {"secret", signed("secret", req)},
		"reply_with_parent":      {"secret", signed("secret", rep)},
		"unsigned_with_buffers":  {"", signed("", comm)},
		"bad_signature":          {"other", signed("secret", req)},
		"no_delimiter":           {"", [][]byte{[]byte("a"), []byte("b")}},
		"missing_frames":         {"", [][]byte{[]byte("<IDS|MSG>"), []byte(""), []byte("{}")}},
		"bad_json":               {"", [][]byte{[]byte("<IDS|MSG>"), []byte(""), []byte(`{"msg_id":`), []byte("{}"), []byte("{}"), []byte("{}")}},
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.key, encodeFrames(s.frames))
	}
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		signer, err := jupyter.NewSigner("hmac-sha256", key)
		if err != nil {
			t.Fatal(err)
		}
		m, err := jupyter.ParseMessage(decodeFrames(data), signer)
		if err != nil {
			return
		}
		// Whatever parses serialises again and parses to the same message.
		frames, err := m.Frames(signer)
		if err != nil {
			t.Fatalf("Frames of a parsed message: %v", err)
		}
		m2, err := jupyter.ParseMessage(frames, signer)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if m2.Header != m.Header || m2.Parent != m.Parent || !bytes.Equal(m2.Content, m.Content) ||
			!reflect.DeepEqual(m2.Metadata, m.Metadata) || len(m2.Buffers) != len(m.Buffers) ||
			len(m2.Identities) != len(m.Identities) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, m2)
		}
		for i := range m.Buffers {
			if !bytes.Equal(m.Buffers[i], m2.Buffers[i]) {
				t.Fatalf("buffer %d changed", i)
			}
		}
		for i := range m.Identities {
			if !bytes.Equal(m.Identities[i], m2.Identities[i]) {
				t.Fatalf("identity %d changed", i)
			}
		}
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzParseMessage when
// KILN_WRITE_FUZZ_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("KILN_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set KILN_WRITE_FUZZ_SEEDS=1 to rewrite the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParseMessage")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range fuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\nstring(%q)\n[]byte(%q)\n", s.key, encodeFrames(s.frames))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

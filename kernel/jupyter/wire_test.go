package jupyter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

func TestSignerMatchesPythonHMAC(t *testing.T) {
	// Reference signatures computed with Python's hmac module and
	// jupyter_client.session.Session (see the comments).
	s, err := jupyter.NewSigner("hmac-sha256", "a0436f6c-1916-498b-8eb9-e81ab9368e84")
	if err != nil {
		t.Fatal(err)
	}
	// hmac.new(key, header+b"{}"+b"{}"+b"{}", sha256).hexdigest()
	header := []byte(`{"msg_id":"1","msg_type":"kernel_info_request"}`)
	want := "23d21ade63d42fc48bbe2721cd9045ceffb260c3521b7d246495f23adfca79a0"
	if got := s.Sign(header, []byte("{}"), []byte("{}"), []byte("{}")); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	if !s.Verify([]byte(want), header, []byte("{}"), []byte("{}"), []byte("{}")) {
		t.Error("Verify rejects the right signature")
	}
	if !s.Verify([]byte(strings.ToUpper(want)), header, []byte("{}"), []byte("{}"), []byte("{}")) {
		t.Error("Verify rejects an upper-case hex signature")
	}
	for name, sig := range map[string]string{
		"one digit changed": "33d21ade63d42fc48bbe2721cd9045ceffb260c3521b7d246495f23adfca79a0",
		"truncated":         want[:40],
		"not hex":           "zz" + want[2:],
		"empty":             "",
	} {
		if s.Verify([]byte(sig), header, []byte("{}"), []byte("{}"), []byte("{}")) {
			t.Errorf("Verify accepts a bad signature (%s)", name)
		}
	}
	if _, err := jupyter.NewSigner("hmac-md5", "k"); err == nil {
		t.Error("hmac-md5 accepted")
	}
	off, _ := jupyter.NewSigner("", "")
	if off.Enabled() || off.Sign(header) != "" || !off.Verify([]byte("anything"), header) {
		t.Error("an empty key must disable signing and checking")
	}
}

// pythonFrames is a message serialised by jupyter_client 7.4.9:
// Session(key=b"k3y", session="sess", username="u").serialize(msg)[1:].
var pythonFrames = [][]byte{
	[]byte("<IDS|MSG>"),
	[]byte("4675bd3926dd41f25d4d5eab09e5ddc7b46ba65a11a532260e492b97ca29f1c2"),
	[]byte(`{"msg_id": "sess_18509_0", "msg_type": "execute_request", "username": "u", "session": "sess", "date": "2026-12-02T16:37:51.627377Z", "version": "5.3"}`),
	[]byte("{}"),
	[]byte("{}"),
	[]byte(`{"code": "1+1"}`),
}

func TestParsePythonMessage(t *testing.T) {
	s, _ := jupyter.NewSigner("hmac-sha256", "k3y")
	frames := append([][]byte{[]byte("client-identity")}, pythonFrames...)
	m, err := jupyter.ParseMessage(frames, s)
	if err != nil {
		t.Fatal(err)
	}
	if m.Type() != "execute_request" || m.Header.MsgID != "sess_18509_0" || m.Header.Session != "sess" ||
		string(m.Identities[0]) != "client-identity" || m.Parent != (jupyter.Header{}) {
		t.Errorf("parsed %+v", m)
	}
	var req jupyter.ExecuteRequest
	if err := m.Decode(&req); err != nil || req.Code != "1+1" {
		t.Errorf("content %+v %v", req, err)
	}
	wrong, _ := jupyter.NewSigner("hmac-sha256", "other")
	if _, err := jupyter.ParseMessage(frames, wrong); !errors.Is(err, jupyter.ErrSignature) {
		t.Errorf("wrong key: %v", err)
	}
	// A reply to it repeats the request's header verbatim as parent_header.
	rep, _ := jupyter.NewMessage("kernel", "execute_reply", m, map[string]any{"status": "ok"})
	out, err := rep.Frames(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[0]) != "client-identity" || !bytes.Equal(out[4], pythonFrames[2]) {
		t.Errorf("reply routing %q, parent %s", out[0], out[4])
	}
}

func TestMessageRoundTrip(t *testing.T) {
	s, _ := jupyter.NewSigner("hmac-sha256", "secret")
	parent, _ := jupyter.NewMessage("client", "execute_request", nil, jupyter.NewExecuteRequest("x"))
	parent.Identities = [][]byte{[]byte("id1"), []byte("id2")}
	m, err := jupyter.NewMessage("kernel", "display_data", parent, jupyter.DisplayData{
		Data: jupyter.MimeBundle{"image/png": []byte{0x89, 'P', 'N', 'G'}, "text/plain": "é"}, Metadata: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	m.Metadata = map[string]any{"k": "v"}
	m.Buffers = [][]byte{{1, 2, 3}, {4}}
	frames, err := m.Frames(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := jupyter.ParseMessage(frames, s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Header != m.Header || got.Parent != parent.Header || !reflect.DeepEqual(got.Metadata, m.Metadata) ||
		!reflect.DeepEqual(got.Buffers, m.Buffers) || !reflect.DeepEqual(got.Identities, parent.Identities) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}
	var d jupyter.DisplayData
	if err := got.Decode(&d); err != nil || d.Data["image/png"] != "iVBORw==" || d.Data["text/plain"] != "é" {
		t.Errorf("content %+v %v (binary data must travel base64)", d, err)
	}
	if m.Header.Version != "5.3" || len(m.Header.MsgID) != 36 || !strings.HasSuffix(m.Header.Date, "Z") ||
		len(m.Header.Date) != len("2006-01-02T15:04:05.000000Z") {
		t.Errorf("header %+v", m.Header)
	}
	// Signatures cover the four JSON parts but not the buffers.
	frames[len(frames)-2] = []byte{9, 9, 9}
	if _, err := jupyter.ParseMessage(frames, s); err != nil {
		t.Errorf("changed buffer: %v", err)
	}
	frames[6] = []byte(`{"k":"changed"}`)
	if _, err := jupyter.ParseMessage(frames, s); !errors.Is(err, jupyter.ErrSignature) {
		t.Errorf("changed metadata: %v", err)
	}
}

func TestParseMessageErrors(t *testing.T) {
	s, _ := jupyter.NewSigner("hmac-sha256", "")
	hdr := `{"msg_id":"1","msg_type":"x"}`
	msg := func(parts ...string) [][]byte {
		f := [][]byte{[]byte("<IDS|MSG>"), []byte("")}
		for _, p := range parts {
			f = append(f, []byte(p))
		}
		return f
	}
	cases := []struct {
		name   string
		frames [][]byte
		want   error
	}{
		{"no frames", nil, jupyter.ErrNoDelimiter},
		{"no delimiter", [][]byte{[]byte("a"), []byte("b")}, jupyter.ErrNoDelimiter},
		{"misspelt delimiter", [][]byte{[]byte("<IDS|MSG"), []byte(""), []byte(hdr), []byte("{}"), []byte("{}"), []byte("{}")}, jupyter.ErrNoDelimiter},
		{"four frames after the delimiter", msg(hdr, "{}", "{}"), jupyter.ErrMissingFrames},
		{"header not JSON", msg("{", "{}", "{}", "{}"), jupyter.ErrMalformed},
		{"header an array", msg("[]", "{}", "{}", "{}"), jupyter.ErrMalformed},
		{"header without msg_type", msg(`{"msg_id":"1"}`, "{}", "{}", "{}"), jupyter.ErrMalformed},
		{"header field of the wrong type", msg(`{"msg_id":1,"msg_type":"x"}`, "{}", "{}", "{}"), jupyter.ErrMalformed},
		{"parent not an object", msg(hdr, "null", "{}", "{}"), jupyter.ErrMalformed},
		{"metadata a string", msg(hdr, "{}", `"m"`, "{}"), jupyter.ErrMalformed},
		{"content a number", msg(hdr, "{}", "{}", "5"), jupyter.ErrMalformed},
		{"content truncated", msg(hdr, "{}", "{}", `{"code":"x`), jupyter.ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := jupyter.ParseMessage(tc.frames, s); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestConnectionFile(t *testing.T) {
	info, err := jupyter.NewConnectionInfo("")
	if err != nil {
		t.Fatal(err)
	}
	ports := map[int]bool{info.ShellPort: true, info.IOPubPort: true, info.StdinPort: true, info.ControlPort: true, info.HBPort: true}
	if len(ports) != 5 || ports[0] || info.Key == "" || info.IP != "127.0.0.1" || info.SignatureScheme != "hmac-sha256" {
		t.Errorf("NewConnectionInfo = %+v", info)
	}
	path := filepath.Join(t.TempDir(), "sub", "kernel-1.json")
	if err := info.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("connection file mode %v, want 0600", st.Mode().Perm())
	}
	got, err := jupyter.ReadConnectionFile(path)
	if err != nil || got != info {
		t.Errorf("read back %+v, %v", got, err)
	}
	// jupyter_client's own files carry extra keys and are accepted.
	py := filepath.Join(t.TempDir(), "py.json")
	os.WriteFile(py, []byte(`{"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
		"ip": "127.0.0.1", "key": "k", "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": ""}`), 0o600)
	if c, err := jupyter.ReadConnectionFile(py); err != nil || c.HBPort != 5 || c.Endpoint(c.ShellPort) != "tcp://127.0.0.1:1" {
		t.Errorf("python connection file: %+v %v", c, err)
	}
	for name, body := range map[string]string{
		"ipc transport": `{"transport":"ipc","ip":"x"}`,
		"md5 scheme":    `{"signature_scheme":"hmac-md5"}`,
		"not json":      `{`,
		"port too big":  `{"shell_port": 70000}`,
	} {
		p := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := jupyter.ReadConnectionFile(p); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := jupyter.ReadConnectionFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestKernelSpecRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kiln")
	spec := jupyter.KernelSpec{Argv: []string{"/usr/bin/kiln", "kernel", "run", "{connection_file}"}, DisplayName: "Go (Kiln)",
		Language: "go", InterruptMode: "message", Env: map[string]string{"A": "1"}}
	if err := jupyter.WriteKernelSpec(dir, spec); err != nil {
		t.Fatal(err)
	}
	got, err := jupyter.ReadKernelSpec(dir)
	if err != nil || !reflect.DeepEqual(got, spec) {
		t.Errorf("read back %+v, %v", got, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "kernel.json"))
	var raw map[string]any
	json.Unmarshal(b, &raw)
	if raw["interrupt_mode"] != "message" || raw["display_name"] != "Go (Kiln)" {
		t.Errorf("kernel.json = %s", b)
	}
	os.WriteFile(filepath.Join(dir, "kernel.json"), []byte(`{"argv":[]}`), 0o644)
	if _, err := jupyter.ReadKernelSpec(dir); err == nil {
		t.Error("empty argv accepted")
	}
}

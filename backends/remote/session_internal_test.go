package remote

import (
	"net"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

func serveForTest(t *testing.T) (*Server, string) {
	t.Helper()
	local := cpu.New(0)
	srv, err := NewServer(ServerConfig{Token: "t", Open: func(string, int) (backends.Backend, error) { return local, nil }})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return srv, l.Addr().String()
}

// TestForgedIDNamesOnlyOwnTable: a client that forges a handle with the id
// of another client's buffer reaches nothing: ids are names in the
// sending stream's table, so the server answers that the buffer does not
// exist, and the other client's data never crosses.
func TestForgedIDNamesOnlyOwnTable(t *testing.T) {
	_, addr := serveForTest(t)
	a, err := Dial(addr, "cpu", Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Dial(addr, "cpu", Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mine, _ := a.Alloc(backends.Uint8, 6) // id 1 in A's table
	a.Write(mine, 0, []byte("mine.."))
	_, _ = b.Alloc(backends.Uint8, 6)       // id 1 in B's table
	secret, _ := b.Alloc(backends.Uint8, 6) // id 2 in B's table: A has no id 2
	b.Write(secret, 0, []byte("secret"))
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	forged := &buffer{owner: a, id: secret.(*buffer).id, bytes: 6}
	got := make([]byte, 6)
	err = a.Read(forged, 0, got)
	if err == nil || !strings.Contains(err.Error(), "does not exist in this session") || string(got) == "secret" {
		t.Fatalf("A reading B's id %d: err %v, data %q", forged.id, err, got)
	}
	a.Copy(backends.Contiguous(mine, backends.Uint8, 6), backends.Contiguous(forged, backends.Uint8, 6))
	if err := a.Sync(); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("A copying from B's id: %v", err)
	}
	if err := a.Read(mine, 0, got); err != nil || string(got) != "mine.." {
		t.Fatalf("A's own buffer after the refused copy: %v %q", err, got)
	}
}

// FuzzSessionFrame feeds arbitrary frames to a session: a frame either
// runs or ends the session with an error; it never crashes the server.
func FuzzSessionFrame(f *testing.F) {
	var e encoder
	e.op(opHello)
	e.u(1)
	e.u(protocolVersion)
	e.str("cpu")
	e.i(0)
	hello := append([]byte(nil), e.b...)
	e.op(opAlloc)
	e.u(1)
	e.b = append(e.b, byte(backends.Float32))
	e.i(4)
	e.op(opFill)
	e.view(1, backends.View{DType: backends.Float32, Shape: []int{4}, Strides: []int{1}})
	e.f(2)
	e.op(opRead)
	e.u(2)
	e.u(1)
	e.i(0)
	e.u(16)
	f.Add(e.b)
	f.Add(hello)
	f.Add([]byte{opHello})
	f.Fuzz(func(t *testing.T, p []byte) {
		local := cpu.New(1)
		srv := &Server{cfg: ServerConfig{Token: "t", MaxSessionBytes: 1 << 20, Open: func(string, int) (backends.Backend, error) { return local, nil }},
			devices: map[string]*device{}}
		ss := &session{srv: srv, bufs: map[uint64]backends.Buffer{}}
		defer ss.freeAll()
		if !strings.HasPrefix(string(p), string(hello)) {
			p = append(append([]byte(nil), hello...), p...)
		}
		send := func([]byte) error { return nil }
		_ = ss.run(p, send)
		_ = ss.run(p[len(hello):], send)
	})
}

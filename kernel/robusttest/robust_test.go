package robusttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// TestBadCells runs cells that fail in every way a cell can fail without
// ending the process; each gets an error reply naming what went wrong, and
// the session keeps its variables.
func TestBadCells(t *testing.T) {
	k := startKernel(t)
	k.ok("x := 41\nfunc double(n int) int { return 2 * n }")
	check := func(t *testing.T) {
		t.Helper()
		k.t = t
		k.expect("double(x + 1) / 2", "42")
	}

	t.Run("panic", func(t *testing.T) {
		k.t = t
		r := k.cellError("y := 1\npanic(\"boom\")", 10*time.Second)
		if r.reply.Ename != "panic" || r.reply.Evalue != "boom" || len(r.reply.Traceback) == 0 {
			t.Errorf("error reply %q: %q %q, want panic: boom with a traceback", r.reply.Ename, r.reply.Evalue, r.reply.Traceback)
		}
		if r.stderr != "" {
			t.Errorf("the panic also went to stderr: %q", r.stderr)
		}
		// In a function, the traceback names it and quotes the line.
		r = k.cellError("func deep() {\n\tpanic(\"boom\")\n}\ndeep()", 10*time.Second)
		if tb := strings.Join(r.reply.Traceback, "\n"); !strings.Contains(tb, "2:2: in deep") || !strings.Contains(tb, `panic("boom")`) {
			t.Errorf("traceback %q does not point at deep's line 2", r.reply.Traceback)
		}
		check(t)
	})

	t.Run("runtime error in compiled code", func(t *testing.T) {
		k.t = t
		r := k.cellError("var s []int\nsort.Ints(s[:3])", 10*time.Second)
		if !strings.Contains(r.reply.Evalue, "out of") {
			t.Errorf("evalue %q, want a slice bounds error", r.reply.Evalue)
		}
		check(t)
	})

	t.Run("tensor shape error", func(t *testing.T) {
		k.t = t
		r := k.cellError("tensor.Ones(tensor.CPU(), 2, 3).Matmul(tensor.Ones(tensor.CPU(), 2, 3))", 10*time.Second)
		if !strings.Contains(r.reply.Evalue, "Matmul") {
			t.Errorf("evalue %q does not name Matmul", r.reply.Evalue)
		}
		check(t)
	})

	// yaegi v0.16.1's compiler indexes out of range on a type switch from
	// one interface to a wider one (an index panic inside the interpreter,
	// not in the cell); the kernel reports it and carries on.
	t.Run("interpreter crash", func(t *testing.T) {
		k.t = t
		r := k.cellError("type I interface{ M() }\ntype J interface{ M(); N() }\nvar i I\nswitch v := i.(type) {\ncase J:\n\t_ = v\n}", 10*time.Second)
		if r.reply.Ename != "InternalError" || !strings.Contains(r.reply.Evalue, "yaegi") {
			t.Errorf("error reply %q: %q, want an InternalError naming yaegi", r.reply.Ename, r.reply.Evalue)
		}
		check(t)
	})

	t.Run("syntax error", func(t *testing.T) {
		k.t = t
		r := k.cellError("a := 1\nb := 2\n\nc := a + ) b\nfmt.Println(c)", 10*time.Second)
		if r.reply.Ename != "SyntaxError" || !strings.HasPrefix(r.reply.Evalue, "4:10:") {
			t.Errorf("error reply %q: %q, want a SyntaxError at 4:10 (the cell's own line)", r.reply.Ename, r.reply.Evalue)
		}
		if !strings.Contains(strings.Join(r.reply.Traceback, "\n"), "c := a + ) b") {
			t.Errorf("traceback %q does not quote the line", r.reply.Traceback)
		}
		// After declarations, in a later chunk of the cell.
		r = k.cellError("func one() int {\n\treturn 1\n}\n\ny := one(\nz := 3", 10*time.Second)
		if !strings.HasPrefix(r.reply.Evalue, "6:") {
			t.Errorf("evalue %q, want line 6", r.reply.Evalue)
		}
		check(t)
		r = k.cellError("b", 10*time.Second) // the failed cell declared nothing
		if !strings.Contains(r.reply.Evalue, "undefined") {
			t.Errorf("b after the failed cell: %q, want undefined", r.reply.Evalue)
		}
	})
}

// TestOutputFlood prints 20,000 lines: they all arrive, in order, within
// 3 s, coalesced into fewer than 2,000 stream messages.
func TestOutputFlood(t *testing.T) {
	k := startKernel(t)
	const lines = 20000
	// os.Stdout and os.Stderr inside a cell are files on pipes of their
	// own; files on fd 1 and 2 are what compiled code writes to, through
	// the kernel's fd capture. (Kept in globals: a collected *os.File
	// would close the descriptor.)
	k.ok("fd1 := os.NewFile(1, \"fd 1\")\nfd2 := os.NewFile(2, \"fd 2\")")
	for _, tc := range []struct{ name, code, stream string }{
		{"interpreted fmt.Println", "fmt.Println(\"line\", i)", "stdout"},
		{"the cell's os.Stdout", "fmt.Fprintln(os.Stdout, \"line\", i)", "stdout"},
		{"compiled writes to fd 1", "fmt.Fprintln(fd1, \"line\", i)", "stdout"},
		{"compiled writes to fd 2", "fmt.Fprintln(fd2, \"line\", i)", "stderr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k.t = t
			r := k.exec(fmt.Sprintf("for i := 0; i < %d; i++ {\n\t%s\n}", lines, tc.code), 30*time.Second)
			if r.err != nil || r.reply.Status != jupyter.StatusOK {
				t.Fatalf("cell: %s", r)
			}
			if r.took > 3*time.Second {
				t.Errorf("20,000 lines took %v, want under 3 s", r.took)
			}
			if n := r.count("stream"); n >= 2000 {
				t.Errorf("%d stream messages, want fewer than 2,000", n)
			} else {
				t.Logf("%d lines in %d stream messages, %v", lines, n, r.took)
			}
			text := r.stdout
			if tc.stream == "stderr" {
				text = r.stderr
			}
			got := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			if len(got) != lines {
				t.Fatalf("%d lines arrived on %s, want %d", len(got), tc.stream, lines)
			}
			for i, l := range got {
				if l != fmt.Sprint("line ", i) {
					t.Fatalf("line %d is %q", i, l)
				}
			}
		})
	}
}

// TestStdin answers a cell's reads from os.Stdin through input_request and
// input_reply.
func TestStdin(t *testing.T) {
	k := startKernel(t)
	var prompts []jupyter.InputRequest
	answers := []string{"Ada", "Lovelace 1815"}
	req := jupyter.NewExecuteRequest(`var name string
fmt.Print("name? ")
fmt.Scanln(&name)
line, err := bufio.NewReader(os.Stdin).ReadString('\n')
fmt.Printf("hello %s, %q %v\n", name, line, err)`)
	req.AllowStdin = true
	r := k.execReq(req, 20*time.Second, &jupyter.ExecuteHandlers{Input: func(in jupyter.InputRequest) (string, error) {
		prompts = append(prompts, in)
		if len(prompts) > len(answers) {
			return "", errors.New("too many input requests")
		}
		return answers[len(prompts)-1], nil
	}})
	if r.err != nil || r.reply.Status != jupyter.StatusOK {
		t.Fatalf("cell: %s", r)
	}
	if len(prompts) != 2 {
		t.Errorf("%d input requests, want 2", len(prompts))
	}
	if want := "name? hello Ada, \"Lovelace 1815\\n\" <nil>\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	k.expect("name", "Ada")
	// Without allow_stdin (nbconvert), reading gets end of file at once.
	r = k.exec("n, err := fmt.Scanln(&name)\nfmt.Println(n, err)", 10*time.Second)
	if r.err != nil || r.reply.Status != jupyter.StatusOK || !strings.Contains(r.stdout, "EOF") {
		t.Errorf("reading without allow_stdin: %s", r)
	}
}

// rawShell connects a bare DEALER socket to the kernel's shell port.
func rawShell(t *testing.T, info jupyter.ConnectionInfo) zmq4.Socket {
	t.Helper()
	d := zmq4.NewDealer(context.Background(), zmq4.WithID(zmq4.SocketIdentity(jupyter.NewID())),
		zmq4.WithDialerRetry(50*time.Millisecond))
	if err := d.Dial(info.Endpoint(info.ShellPort)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestBadMessages sends what an attacker or a broken client might: a
// request signed with the wrong key (never executed), a replayed request,
// and malformed messages (dropped). The kernel stays up and answers.
func TestBadMessages(t *testing.T) {
	k := startKernel(t)
	k.ok("hits := 0")
	k.ok("marker := 0")
	info := k.p.Info
	d := rawShell(t, info)
	send := func(name string, frames [][]byte) {
		t.Helper()
		if err := d.Send(zmq4.NewMsgFrom(frames...)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	request := func(signer *jupyter.Signer, code string) [][]byte {
		m, err := jupyter.NewMessage("raw-client", "execute_request", nil, jupyter.NewExecuteRequest(code))
		if err != nil {
			t.Fatal(err)
		}
		frames, err := m.Frames(signer)
		if err != nil {
			t.Fatal(err)
		}
		return frames
	}
	wrongKey, _ := jupyter.NewSigner("hmac-sha256", "not-"+info.Key)
	noKey, _ := jupyter.NewSigner("hmac-sha256", "")
	good, _ := jupyter.NewSigner("hmac-sha256", info.Key)

	send("wrong key", request(wrongKey, "hits += 100"))
	send("no signature", request(noKey, "hits += 1000"))
	tampered := request(good, "hits += 1")
	tampered[5] = []byte(strings.Replace(string(tampered[5]), "hits += 1", "hits += 9", 1))
	send("tampered content", tampered)
	once := request(good, "hits += 1")
	send("signed", once)
	send("replayed", once)

	signed := func(header, parent, md, content string) [][]byte {
		return [][]byte{[]byte("<IDS|MSG>"), []byte(good.Sign([]byte(header), []byte(parent), []byte(md), []byte(content))),
			[]byte(header), []byte(parent), []byte(md), []byte(content)}
	}
	hdr := `{"msg_id":"%s","msg_type":"execute_request","session":"s","username":"u","date":"","version":"5.3"}`
	for name, frames := range map[string][][]byte{
		"no delimiter":      {[]byte("hello"), []byte("world")},
		"missing frames":    {[]byte("<IDS|MSG>"), []byte("abc"), []byte("{}")},
		"only a delimiter":  {[]byte("<IDS|MSG>")},
		"bad json header":   signed(`{"msg_id":`, "{}", "{}", "{}"),
		"bad json content":  signed(fmt.Sprintf(hdr, jupyter.NewID()), "{}", "{}", `{"code": "hits += 10"`),
		"content not a map": signed(fmt.Sprintf(hdr, jupyter.NewID()), "{}", "{}", `["hits += 10"]`),
		"no msg_type":       signed(`{"msg_id":"x"}`, "{}", "{}", `{"code":"hits += 10"}`),
		"binary garbage":    {[]byte("<IDS|MSG>"), {0xff, 0xfe}, {0}, {1}, {2}, {3}},
		"empty":             {{}},
	} {
		send(name, frames)
	}
	// A last good request on the same socket: the kernel reads a socket's
	// messages in order, so once it has run, every message above has been
	// handled (this client's requests come on another socket and may be
	// read first on a busy machine).
	send("marker", request(good, "marker = 1"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for k.ok("marker").text() != "1" {
		if ctx.Err() != nil {
			t.Fatal("the marker request sent after the bad messages never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The heartbeat and the next request are answered; only the one good
	// request ran, once.
	if err := k.c.Ping(ctx); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	k.expect("hits", "1")
	if k.p.Err() != nil {
		t.Fatalf("the kernel died: %v", k.p.Err())
	}
}

// TestClientVanishes closes a client's sockets while its cell runs; the
// cell finishes, and a new client finds the kernel working with the
// cell's variables.
func TestClientVanishes(t *testing.T) {
	k := startKernel(t)
	k.ok("x := 41")
	started := make(chan struct{})
	go func() {
		k.execReq(jupyter.NewExecuteRequest("for i := 0; i < 10; i++ {\n\tfmt.Println(i)\n\ttime.Sleep(100 * time.Millisecond)\n}\nvanished := x + 1"),
			20*time.Second, &jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
				if m.Type() == "stream" {
					select {
					case <-started:
					default:
						close(started)
					}
				}
			}})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the cell did not start")
	}
	k.c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := jupyter.Dial(ctx, k.p.Info, &jupyter.ClientOptions{Process: k.p})
	if err != nil {
		t.Fatal(err)
	}
	k.c = c
	if _, err := c.WaitForReady(ctx); err != nil {
		t.Fatal(err)
	}
	// Queued behind the vanished client's cell, which ran to its end.
	k.expect("vanished", "42")

	// A client that vanishes while its cell runs for ever: a new client
	// interrupts the cell and goes on.
	go k.c.Execute(context.Background(), jupyter.NewExecuteRequest("for {\n\tx++\n}"), nil)
	time.Sleep(300 * time.Millisecond)
	k.c.Close()
	c2, err := jupyter.Dial(ctx, k.p.Info, &jupyter.ClientOptions{Process: k.p})
	if err != nil {
		t.Fatal(err)
	}
	k.c = c2
	if err := c2.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.WaitForReady(ctx); err != nil {
		t.Fatal(err)
	}
	k.expect("x > 41", "true")
}

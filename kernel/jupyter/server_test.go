package jupyter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

type testKernel struct {
	srv    *jupyter.Server
	h      *fakeHandler
	log    *testutil.Buffer
	served chan error
	cancel context.CancelFunc
}

// startKernel runs a Server with a fakeHandler on free local ports.
func startKernel(t *testing.T, mutate func(*jupyter.Config)) *testKernel {
	t.Helper()
	k := &testKernel{h: &fakeHandler{}, log: &testutil.Buffer{}, served: make(chan error, 1)}
	cfg := jupyter.Config{
		Connection:      jupyter.ConnectionInfo{IP: "127.0.0.1", Key: jupyter.NewID()},
		Handler:         k.h,
		Logger:          slog.New(slog.NewTextHandler(k.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		NoSignalHandler: true,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := jupyter.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go func() { k.served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-k.served:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after cancel")
		}
		if t.Failed() {
			t.Logf("kernel log:\n%s", k.log.String())
		}
	})
	return k
}

// connect returns a ready client of k.
func (k *testKernel) connect(t *testing.T) *jupyter.KernelClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := jupyter.Dial(ctx, k.srv.ConnectionInfo(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.WaitForReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// run executes code and returns the reply and the IOPub messages.
func run(t *testing.T, c *jupyter.KernelClient, req jupyter.ExecuteRequest, h *jupyter.ExecuteHandlers) (jupyter.ExecuteReply, []*jupyter.Message) {
	t.Helper()
	var mu sync.Mutex
	var out []*jupyter.Message
	hh := jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
		mu.Lock()
		out = append(out, m)
		mu.Unlock()
	}}
	if h != nil {
		hh.Input = h.Input
	}
	rep, err := c.Execute(timeout(t, 10*time.Second), req, &hh)
	if err != nil {
		t.Fatalf("execute %q: %v", req.Code, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return rep, out
}

func types(ms []*jupyter.Message) []string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Type())
	}
	return s
}

func streamText(ms []*jupyter.Message, name string) string {
	var b strings.Builder
	for _, m := range ms {
		if m.Type() == "stream" {
			var s jupyter.Stream
			_ = m.Decode(&s)
			if s.Name == name {
				b.WriteString(s.Text)
			}
		}
	}
	return b.String()
}

func find(ms []*jupyter.Message, typ string) *jupyter.Message {
	for _, m := range ms {
		if m.Type() == typ {
			return m
		}
	}
	return nil
}

func TestKernelInfo(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	info, err := c.KernelInfo(timeout(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != "ok" || info.ProtocolVersion != "5.3" || info.LanguageInfo.Name != "fake" || info.HelpLinks == nil {
		t.Errorf("kernel info = %+v", info)
	}
	if err := c.Ping(timeout(t, 5*time.Second)); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
}

func TestExecute(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	cases := []struct {
		name      string
		req       jupyter.ExecuteRequest
		status    string
		count     int
		wantTypes []string // IOPub message types in order
		check     func(t *testing.T, rep jupyter.ExecuteReply, out []*jupyter.Message)
	}{
		{"stdout is a stream", jupyter.NewExecuteRequest("echo hello"), "ok", 1,
			[]string{"status", "execute_input", "stream", "status"},
			func(t *testing.T, _ jupyter.ExecuteReply, out []*jupyter.Message) {
				if got := streamText(out, "stdout"); got != "hello\n" {
					t.Errorf("stdout = %q", got)
				}
			}},
		{"stderr is a stream", jupyter.NewExecuteRequest("stderr oops"), "ok", 2,
			[]string{"status", "execute_input", "stream", "status"},
			func(t *testing.T, _ jupyter.ExecuteReply, out []*jupyter.Message) {
				if got := streamText(out, "stderr"); got != "oops\n" {
					t.Errorf("stderr = %q", got)
				}
			}},
		{"value is an execute_result", jupyter.NewExecuteRequest("result 42"), "ok", 3,
			[]string{"status", "execute_input", "execute_result", "status"},
			func(t *testing.T, _ jupyter.ExecuteReply, out []*jupyter.Message) {
				var r jupyter.ExecuteResultContent
				_ = find(out, "execute_result").Decode(&r)
				if r.Data["text/plain"] != "42" || r.ExecutionCount != 3 {
					t.Errorf("execute_result = %+v", r)
				}
			}},
		{"error is published and replied", jupyter.NewExecuteRequest("error Boom"), "error", 4,
			[]string{"status", "execute_input", "error", "status"},
			func(t *testing.T, rep jupyter.ExecuteReply, out []*jupyter.Message) {
				if rep.ErrorContent == nil || rep.Ename != "Boom" || len(rep.Traceback) != 1 {
					t.Errorf("reply = %+v", rep)
				}
			}},
		{"silent has no execute_input and keeps the count", jupyter.ExecuteRequest{Code: "result 1", Silent: true, StoreHistory: true}, "ok", 4,
			[]string{"status", "status"}, nil},
		{"blank cell does not count", jupyter.NewExecuteRequest("  \n"), "ok", 4,
			[]string{"status", "execute_input", "status"}, nil},
		{"display and update carry the display id", jupyter.NewExecuteRequest("display"), "ok", 5,
			[]string{"status", "execute_input", "display_data", "update_display_data", "status"},
			func(t *testing.T, _ jupyter.ExecuteReply, out []*jupyter.Message) {
				var d jupyter.DisplayData
				_ = find(out, "update_display_data").Decode(&d)
				if d.Transient["display_id"] != "d1" || d.Data["text/html"] != "<b>v2</b>" || d.Metadata == nil {
					t.Errorf("update_display_data = %+v", d)
				}
			}},
		{"clear_output", jupyter.NewExecuteRequest("clear"), "ok", 6,
			[]string{"status", "execute_input", "clear_output", "status"}, nil},
		{"handler panic becomes an error", jupyter.NewExecuteRequest("panic"), "error", 7,
			[]string{"status", "execute_input", "error", "status"},
			func(t *testing.T, rep jupyter.ExecuteReply, _ []*jupyter.Message) {
				if rep.ErrorContent == nil || rep.Ename != "panic" || !strings.Contains(rep.Evalue, "fake handler panics") {
					t.Errorf("reply = %+v", rep)
				}
			}},
		{"input without allow_stdin fails", jupyter.NewExecuteRequest("input name?"), "error", 8,
			[]string{"status", "execute_input", "error", "status"},
			func(t *testing.T, rep jupyter.ExecuteReply, _ []*jupyter.Message) {
				if rep.ErrorContent == nil || !strings.Contains(rep.Evalue, jupyter.ErrStdinNotAllowed.Error()) {
					t.Errorf("reply = %+v", rep)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, out := run(t, c, tc.req, nil)
			if rep.Status != tc.status || rep.ExecutionCount != tc.count {
				t.Errorf("reply status %q count %d, want %q %d", rep.Status, rep.ExecutionCount, tc.status, tc.count)
			}
			if got := strings.Join(types(out), " "); got != strings.Join(tc.wantTypes, " ") {
				t.Errorf("iopub = %s, want %s", got, strings.Join(tc.wantTypes, " "))
			}
			for _, m := range out {
				if m.Parent.MsgID == "" || m.Header.Version != "5.3" || m.Header.Session != k.srv.Session() {
					t.Errorf("iopub %s: parent %q version %q session %q", m.Type(), m.Parent.MsgID, m.Header.Version, m.Header.Session)
				}
			}
			if tc.check != nil {
				tc.check(t, rep, out)
			}
		})
	}
}

func TestUserExpressions(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	req := jupyter.NewExecuteRequest("echo x")
	req.UserExpressions = map[string]string{"a": "x+1", "b": "bad"}
	rep, _ := run(t, c, req, nil)
	a, b := rep.UserExpressions["a"], rep.UserExpressions["b"]
	if a.Status != "ok" || a.Data["text/plain"] != "value of x+1" {
		t.Errorf("a = %+v", a)
	}
	if b.Status != "error" || b.ErrorContent == nil || b.Ename != "NameError" {
		t.Errorf("b = %+v", b)
	}
}

func TestStopOnErrorAbortsQueuedCells(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	// Three requests sent back to back: the second and third are queued
	// while the first runs and fails.
	var calls []*jupyter.Call
	for _, code := range []string{"slowerror 300ms", "echo queued 1", "echo queued 2"} {
		call, err := c.SendRequest(jupyter.Shell, "execute_request", jupyter.NewExecuteRequest(code))
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, call)
	}
	var statuses []string
	for _, call := range calls {
		r, err := call.Wait(timeout(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var rep jupyter.ExecuteReply
		_ = r.Decode(&rep)
		statuses = append(statuses, rep.Status)
		if r.Metadata["status"] != rep.Status {
			t.Errorf("reply metadata status %v, content %s", r.Metadata["status"], rep.Status)
		}
	}
	if got := strings.Join(statuses, " "); got != "error aborted aborted" {
		t.Errorf("statuses = %s, want error aborted aborted", got)
	}
	if got := k.h.executed.Load(); got != 1 {
		t.Errorf("handler ran %d cells, want 1 (the failing one)", got)
	}
	// A cell sent after the failure runs normally.
	rep, _ := run(t, c, jupyter.NewExecuteRequest("echo after"), nil)
	if rep.Status != "ok" {
		t.Errorf("cell after the abort: status %q", rep.Status)
	}
}

func TestStopOnErrorReplies(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	type result struct {
		rep jupyter.ExecuteReply
		err error
	}
	first := make(chan result, 1)
	go func() {
		rep, err := c.Execute(timeout(t, 10*time.Second), jupyter.NewExecuteRequest("slowerror 300ms"), nil)
		first <- result{rep, err}
	}()
	time.Sleep(50 * time.Millisecond) // let the first request arrive first
	queued := make(chan result, 2)
	for _, code := range []string{"echo q1", "echo q2"} {
		go func() {
			rep, err := c.Execute(timeout(t, 10*time.Second), jupyter.NewExecuteRequest(code), nil)
			queued <- result{rep, err}
		}()
	}
	if r := <-first; r.err != nil || r.rep.Status != "error" {
		t.Fatalf("failing cell: %+v", r)
	}
	for range 2 {
		if r := <-queued; r.err != nil || r.rep.Status != "aborted" {
			t.Errorf("queued cell: %+v, want status aborted", r)
		}
	}

	// Without stop_on_error the queue runs on.
	req := jupyter.NewExecuteRequest("slowerror 200ms")
	req.StopOnError = false
	go func() {
		rep, err := c.Execute(timeout(t, 10*time.Second), req, nil)
		first <- result{rep, err}
	}()
	time.Sleep(50 * time.Millisecond)
	rep, _ := run(t, c, jupyter.NewExecuteRequest("echo runs"), nil)
	if rep.Status != "ok" {
		t.Errorf("cell after a stop_on_error=false failure: %q", rep.Status)
	}
	<-first
}

func TestInterruptRequest(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	done := make(chan jupyter.ExecuteReply, 1)
	started := make(chan struct{}, 1)
	go func() {
		rep, err := c.Execute(timeout(t, 20*time.Second), jupyter.NewExecuteRequest("sleep 30s"),
			&jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
				if m.Type() == "execute_input" {
					started <- struct{}{}
				}
			}})
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	<-started
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	if err := c.Interrupt(timeout(t, 5*time.Second)); err != nil {
		t.Fatalf("interrupt_request: %v", err)
	}
	select {
	case rep := <-done:
		if rep.Status != "error" || rep.ErrorContent == nil || rep.Ename != "KeyboardInterrupt" {
			t.Errorf("interrupted cell reply = %+v", rep)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("interrupt took %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cell not interrupted")
	}
	if k.h.interrupts.Load() != 1 {
		t.Errorf("Handler.Interrupt called %d times, want 1", k.h.interrupts.Load())
	}
	k.srv.Interrupt() // the SIGINT path calls the same method
	if k.h.interrupts.Load() != 2 {
		t.Errorf("Server.Interrupt did not reach the handler")
	}
}

func TestInputRoundTrip(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	req := jupyter.NewExecuteRequest("input Your name?")
	req.AllowStdin = true
	var prompt string
	rep, out := run(t, c, req, &jupyter.ExecuteHandlers{Input: func(r jupyter.InputRequest) (string, error) {
		prompt = r.Prompt
		return "Ada", nil
	}})
	if rep.Status != "ok" || prompt != "Your name?" {
		t.Fatalf("reply %+v prompt %q", rep, prompt)
	}
	var r jupyter.ExecuteResultContent
	_ = find(out, "execute_result").Decode(&r)
	if r.Data["text/plain"] != "Ada" {
		t.Errorf("value = %v, want Ada", r.Data["text/plain"])
	}

	// An interrupt ends a pending input request.
	done := make(chan jupyter.ExecuteReply, 1)
	asked := make(chan struct{})
	go func() {
		rep, _ := c.Execute(timeout(t, 10*time.Second), req, &jupyter.ExecuteHandlers{Input: func(jupyter.InputRequest) (string, error) {
			close(asked)
			time.Sleep(time.Hour)
			return "", nil
		}})
		done <- rep
	}()
	<-asked
	if err := c.Interrupt(timeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case rep := <-done:
		if rep.Status != "error" || rep.ErrorContent == nil || rep.Ename != "InputError" {
			t.Errorf("interrupted input: %+v", rep)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("interrupt did not end the input request")
	}
}

func TestOutputCoalescing(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	t0 := time.Now()
	rep, out := run(t, c, jupyter.NewExecuteRequest("print 20000"), nil)
	elapsed := time.Since(t0)
	if rep.Status != "ok" {
		t.Fatalf("reply %+v", rep)
	}
	streams := 0
	for _, m := range out {
		if m.Type() == "stream" {
			streams++
		}
	}
	var want strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got := streamText(out, "stdout"); got != want.String() {
		t.Errorf("stdout has %d bytes, want %d", len(got), want.Len())
	}
	if streams >= 2000 || elapsed >= 3*time.Second {
		t.Errorf("20000 lines: %d stream messages in %v, want < 2000 in < 3s", streams, elapsed)
	}
	if len(out) == 0 || out[len(out)-1].Type() != "status" {
		t.Errorf("iopub does not end with the idle status")
	}
	t.Logf("20000 lines: %d stream messages, %v", streams, elapsed)
}

func TestOutputFlushedPeriodically(t *testing.T) {
	// A cell printing steadily for a second: its output arrives while it
	// runs, in about one message per flush interval, not one per line.
	k := startKernel(t, nil)
	c := k.connect(t)
	var first time.Time
	t0 := time.Now()
	var mu sync.Mutex
	var out []*jupyter.Message
	rep, err := c.Execute(timeout(t, 10*time.Second), jupyter.NewExecuteRequest("slowprint 20000 1s"),
		&jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
			mu.Lock()
			defer mu.Unlock()
			if m.Type() == "stream" && first.IsZero() {
				first = time.Now()
			}
			out = append(out, m)
		}})
	if err != nil || rep.Status != "ok" {
		t.Fatalf("%+v %v", rep, err)
	}
	mu.Lock()
	defer mu.Unlock()
	streams := 0
	for _, m := range out {
		if m.Type() == "stream" {
			streams++
		}
	}
	if got := streamText(out, "stdout"); strings.Count(got, "\n") != 20000 || !strings.HasSuffix(got, "line 19999\n") {
		t.Errorf("output incomplete: %d lines", strings.Count(got, "\n"))
	}
	// 1 s at 50 ms per flush is about 20 messages.
	if streams < 5 || streams > 60 {
		t.Errorf("%d stream messages for 1 s of steady output, want about 20", streams)
	}
	if d := first.Sub(t0); d > 500*time.Millisecond {
		t.Errorf("first output after %v: not flushed while the cell runs", d)
	}
	t.Logf("1 s of steady printing: %d stream messages, first after %v", streams, first.Sub(t0))
}

func TestOutputBackpressureIsBounded(t *testing.T) {
	// A tiny buffer forces the writer to wait for the flush interval: the
	// output still arrives complete and in order, in few messages.
	k := startKernel(t, func(c *jupyter.Config) {
		c.MaxStreamBuffer = 4096
		c.FlushInterval = 20 * time.Millisecond
	})
	c := k.connect(t)
	_, out := run(t, c, jupyter.NewExecuteRequest("print 5000"), nil)
	got := streamText(out, "stdout")
	if !strings.HasPrefix(got, "line 0\n") || !strings.HasSuffix(got, "line 4999\n") || strings.Count(got, "\n") != 5000 {
		t.Errorf("output damaged: %d bytes, %d lines", len(got), strings.Count(got, "\n"))
	}
	for _, m := range out {
		var s jupyter.Stream
		if m.Type() == "stream" && m.Decode(&s) == nil && len(s.Text) > 4096 {
			t.Errorf("stream message of %d bytes exceeds MaxStreamBuffer", len(s.Text))
		}
	}
}

func TestCompleteInspectIsComplete(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	ctx := timeout(t, 10*time.Second)
	// "é " is two code points but three bytes: offsets must be code points.
	code := "é pri"
	cr, err := c.Complete(ctx, code, 5)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cr.Matches, ",") != "print,println,printf" || cr.CursorStart != 2 || cr.CursorEnd != 5 || cr.Status != "ok" {
		t.Errorf("complete = %+v", cr)
	}
	cr, _ = c.Complete(ctx, "παρ", 3)
	if len(cr.Matches) != 1 || cr.CursorStart != 0 || cr.CursorEnd != 3 {
		t.Errorf("complete non-ASCII = %+v", cr)
	}
	ir, err := c.Inspect(ctx, "é print", 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !ir.Found || ir.Data["text/plain"] != "print: prints (cursor 8, detail 1)" {
		t.Errorf("inspect = %+v", ir)
	}
	ir, _ = c.Inspect(ctx, "nothing", 3, 0)
	if ir.Found || ir.Status != "ok" || ir.Data == nil {
		t.Errorf("inspect miss = %+v", ir)
	}
	for code, want := range map[string]string{"x := 1": "complete", "func f() {": "incomplete", "}": "invalid"} {
		r, err := c.IsComplete(ctx, code)
		if err != nil || r.Status != want {
			t.Errorf("is_complete(%q) = %+v, %v; want %s", code, r, err, want)
		}
		if want == "incomplete" && r.Indent != "\t" {
			t.Errorf("indent = %q", r.Indent)
		}
	}
}

func TestHistory(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	for _, code := range []string{"result a", "echo b", "result a", "error X"} {
		run(t, c, jupyter.NewExecuteRequest(code), nil)
	}
	run(t, c, jupyter.ExecuteRequest{Code: "result not stored", StoreHistory: false}, nil)
	ctx := timeout(t, 10*time.Second)
	entries := func(req jupyter.HistoryRequest) []string {
		r, err := c.History(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, e := range r.History {
			s = append(s, string(e))
		}
		return s
	}
	cases := []struct {
		name string
		req  jupyter.HistoryRequest
		want string
	}{
		{"tail n", jupyter.HistoryRequest{HistAccessType: "tail", N: 2},
			`[1,3,"result a"] [1,4,"error X"]`},
		{"tail with output pairs", jupyter.HistoryRequest{HistAccessType: "tail", N: 2, Output: true},
			`[1,3,["result a","a"]] [1,4,["error X",null]]`},
		{"range of the current session", jupyter.HistoryRequest{HistAccessType: "range", Session: 0, Start: 2, Stop: 4},
			`[1,2,"echo b"] [1,3,"result a"]`},
		{"range without stop", jupyter.HistoryRequest{HistAccessType: "range", Start: 4},
			`[1,4,"error X"]`},
		{"search glob", jupyter.HistoryRequest{HistAccessType: "search", Pattern: "result*"},
			`[1,1,"result a"] [1,3,"result a"]`},
		{"search unique", jupyter.HistoryRequest{HistAccessType: "search", Pattern: "*a", Unique: true},
			`[1,3,"result a"]`},
		{"search last n", jupyter.HistoryRequest{HistAccessType: "search", Pattern: "*", N: 1},
			`[1,4,"error X"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(entries(tc.req), " "); got != tc.want {
				t.Errorf("history = %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := c.History(ctx, jupyter.HistoryRequest{HistAccessType: "sideways"}); err == nil {
		t.Error("unknown hist_access_type: no error")
	}
}

func TestComms(t *testing.T) {
	k := startKernel(t, nil)
	var mu sync.Mutex
	var got []string
	k.srv.Comms().RegisterTarget("echo", func(comm *jupyter.Comm, data map[string]any) error {
		comm.OnMessage(func(data map[string]any, _ [][]byte) {
			mu.Lock()
			got = append(got, fmt.Sprint(data["x"]))
			mu.Unlock()
			comm.Send(map[string]any{"echo": data["x"]})
		})
		return nil
	})
	c := k.connect(t)
	ctx := timeout(t, 10*time.Second)
	var iopub []*jupyter.Message
	var iomu sync.Mutex
	cancel := c.SubscribeIOPub(func(m *jupyter.Message) {
		if strings.HasPrefix(m.Type(), "comm_") {
			iomu.Lock()
			iopub = append(iopub, m)
			iomu.Unlock()
		}
	})
	defer cancel()
	// Requests on shell are serialised, so a kernel_info round trip after
	// the comm messages means they were handled.
	sync := func() {
		if _, err := c.KernelInfo(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Send(jupyter.Shell, "comm_open", jupyter.CommOpen{CommID: "c1", TargetName: "echo", Data: map[string]any{}})
	c.Send(jupyter.Shell, "comm_msg", jupyter.CommMsg{CommID: "c1", Data: map[string]any{"x": 7}})
	c.Send(jupyter.Shell, "comm_open", jupyter.CommOpen{CommID: "c2", TargetName: "nobody", Data: map[string]any{}})
	sync()
	info, err := c.CommInfo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Comms) != 1 || info.Comms["c1"].TargetName != "echo" {
		t.Errorf("comm_info = %+v", info)
	}
	mu.Lock()
	if strings.Join(got, ",") != "7" {
		t.Errorf("comm messages seen by the target = %v", got)
	}
	mu.Unlock()
	iomu.Lock()
	var kinds []string
	for _, m := range iopub {
		var cm jupyter.CommMsg
		_ = m.Decode(&cm)
		kinds = append(kinds, m.Type()+":"+cm.CommID)
	}
	iomu.Unlock()
	if strings.Join(kinds, " ") != "comm_msg:c1 comm_close:c2" {
		t.Errorf("kernel comm messages = %v, want echo on c1 and close of the unknown target c2", kinds)
	}

	// Kernel-side open, and a frontend close.
	kc, err := k.srv.Comms().Open("frontend.target", map[string]any{"hello": 1})
	if err != nil {
		t.Fatal(err)
	}
	c.Send(jupyter.Shell, "comm_close", jupyter.CommMsg{CommID: "c1", Data: map[string]any{}})
	sync()
	info, _ = c.CommInfo(ctx, "")
	if _, ok := info.Comms[kc.ID]; !ok || len(info.Comms) != 1 {
		t.Errorf("comm_info after close = %+v", info)
	}
	if err := kc.Close(nil); err != nil {
		t.Fatal(err)
	}
	if kc.Send(nil) == nil {
		t.Error("Send on a closed comm succeeded")
	}
}

// rawDealer connects a bare DEALER to the kernel's shell socket.
func rawDealer(t *testing.T, info jupyter.ConnectionInfo) zmq4.Socket {
	t.Helper()
	d := zmq4.NewDealer(context.Background(), zmq4.WithID(zmq4.SocketIdentity(jupyter.NewID())))
	if err := d.Dial(info.Endpoint(info.ShellPort)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// dealerExecute sends a signed execute_request for code on d and waits for
// its execute_reply on d. Messages from one peer are handled in the order
// sent, so every message d sent before has been handled when it returns;
// messages from different peers (d and a KernelClient) have no such order.
func dealerExecute(t *testing.T, d zmq4.Socket, signer *jupyter.Signer, code string) {
	t.Helper()
	m, _ := jupyter.NewMessage("client", "execute_request", nil, jupyter.NewExecuteRequest(code))
	frames, _ := m.Frames(signer)
	if err := d.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		for {
			msg, err := d.Recv()
			if err != nil {
				got <- err
				return
			}
			r, err := jupyter.ParseMessage(msg.Frames, signer)
			if err == nil && r.Type() == "execute_reply" && r.Parent.MsgID == m.Header.MsgID {
				got <- nil
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no execute_reply for %q on the raw socket", code)
	}
}

func TestBadSignatureIsNotExecuted(t *testing.T) {
	k := startKernel(t, nil)
	info := k.srv.ConnectionInfo()
	d := rawDealer(t, info)
	good, _ := jupyter.NewSigner("hmac-sha256", info.Key)
	wrong, _ := jupyter.NewSigner("hmac-sha256", "not the key")
	m, _ := jupyter.NewMessage("attacker", "execute_request", nil, jupyter.NewExecuteRequest("echo pwned"))
	frames, _ := m.Frames(wrong)
	if err := d.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		t.Fatal(err)
	}
	// A correctly signed request sent after it on the same socket is
	// answered; the bad one never ran.
	dealerExecute(t, d, good, "echo fine")
	if n := k.h.executed.Load(); n != 1 {
		t.Errorf("handler ran %d cells, want 1", n)
	}
	if !strings.Contains(k.log.String(), "bad message signature") {
		t.Errorf("bad signature not logged:\n%s", k.log.String())
	}

	// A replayed (correctly signed) message is dropped too.
	m, _ = jupyter.NewMessage("client", "execute_request", nil, jupyter.NewExecuteRequest("echo once"))
	frames, _ = m.Frames(good)
	d.Send(zmq4.NewMsgFrom(frames...))
	d.Send(zmq4.NewMsgFrom(frames...))
	dealerExecute(t, d, good, "echo sync")
	if n := k.h.executed.Load(); n != 3 {
		t.Errorf("handler ran %d cells, want 3 (replay dropped)", n)
	}
	if !strings.Contains(k.log.String(), "replayed message dropped") {
		t.Errorf("replay not logged:\n%s", k.log.String())
	}
}

func TestMalformedMessagesAreDropped(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	info := k.srv.ConnectionInfo()
	d := rawDealer(t, info)
	signer, _ := jupyter.NewSigner("hmac-sha256", info.Key)
	signed := func(header, parent, md, content string) [][]byte {
		return [][]byte{[]byte("<IDS|MSG>"), []byte(signer.Sign([]byte(header), []byte(parent), []byte(md), []byte(content))),
			[]byte(header), []byte(parent), []byte(md), []byte(content)}
	}
	hdr := `{"msg_id":"x1","msg_type":"execute_request","session":"s","username":"u","date":"","version":"5.3"}`
	cases := map[string][][]byte{
		"no delimiter":    {[]byte("hello"), []byte("world")},
		"wrong delimiter": {[]byte("<IDS|MSH>"), []byte(""), []byte("{}"), []byte("{}"), []byte("{}"), []byte("{}")},
		"missing frames":  {[]byte("<IDS|MSG>"), []byte("abc"), []byte("{}")},
		"bad json":        signed(`{"msg_id":`, "{}", "{}", "{}"),
		"content array":   signed(hdr, "{}", "{}", `[1,2]`),
		"no msg_type":     signed(`{"msg_id":"x2"}`, "{}", "{}", `{"code":"echo no"}`),
		"bad content":     signed(strings.Replace(hdr, "x1", "x3", 1), "{}", "{}", `{"code":5}`),
		"empty message":   {[]byte{}},
	}
	for name, frames := range cases {
		if err := d.Send(zmq4.NewMsgFrom(frames...)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// The decodable message with bad content gets an error reply.
	got := make(chan zmq4.Msg, 1)
	go func() {
		if m, err := d.Recv(); err == nil {
			got <- m
		}
	}()
	select {
	case zm := <-got:
		m, err := jupyter.ParseMessage(zm.Frames, signer)
		if err != nil {
			t.Fatal(err)
		}
		var rep jupyter.ExecuteReply
		_ = m.Decode(&rep)
		if m.Type() != "execute_reply" || rep.Status != "error" || rep.ErrorContent == nil || rep.Ename != "BadRequest" {
			t.Errorf("reply to bad content: %s %+v", m.Type(), rep)
		}
	case <-time.After(5 * time.Second):
		t.Error("no error reply to an execute_request with bad content")
	}
	// The others are logged and dropped (in the socket's goroutine; the
	// client below is another connection, so wait for the log).
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(k.log.String(), "message dropped") < 7 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := strings.Count(k.log.String(), "message dropped"); got != 7 {
		t.Errorf("%d drops logged, want 7:\n%s", got, k.log.String())
	}
	rep, _ := run(t, c, jupyter.NewExecuteRequest("echo still alive"), nil)
	if rep.Status != "ok" {
		t.Fatalf("kernel after malformed messages: %+v", rep)
	}
	if n := k.h.executed.Load(); n != 1 {
		t.Errorf("handler ran %d cells, want 1", n)
	}
}

func TestVanishedClientDoesNotBlockKernel(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	// Start a long-printing cell and drop the client in the middle.
	if _, err := c.Send(jupyter.Shell, "execute_request", jupyter.NewExecuteRequest("print 200000")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	c.Close()
	// A new client is served promptly.
	c2 := k.connect(t)
	rep, out := run(t, c2, jupyter.NewExecuteRequest("echo next"), nil)
	if rep.Status != "ok" || streamText(out, "stdout") != "next\n" {
		t.Errorf("after a vanished client: %+v %v", rep, types(out))
	}
}

func TestStalledPeerIsDropped(t *testing.T) {
	defer jupyter.SetStallTimeout(300 * time.Millisecond)()
	k := startKernel(t, func(c *jupyter.Config) {
		c.MaxStreamBuffer = 256 << 10
		c.FlushInterval = 5 * time.Millisecond
	})
	c := k.connect(t)
	info := k.srv.ConnectionInfo()
	// A subscriber whose owner never calls Recv: zmq4 stops reading its TCP
	// connection after ten messages (here at most 256 KiB each), so the
	// kernel's writes to it stall once the TCP buffers (a few MB) are full.
	stalled := zmq4.NewSub(context.Background())
	defer stalled.Close()
	if err := stalled.Dial(info.Endpoint(info.IOPubPort)); err != nil {
		t.Fatal(err)
	}
	stalled.SetOption(zmq4.OptionSubscribe, "")
	// Likewise a shell client that sends requests and never reads replies:
	// 16 MB of replies fill its TCP buffers.
	d := rawDealer(t, info)
	signer, _ := jupyter.NewSigner("hmac-sha256", info.Key)
	for range 256 {
		m, _ := jupyter.NewMessage("stalled", "inspect_request", nil, jupyter.InspectRequest{Code: "big"})
		frames, _ := m.Frames(signer)
		d.Send(zmq4.NewMsgFrom(frames...))
	}

	const mib = 12
	t0 := time.Now()
	var out []*jupyter.Message
	var mu sync.Mutex
	rep, err := c.Execute(timeout(t, 60*time.Second), jupyter.NewExecuteRequest(fmt.Sprintf("bulk %d", mib)),
		&jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
			mu.Lock()
			out = append(out, m)
			mu.Unlock()
		}})
	if err != nil || rep.Status != "ok" {
		t.Fatalf("reply %+v, %v", rep, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := len(streamText(out, "stdout")); got != mib<<20 {
		t.Errorf("got %d bytes of output, want %d", got, mib<<20)
	}
	if len(out) == 0 || out[len(out)-1].Type() != "status" {
		t.Errorf("iopub %v does not end with idle: output stalled behind the frozen peers", types(out))
	}
	if !strings.Contains(k.log.String(), "stopped reading") {
		t.Errorf("no frozen peer was dropped")
	}
	t.Logf("%d MiB past a frozen subscriber and a frozen shell client in %v", mib, time.Since(t0))
}

func TestShutdownRequest(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprint("restart=", restart), func(t *testing.T) {
			k := startKernel(t, nil)
			c := k.connect(t)
			var sawBroadcast bool
			var mu sync.Mutex
			cancel := c.SubscribeIOPub(func(m *jupyter.Message) {
				if m.Type() == "shutdown_reply" {
					mu.Lock()
					sawBroadcast = true
					mu.Unlock()
				}
			})
			defer cancel()
			if err := c.Shutdown(timeout(t, 5*time.Second), restart); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-k.served:
				k.served <- err
				if err != nil {
					t.Errorf("Serve = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not return after shutdown_request")
			}
			if k.srv.RestartRequested() != restart {
				t.Errorf("RestartRequested = %v", k.srv.RestartRequested())
			}
			k.h.mu.Lock()
			if len(k.h.shutdowns) != 1 || k.h.shutdowns[0] != restart {
				t.Errorf("Handler.Shutdown calls = %v", k.h.shutdowns)
			}
			k.h.mu.Unlock()
			mu.Lock()
			if !sawBroadcast {
				t.Error("shutdown_reply not broadcast on iopub")
			}
			mu.Unlock()
		})
	}
}

func TestShutdownOnShell(t *testing.T) {
	// Deprecated since 5.4 but still sent by old clients.
	k := startKernel(t, nil)
	c := k.connect(t)
	r, err := c.Request(timeout(t, 5*time.Second), jupyter.Shell, "shutdown_request", jupyter.ShutdownRequest{Restart: true})
	if err != nil {
		t.Fatal(err)
	}
	var rep jupyter.ShutdownReply
	if r.Decode(&rep); r.Type() != "shutdown_reply" || rep.Status != "ok" || !rep.Restart {
		t.Errorf("reply %s %+v", r.Type(), rep)
	}
	select {
	case err := <-k.served:
		k.served <- err
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestUnsignedKernel(t *testing.T) {
	// An empty key turns signing off on both sides.
	k := startKernel(t, func(c *jupyter.Config) { c.Connection.Key = "" })
	c := k.connect(t)
	rep, out := run(t, c, jupyter.NewExecuteRequest("echo plain"), nil)
	if rep.Status != "ok" || streamText(out, "stdout") != "plain\n" {
		t.Errorf("unsigned execute: %+v", rep)
	}
	d := rawDealer(t, k.srv.ConnectionInfo())
	m, _ := jupyter.NewMessage("raw", "kernel_info_request", nil, nil)
	frames, _ := m.Frames(nil)
	d.Send(zmq4.NewMsgFrom(frames...))
	zm, err := d.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if sig := zm.Frames[1]; len(sig) != 0 {
		t.Errorf("unsigned kernel sent signature %q", sig)
	}
}

func TestUnsupportedRequestGetsErrorReply(t *testing.T) {
	k := startKernel(t, nil)
	c := k.connect(t)
	r, err := c.Request(timeout(t, 5*time.Second), jupyter.Control, "debug_request", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var content jupyter.ErrorContent
	_ = r.Decode(&content)
	if r.Type() != "debug_reply" || content.Ename != "UnsupportedRequest" {
		t.Errorf("reply %s %+v", r.Type(), content)
	}
}

func TestHistoryPersists(t *testing.T) {
	path := t.TempDir() + "/history.jsonl"
	for session := 1; session <= 2; session++ {
		k := startKernel(t, func(c *jupyter.Config) { c.HistoryFile = path })
		c := k.connect(t)
		run(t, c, jupyter.NewExecuteRequest(fmt.Sprintf("result s%d", session)), nil)
		r, err := c.History(timeout(t, 5*time.Second), jupyter.HistoryRequest{HistAccessType: "tail", N: 10, Output: true})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r.History)
		want := map[int]string{1: `[[1,1,["result s1","s1"]]]`, 2: `[[1,1,["result s1","s1"]],[2,1,["result s2","s2"]]]`}[session]
		if string(b) != want {
			t.Errorf("session %d history = %s, want %s", session, b, want)
		}
		k.cancel()
		<-k.served
		k.served <- nil
	}
}

func TestClientErrors(t *testing.T) {
	info, err := jupyter.NewConnectionInfo("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := jupyter.Dial(ctx, info, nil); err == nil {
		t.Error("Dial to nothing succeeded")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial error = %v, want a deadline", err)
	}
	k := startKernel(t, nil)
	c := k.connect(t)
	c.Close()
	if _, err := c.KernelInfo(context.Background()); !errors.Is(err, jupyter.ErrClientClosed) {
		t.Errorf("KernelInfo on a closed client = %v", err)
	}
}

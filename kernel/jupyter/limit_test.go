package jupyter_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// TestMessageSizeLimit sends requests past the kernel's size limit on each
// socket: each is refused with an error reply naming the limit (where the
// protocol has a reply) and logged, and the kernel goes on serving.
func TestMessageSizeLimit(t *testing.T) {
	const limit = 1 << 20
	k := startKernel(t, func(c *jupyter.Config) { c.MaxMessage = limit })
	c := k.connect(t)
	big := strings.Repeat("x", limit+1)
	info := k.srv.ConnectionInfo()
	signer, _ := jupyter.NewSigner("hmac-sha256", info.Key)

	wantRefusal := func(t *testing.T, r *jupyter.Message, err error, replyType string) {
		t.Helper()
		if err != nil {
			t.Fatalf("no reply to the refused request: %v", err)
		}
		var content struct {
			Status string `json:"status"`
			jupyter.ErrorContent
		}
		_ = r.Decode(&content)
		if r.Type() != replyType || content.Status != jupyter.StatusError || content.Ename != "MessageTooLarge" ||
			!strings.Contains(content.Evalue, "limit of 1048576 bytes (1 MiB)") {
			t.Errorf("reply %s %+v; want an error naming the limit", r.Type(), content)
		}
	}
	t.Run("execute_request on shell", func(t *testing.T) {
		r, err := c.Request(timeout(t, 10*time.Second), jupyter.Shell, "execute_request", jupyter.NewExecuteRequest("echo "+big))
		wantRefusal(t, r, err, "execute_reply")
		if n := k.h.executed.Load(); n != 0 {
			t.Errorf("the handler ran %d cells, want 0", n)
		}
	})
	t.Run("kernel_info_request on control", func(t *testing.T) {
		r, err := c.Request(timeout(t, 10*time.Second), jupyter.Control, "kernel_info_request", map[string]any{"pad": big})
		wantRefusal(t, r, err, "kernel_info_reply")
	})
	t.Run("buffers adding up past the limit", func(t *testing.T) {
		d := rawDealer(t, info)
		m, _ := jupyter.NewMessage("client", "comm_info_request", nil, map[string]any{})
		for range 3 {
			m.Buffers = append(m.Buffers, []byte(big[:limit/2]))
		}
		frames, _ := m.Frames(signer)
		if err := d.Send(zmq4.NewMsgFrom(frames...)); err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := d.Recv()
			if err != nil {
				t.Fatal(err)
			}
			r, err := jupyter.ParseMessage(msg.Frames, signer)
			if err == nil && r.Parent.MsgID == m.Header.MsgID {
				wantRefusal(t, r, nil, "comm_info_reply")
				break
			}
		}
	})
	t.Run("heartbeat", func(t *testing.T) {
		req := zmq4.NewReq(context.Background())
		defer req.Close()
		if err := req.Dial(info.Endpoint(info.HBPort)); err != nil {
			t.Fatal(err)
		}
		if err := req.Send(zmq4.NewMsg([]byte(big))); err != nil {
			t.Fatal(err)
		}
		got := make(chan struct{})
		go func() {
			_, _ = req.Recv()
			close(got)
		}()
		select {
		case <-got:
			t.Error("the kernel echoed a heartbeat past the limit")
		case <-time.After(300 * time.Millisecond):
		}
	})

	// Logged, and the kernel still serves.
	for _, want := range []string{"channel=shell", "channel=control", "heartbeat dropped", "limit of 1048576 bytes"} {
		if !strings.Contains(k.log.String(), want) {
			t.Errorf("the log does not mention %q:\n%s", want, k.log.String())
		}
	}
	rep, out := run(t, c, jupyter.NewExecuteRequest("echo fine"), nil)
	if rep.Status != jupyter.StatusOK || streamText(out, "stdout") != "fine\n" {
		t.Errorf("after the refusals: %+v %q", rep, streamText(out, "stdout"))
	}
	if err := c.Ping(timeout(t, 5*time.Second)); err != nil {
		t.Errorf("heartbeat after the refusals: %v", err)
	}
}

// TestClientMessageSizeLimit has the kernel send the client messages past
// the client's limit: they are logged and dropped, the small ones arrive.
func TestClientMessageSizeLimit(t *testing.T) {
	k := startKernel(t, nil)
	var log testutil.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := jupyter.Dial(ctx, k.srv.ConnectionInfo(), &jupyter.ClientOptions{
		MaxMessage: 4096,
		Logger:     slog.New(slog.NewTextHandler(&log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.WaitForReady(ctx); err != nil {
		t.Fatal(err)
	}
	rep, out := run(t, c, jupyter.NewExecuteRequest("print 2000"), nil)
	if rep.Status != jupyter.StatusOK {
		t.Errorf("reply %+v", rep)
	}
	if text := streamText(out, "stdout"); len(text) > 4096 {
		t.Errorf("the client took %d bytes of output past its 4096-byte limit", len(text))
	}
	if !strings.Contains(log.String(), "limit of 4096 bytes") {
		t.Errorf("the client's log does not mention the limit:\n%s", log.String())
	}
	// A reply past the limit ends its request with an error at once (not
	// at the caller's timeout), and the client goes on working.
	ictx, icancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer icancel()
	_, err = c.Inspect(ictx, "big", 3, 0)
	var re *jupyter.ReplyError
	if !errors.As(err, &re) || re.Ename != "MessageTooLarge" || !strings.Contains(re.Evalue, "limit of 4096 bytes") {
		t.Errorf("inspecting with a 64 KiB reply: %v, want a MessageTooLarge reply error naming the limit", err)
	}
	if r, err := c.Inspect(ictx, "print", 3, 0); err != nil || !r.Found {
		t.Errorf("a small inspection afterwards: %+v, %v", r, err)
	}
}

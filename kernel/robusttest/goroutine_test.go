package robusttest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// TestGoroutinePanic: a panic in a goroutine a cell started does not end
// the kernel: it arrives as stderr of the cell that started the goroutine
// (on that cell's parent header, also after the cell finished), and the
// next cells run with the session's variables.
func TestGoroutinePanic(t *testing.T) {
	k := startKernel(t)
	k.ok("x := 41")

	r := k.ok("done := make(chan bool)\ngo func() {\n\tdefer close(done)\n\tpanic(\"from a goroutine\")\n}()\n<-done\ntime.Sleep(50 * time.Millisecond)")
	if !strings.Contains(r.stderr, "panic: from a goroutine [recovered by the kernel: in a goroutine started by cell ") {
		t.Errorf("the cell's stderr lacks the panic: %s", r)
	}

	// A goroutine that panics after its cell ended: the report's parent
	// is the starting cell's execute_request.
	var mu sync.Mutex
	byParent := map[string]string{} // msg_id → stderr text
	cancel := k.c.SubscribeIOPub(func(m *jupyter.Message) {
		var s jupyter.Stream
		if m.Type() == "stream" && m.Decode(&s) == nil && s.Name == "stderr" {
			mu.Lock()
			byParent[m.Parent.MsgID] += s.Text
			mu.Unlock()
		}
	})
	defer cancel()
	first := k.ok("release := make(chan bool)\ngo func(c chan bool) {\n\t<-c\n\tvar s []int\n\t_ = s[3]\n}(release)")
	second := k.ok("release <- true\ntime.Sleep(200 * time.Millisecond)")
	parentOf := func(r *result) string {
		for _, m := range r.msgs {
			return m.Parent.MsgID
		}
		return ""
	}
	firstID := parentOf(first)
	if firstID == "" {
		t.Fatal("the starting cell's IOPub messages are missing")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := byParent[firstID]
		mu.Unlock()
		if strings.Contains(got, "index out of range") || time.Now().After(deadline) {
			if !strings.Contains(got, "panic: ") || !strings.Contains(got, "index out of range") {
				t.Errorf("the starting cell got stderr %q, want the panic", got)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if second.stderr != "" {
		t.Errorf("the running cell got the report: %q", second.stderr)
	}
	k.expect("x + 1", "42")
}

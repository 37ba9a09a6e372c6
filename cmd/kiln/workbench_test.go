package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestMain lets the test binary stand in for kiln: with KILN_TEST_MAIN=1 it
// runs main, so `workbench` starts kernels with this same binary.
func TestMain(m *testing.M) {
	if os.Getenv("KILN_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestWorkbenchBrowserFallbackAndToken runs `kiln workbench` with no display:
// it falls back to browser mode, prints a URL with its token, refuses
// requests without the token (/, /api/call, /ws) and answers those with it,
// including live updates on the WebSocket, then stops cleanly on SIGINT.
func TestWorkbenchBrowserFallbackAndToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real kernel; skipped with -short")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cmd := exec.Command(self, "workbench", "--addr", "127.0.0.1:0", "--root", root)
	cmd.Env = append(os.Environ(), "KILN_TEST_MAIN=1", "DISPLAY=", "WAYLAND_DISPLAY=", "PATH="+root)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	errText := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stderr); errText <- string(b) }()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "Kiln workbench: "); ok {
				urls <- u
			}
		}
		close(urls)
	}()
	var url string
	select {
	case u, ok := <-urls:
		if !ok {
			cmd.Wait()
			t.Fatalf("kiln workbench exited without a URL: %s", <-errText)
		}
		url = u
	case <-time.After(2 * time.Minute):
		t.Fatal("no URL printed within 2 minutes")
	}
	base, token, ok := strings.Cut(url, "/?token=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || len(token) != 32 {
		t.Fatalf("printed URL %q: want http://127.0.0.1:PORT/?token=<32 hex digits>", url)
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", 403}, {"POST", "/api/call/server.info", 403}, {"GET", "/ws", 403},
		{"GET", "/?token=" + token, 200},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
	req, _ := http.NewRequest("POST", base+"/api/call/kernel.status", strings.NewReader("{}"))
	req.Header.Set("Authorization", "token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Result struct{ Status string } `json:"result"`
	}
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != 200 || answer.Result.Status == "" {
		t.Errorf("kernel.status with the token: %d %+v", resp.StatusCode, answer)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	if _, resp, err := websocket.Dial(ctx, wsURL, nil); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("WebSocket without the token: %v (response %v), want 403", err, resp)
	}
	ws, _, err := websocket.Dial(ctx, wsURL+"?token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	_, frame, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		Topic string
		Data  map[string]any
	}
	if err := json.Unmarshal(frame, &first); err != nil || first.Topic != "kernel.status" || first.Data["status"] == nil {
		t.Errorf("first frame %s (%v): want a kernel.status", frame, err)
	}

	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("kiln workbench after SIGINT: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("kiln workbench did not stop within 20 s of SIGINT")
	}
	if msg := <-errText; !strings.Contains(msg, "serving the UI to a browser instead") {
		t.Errorf("no fallback message on stderr: %q", msg)
	}
}

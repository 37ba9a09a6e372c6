package robusttest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// kilnBinary is the kiln command built by the first test that needs one;
// skipWhy says why there is none (no go command), buildFailure why
// building failed.
var (
	buildOnce                         sync.Once
	buildDir                          string
	kilnBinary, skipWhy, buildFailure string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildKiln builds cmd/kiln with the go command (go test puts its own first
// on PATH); KILN_BINARY names a prebuilt kiln instead. It stats the
// module's source files so that go test's result cache notices changes to
// the kernel's code (the build itself runs in another process).
func buildKiln() {
	if b := os.Getenv("KILN_BINARY"); b != "" {
		kilnBinary = b
		return
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		skipWhy = "the go command is not on PATH to build cmd/kiln (or set KILN_BINARY to a built kiln)"
		return
	}
	root, err := exec.Command(goCmd, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		buildFailure = fmt.Sprintf("go list -m: %v", err)
		return
	}
	_ = filepath.WalkDir(strings.TrimSpace(string(root)), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum") {
			_, _ = os.Stat(path)
		}
		return nil
	})
	if buildDir, err = os.MkdirTemp("", "kiln-robusttest-"); err != nil {
		buildFailure = err.Error()
		return
	}
	out := filepath.Join(buildDir, "kiln")
	cmd := exec.Command(goCmd, "build", "-o", out, "github.com/kiln-ml/kiln/cmd/kiln")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		buildFailure = fmt.Sprintf("go build ./cmd/kiln: %v\n%s", err, msg)
		return
	}
	kilnBinary = out
}

func needKiln(t *testing.T) {
	t.Helper()
	buildOnce.Do(buildKiln)
	if buildFailure != "" {
		t.Fatal(buildFailure)
	}
	if kilnBinary == "" {
		t.Skip(skipWhy)
	}
}

// kernelSpec is the spec `kiln kernel install` writes.
func kernelSpec() jupyter.KernelSpec {
	return jupyter.KernelSpec{
		Argv:          []string{kilnBinary, "kernel", "run", "-f", "{connection_file}"},
		DisplayName:   "Go (Kiln)",
		Language:      "go",
		InterruptMode: "message",
	}
}

// kern is a kiln kernel process with a connected client.
type kern struct {
	t      *testing.T
	p      *jupyter.KernelProcess
	c      *jupyter.KernelClient
	stderr *testutil.Buffer
	env    []string
}

// startKernel starts `kiln kernel run` with extra environment entries and
// connects to it; both are stopped when the test ends.
func startKernel(t *testing.T, env ...string) *kern {
	t.Helper()
	needKiln(t)
	k := &kern{t: t, stderr: &testutil.Buffer{}, env: env}
	k.start()
	t.Cleanup(func() {
		if k.c != nil {
			k.c.Close()
		}
		if k.p != nil {
			k.p.Kill()
		}
		if t.Failed() {
			se := k.stderr.String()
			t.Logf("kernel stderr (last 8 KiB of %d bytes):\n%s", len(se), se[max(0, len(se)-8<<10):])
		}
	})
	return k
}

func (k *kern) start() {
	k.t.Helper()
	p, err := jupyter.StartKernel(jupyter.StartOptions{Spec: kernelSpec(), Env: k.env, Stderr: k.stderr})
	if err != nil {
		k.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := p.Connect(ctx, nil)
	if err != nil {
		p.Kill()
		k.t.Fatalf("connect to the kernel: %v\nstderr:\n%s", err, p.Stderr())
	}
	k.p, k.c = p, c
}

// restart replaces a dead (or live) kernel by a new process with the same
// options, as a front end's "restart kernel" does.
func (k *kern) restart() {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var c *jupyter.KernelClient
	if k.p.Err() == nil {
		c = k.c
	} else {
		k.c.Close()
	}
	np, nc, err := k.p.Restart(ctx, c, 2*time.Second)
	if err != nil {
		k.t.Fatalf("restart: %v", err)
	}
	k.p, k.c = np, nc
}

// result is what one execution produced.
type result struct {
	reply  jupyter.ExecuteReply
	msgs   []*jupyter.Message
	err    error
	took   time.Duration
	stdout string
	stderr string
}

func (r *result) collect(m *jupyter.Message) {
	r.msgs = append(r.msgs, m)
	if m.Type() == "stream" {
		var s jupyter.Stream
		if m.Decode(&s) == nil {
			if s.Name == "stderr" {
				r.stderr += s.Text
			} else {
				r.stdout += s.Text
			}
		}
	}
}

// count returns how many IOPub messages of msgType the execution produced.
func (r *result) count(msgType string) int {
	n := 0
	for _, m := range r.msgs {
		if m.Type() == msgType {
			n++
		}
	}
	return n
}

// text returns the text/plain of the execution's execute_result.
func (r *result) text() string {
	for _, m := range r.msgs {
		if m.Type() == "execute_result" {
			var c jupyter.ExecuteResultContent
			if m.Decode(&c) == nil {
				s, _ := c.Data["text/plain"].(string)
				return s
			}
		}
	}
	return ""
}

func (r *result) String() string {
	if r.err != nil {
		return "transport error: " + r.err.Error()
	}
	s := "status " + r.reply.Status
	if r.reply.ErrorContent != nil {
		s += fmt.Sprintf(" (%s: %s)", r.reply.Ename, r.reply.Evalue)
	}
	return s + fmt.Sprintf("; stdout %q; stderr %q; result %q", clip(r.stdout), clip(r.stderr), r.text())
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:150] + "…" + s[len(s)-150:]
	}
	return s
}

// exec runs code and waits at most timeout for its reply and output.
func (k *kern) exec(code string, timeout time.Duration) *result {
	return k.execReq(jupyter.NewExecuteRequest(code), timeout, nil)
}

func (k *kern) execReq(req jupyter.ExecuteRequest, timeout time.Duration, h *jupyter.ExecuteHandlers) *result {
	r := &result{}
	var mu sync.Mutex
	hs := jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
		mu.Lock()
		r.collect(m)
		mu.Unlock()
	}}
	if h != nil {
		hs.Input = h.Input
		if h.Output != nil {
			inner := hs.Output
			hs.Output = func(m *jupyter.Message) { inner(m); h.Output(m) }
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	rep, err := k.c.Execute(ctx, req, &hs)
	mu.Lock()
	defer mu.Unlock()
	r.reply, r.err, r.took = rep, err, time.Since(start)
	return r
}

// ok runs code, fails the test unless it succeeds, and returns its result.
func (k *kern) ok(code string) *result {
	k.t.Helper()
	r := k.exec(code, 30*time.Second)
	if r.err != nil || r.reply.Status != jupyter.StatusOK {
		k.t.Fatalf("cell %q: %s", code, r)
	}
	return r
}

// expect runs code and fails the test unless its execute_result shows want.
func (k *kern) expect(code, want string) {
	k.t.Helper()
	if got := k.ok(code).text(); got != want {
		k.t.Fatalf("cell %q shows %q, want %q", code, got, want)
	}
}

// cellError runs code and fails the test unless it ends in an error reply;
// it returns the reply's error content.
func (k *kern) cellError(code string, timeout time.Duration) *result {
	k.t.Helper()
	r := k.exec(code, timeout)
	if r.err != nil || r.reply.Status != jupyter.StatusError || r.reply.ErrorContent == nil {
		k.t.Fatalf("cell %q: %s; want an error reply", code, r)
	}
	if r.count("error") != 1 {
		k.t.Errorf("cell %q: %d iopub error messages, want 1", code, r.count("error"))
	}
	return r
}

// killSignal is what the out-of-memory killer sends.
var killSignal = syscall.SIGKILL

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

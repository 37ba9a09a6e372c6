//go:build linux

package kerneltest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKernelOutlivesNoClient kills a jupyter_client process that started a
// kernel, without a shutdown_request (as `timeout` or a crash would), and
// checks that the kernel exits by itself (it watches its parent, as
// JPY_PARENT_PID asks).
func TestKernelOutlivesNoClient(t *testing.T) {
	requirePython(t, "python3-jupyter-client", "jupyter_client")
	t.Parallel()
	k := kernel(t)
	const script = `import sys, time
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name=sys.argv[1])
print("PID", km.provisioner.process.pid, flush=True)
time.sleep(60)
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, "-c", script, kernelName)
	cmd.Env = k.env
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the client printed no kernel pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "PID")))
	if err != nil {
		t.Fatalf("bad pid line %q", line)
	}
	if !running(pid) {
		t.Fatalf("kernel %d is not running while its client is", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			_ = syscallKill(pid)
			t.Fatalf("kernel %d still runs 10 s after its client was killed", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running reports whether pid is a live process (a zombie counts as gone:
// nobody may reap it where init does not).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

package robusttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// debianPython is Debian's interpreter, where python3-jupyter-client is
// installed (a python3 earlier on PATH may lack it).
const debianPython = "/usr/bin/python3"

// TestJupyterClient runs testdata/robust_check.py: Jupyter's own client
// library starts the kernel from the kernelspec `kiln kernel install`
// writes, interrupts a cell, sends a request with a forged signature,
// answers stdin, and restarts the kernel after a fatal crash.
func TestJupyterClient(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s not found: install python3 and python3-jupyter-client to run this test", debianPython)
	}
	if out, err := exec.Command(debianPython, "-c", "import jupyter_client, zmq").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import jupyter_client and zmq (apt-get install python3-jupyter-client): %s", debianPython, out)
	}
	needKiln(t)
	dir := t.TempDir()
	if out, err := exec.Command(kilnBinary, "kernel", "install", "--prefix", dir, "--name", "kiln-robust").CombinedOutput(); err != nil {
		t.Fatalf("kiln kernel install: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stderr := filepath.Join(dir, "kernel-stderr.txt")
	cmd := exec.CommandContext(ctx, debianPython, "testdata/robust_check.py", "kiln-robust", stderr)
	cmd.Env = append(os.Environ(), "JUPYTER_PATH="+filepath.Join(dir, "share", "jupyter"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"), "PYDEVD_DISABLE_FILE_VALIDATION=1")
	// A kernel orphaned by a failed script must not hold the output open.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("robust_check.py:\n%s", out)
	if err != nil || !strings.Contains(string(out), "ALL PASSED") {
		se, _ := os.ReadFile(stderr)
		t.Fatalf("jupyter_client checks failed: %v\nkernel stderr:\n%s", err, clip(string(se)))
	}
}

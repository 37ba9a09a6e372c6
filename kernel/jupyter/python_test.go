package jupyter_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// debianPython is Debian's interpreter, where python3-jupyter-client is
// installed (a python3 earlier on PATH may lack it).
const debianPython = "/usr/bin/python3"

// TestJupyterClient drives the server with Jupyter's own client library:
// testdata/jupyter_client_check.py runs every check against a fakeHandler.
func TestJupyterClient(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s not found: install python3 and python3-jupyter-client to run this test", debianPython)
	}
	if out, err := exec.Command(debianPython, "-c", "import jupyter_client").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import jupyter_client (apt-get install python3-jupyter-client): %s", debianPython, out)
	}
	k := startKernel(t, nil)
	cf := filepath.Join(t.TempDir(), "kernel.json")
	if err := k.srv.ConnectionInfo().WriteFile(cf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, "testdata/jupyter_client_check.py", cf)
	cmd.Env = append(os.Environ(), "PYDEVD_DISABLE_FILE_VALIDATION=1")
	out, err := cmd.CombinedOutput()
	t.Logf("jupyter_client_check.py:\n%s", out)
	if err != nil {
		t.Fatalf("jupyter_client checks failed: %v", err)
	}
	if !strings.Contains(string(out), "ALL PASSED") {
		t.Fatal("jupyter_client checks did not finish")
	}
	select {
	case err := <-k.served:
		k.served <- err
	case <-time.After(5 * time.Second):
		t.Error("Serve did not return after the client's shutdown_request")
	}
	k.h.mu.Lock()
	defer k.h.mu.Unlock()
	if slices.Contains(k.h.codes, "echo forged") {
		t.Error("a request with a forged signature was executed")
	}
	if slices.Contains(k.h.codes, "echo queued 1") {
		t.Error("a cell queued behind a failure was executed")
	}
}

// TestKernelConformance runs Jupyter's conformance suite, jupyter_kernel_test,
// with jupyter_client's KernelManager starting this test binary as a kernel
// process from a kernelspec (interrupt_mode "message"), as Jupyter would.
func TestKernelConformance(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s not found: install python3-jupyter-kernel-test to run this test", debianPython)
	}
	if out, err := exec.Command(debianPython, "-c", "import jupyter_kernel_test").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import jupyter_kernel_test (apt-get install python3-jupyter-kernel-test): %s", debianPython, out)
	}
	dir := t.TempDir()
	spec := fakeKernelSpec(t, "message")
	if err := jupyter.WriteKernelSpec(filepath.Join(dir, "kernels", "kiln-fake"), spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, "testdata/kernel_conformance.py")
	cmd.Env = append(os.Environ(), "JUPYTER_PATH="+dir, "JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"),
		"PYDEVD_DISABLE_FILE_VALIDATION=1")
	out, err := cmd.CombinedOutput()
	t.Logf("kernel_conformance.py:\n%s", out)
	if err != nil {
		t.Fatalf("conformance suite failed: %v", err)
	}
	if strings.Contains(string(out), "skipped") {
		t.Errorf("the conformance suite skipped tests")
	}
}

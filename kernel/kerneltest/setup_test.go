package kerneltest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// debianPython is Debian's interpreter, where the Jupyter packages are
// installed; a python3 earlier on PATH may be another one without them.
const debianPython = "/usr/bin/python3"

// kernelName is the kernelspec name the tests install, the one notebooks
// name in their metadata.
const kernelName = "kiln"

// kilnKernel is the built binary with its kernelspec installed.
type kilnKernel struct {
	root string   // the repository
	dir  string   // temporary directory holding everything below
	bin  string   // the kiln binary
	env  []string // environment for Jupyter's tools
}

var (
	setupOnce sync.Once
	setupDir  string
	installed *kilnKernel
	setupErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if setupDir != "" {
		os.RemoveAll(setupDir)
	}
	os.Exit(code)
}

// requirePython skips the test unless debianPython exists and imports every
// module; apt names the Debian packages providing them.
func requirePython(t testing.TB, apt string, modules ...string) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s not found: apt-get install python3 %s (or make deps) to run this test", debianPython, apt)
	}
	code := "import " + strings.Join(modules, ", ")
	if out, err := exec.Command(debianPython, "-c", code).CombinedOutput(); err != nil {
		t.Skipf("%s cannot %q: apt-get install %s (or make deps) to run this test\n%s", debianPython, code, apt, out)
	}
}

// kernel builds bin/kiln and installs its kernelspec, once for all tests.
func kernel(t testing.TB) *kilnKernel {
	t.Helper()
	setupOnce.Do(func() { installed, setupErr = setup() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return installed
}

func setup() (*kilnKernel, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return nil, fmt.Errorf("repository root not found at %s: %w", root, err)
	}
	setupDir, err = os.MkdirTemp("", "kiln-kerneltest-")
	if err != nil {
		return nil, err
	}
	k := &kilnKernel{root: root, dir: setupDir, bin: filepath.Join(setupDir, "kiln")}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = "/usr/local/go/bin/go"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool, "build", "-o", k.bin, "./cmd/kiln")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/kiln: %v\n%s", err, out)
	}

	data := filepath.Join(setupDir, "jupyter-data")
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "JUPYTER_") && name != "KILN_KERNEL_NAME" && name != "PYTHONPATH" {
			env = append(env, kv)
		}
	}
	env = append(env, // later entries win
		"JUPYTER_DATA_DIR="+data,
		"JUPYTER_PATH="+data, // searched before the user's and system directories
		"JUPYTER_RUNTIME_DIR="+filepath.Join(setupDir, "jupyter-runtime"),
		"JUPYTER_CONFIG_DIR="+filepath.Join(setupDir, "jupyter-config"),
		"PYDEVD_DISABLE_FILE_VALIDATION=1",
		"PYTHONDONTWRITEBYTECODE=1", // no __pycache__ in the source tree
		"KILN_KERNEL_NAME="+kernelName,
		// The runs the notebooks train register here, not in the user's registry.
		"KILN_RUN_REGISTRY="+filepath.Join(setupDir, "run-registry"),
	)
	if os.Getenv("KILN_NOTEBOOK_SUBSET") == "" {
		env = append(env, "KILN_NOTEBOOK_SUBSET="+notebookSubset)
	}
	k.env = env
	install := exec.CommandContext(ctx, k.bin, "kernel", "install", "--name", kernelName)
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kiln kernel install: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "kernels", kernelName, "kernel.json")); err != nil {
		return nil, fmt.Errorf("kiln kernel install wrote no kernelspec: %w", err)
	}
	return k, nil
}

// run runs a Jupyter tool with the kernel's environment in dir, killing it
// (and everything in its process group) after timeout. The kernels it starts
// stop by themselves once it is gone (they watch their parent).
func (k *kilnKernel) run(t *testing.T, dir string, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = k.env
	killGroup(cmd)
	// A kernel that outlives its client must not keep Wait waiting on the
	// output pipe.
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%s timed out after %s: %w", filepath.Base(name), timeout, err)
	}
	t.Logf("%s %s: %s", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return out.String(), err
}

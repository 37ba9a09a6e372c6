package onnx_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// checkerScript checks each model path read from stdin with onnx.checker
// (full_check) and answers one line per path: "ok OPSET OP…" (the default
// domain's opset and the graph's operator types) or "error MESSAGE".
const checkerScript = `import sys, onnx
print("ready", flush=True)
for line in sys.stdin:
    p = line.rstrip("\n")
    try:
        m = onnx.load(p)
        onnx.checker.check_model(m, full_check=True)
        opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
        print("ok", opset[0] if opset else 0, " ".join(sorted(set(n.op_type for n in m.graph.node))), flush=True)
    except Exception as e:
        print("error", repr(e).replace("\n", " "), flush=True)
`

// checker is one python3 process, started on first use and shared by every
// test of the binary (starting the interpreter and importing onnx takes
// about a second); it ends when the test binary closes its stdin at exit.
var checker struct {
	once sync.Once
	mu   sync.Mutex
	ok   bool
	in   io.Writer
	out  *bufio.Reader
}

// pythonONNX reports whether Debian's python3-onnx can check models.
func pythonONNX(t *testing.T) bool {
	checker.once.Do(func() {
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			return
		}
		cmd := exec.Command("/usr/bin/python3", "-c", checkerScript)
		in, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return
		}
		if cmd.Start() != nil {
			return
		}
		checker.in, checker.out = in, bufio.NewReader(out)
		line, err := checker.out.ReadString('\n')
		checker.ok = err == nil && line == "ready\n"
	})
	return checker.ok
}

// checkModel runs onnx.checker (full_check) on path and returns the model's
// default-domain opset and the operator types its graph holds; it fails t
// when the checker refuses the file. Call it only when pythonONNX is true.
func checkModel(t *testing.T, path string) (opset string, ops []string) {
	t.Helper()
	if strings.ContainsRune(path, '\n') {
		t.Fatalf("model path %q holds a newline", path)
	}
	checker.mu.Lock()
	_, err := io.WriteString(checker.in, path+"\n")
	var line string
	if err == nil {
		line, err = checker.out.ReadString('\n')
	}
	checker.mu.Unlock()
	if err != nil {
		t.Fatalf("onnx.checker process: %v", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "ok" {
		t.Fatalf("onnx.checker refuses %s: %s", path, strings.TrimSpace(line))
	}
	return f[1], f[2:]
}

// checkONNX runs onnx.checker (full_check) on path where python3-onnx is
// installed and fails unless the graph holds ops.
func checkONNX(t *testing.T, path string, ops []string) {
	t.Helper()
	if !pythonONNX(t) {
		return
	}
	_, held := checkModel(t, path)
	for _, op := range ops {
		found := false
		for _, h := range held {
			found = found || h == op
		}
		if !found {
			t.Errorf("the graph has no %s node: %v", op, held)
		}
	}
}

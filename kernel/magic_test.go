package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/kiln-ml/kiln/backends/strict" // the strict device for %device
	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/tensor"
)

// execOut runs a cell and returns its text/plain result, its stdout and
// stderr, and its error.
func execOut(s *kernel.Session, code string) (res, stdout, stderr string, err error) {
	var out, errOut strings.Builder
	o := kernel.OutputFuncs{OnStream: func(st kernel.Stream, text string) {
		if st == kernel.Stdout {
			out.WriteString(text)
		} else {
			errOut.WriteString(text)
		}
	}}
	d, err := s.Execute(context.Background(), code, o)
	if d != nil {
		res = fmt.Sprint(d.Data[display.MIMETypeText])
	}
	return res, out.String(), errOut.String(), err
}

func TestMagicHelpListsMagics(t *testing.T) {
	s := newSession(t, kernel.Options{})
	res, _, _, err := execOut(s, "%help")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"%device", "%reset", "%%time", "%env", "!COMMAND", "%load", "%who", "loop variable"} {
		if !strings.Contains(res, m) {
			t.Errorf("%%help does not mention %s", m)
		}
	}
}

func TestMagicTime(t *testing.T) {
	s := newSession(t, kernel.Options{})
	res, out, _, err := execOut(s, "%time 6 * 7")
	if err != nil || res != "42" || !strings.HasPrefix(out, "Wall time: ") {
		t.Errorf("%%time 6*7: result %q, stdout %q, err %v", res, out, err)
	}
	res, out, _, err = execOut(s, "%%time\nx := 20\nx + 22")
	if err != nil || res != "42" || !strings.Contains(out, "Wall time: ") {
		t.Errorf("%%%%time cell: result %q, stdout %q, err %v", res, out, err)
	}
	// The cell's variables persist, and errors keep the cell's line numbers.
	if got := run(t, s, "x"); got != "20" {
		t.Errorf("x after %%%%time = %q", got)
	}
	e := fails(t, s, "%%time\ny := 1\nundefinedThing(y)")
	if !strings.Contains(strings.Join(e.Traceback, "\n")+e.Value, "3:") {
		t.Errorf("error of a %%%%time cell does not name line 3: %s %v", e.Value, e.Traceback)
	}
	if e := fails(t, s, "%time"); e.Name != "UsageError" {
		t.Errorf("%%time without code: %s", e.Name)
	}
}

func TestMagicDevice(t *testing.T) {
	s := newSession(t, kernel.Options{})
	t.Cleanup(tensor.ResetDefaultDevice)
	res, _, _, err := execOut(s, "%device")
	if err != nil || !strings.Contains(res, "default device:") || !strings.Contains(res, "cpu") {
		t.Errorf("%%device = %q, %v", res, err)
	}
	if _, _, _, err := execOut(s, "%device strict"); err != nil {
		t.Fatalf("%%device strict: %v", err)
	}
	if got := run(t, s, "dev, _ := tensor.DefaultDevice()", "tensor.Zeros(dev, 2).Device().String()"); !strings.HasPrefix(got, "strict") {
		t.Errorf("after %%device strict, new tensors are on %q", got)
	}
	if e := fails(t, s, "%device tpu:3"); e.Name != "UsageError" || !strings.Contains(e.Value, "tpu") {
		t.Errorf("%%device tpu:3: %s: %s", e.Name, e.Value)
	}
}

func TestMagicReset(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "x := 1\nfunc f() int { return 2 }\nbig := tensor.Zeros(tensor.CPU(), 1000)")
	if _, _, _, err := execOut(s, "%reset"); err != nil {
		t.Fatal(err)
	}
	if e := fails(t, s, "x"); !strings.Contains(e.Value, "undefined") {
		t.Errorf("x after %%reset: %s: %s", e.Name, e.Value)
	}
	// A fresh namespace: x may be declared with another type, ctx works.
	if got := run(t, s, `x := "new"`, `func f() string { return x }`, "f()"); got != "new" {
		t.Errorf("after %%reset f() = %q", got)
	}
	if got := run(t, s, "ctx.Err() == nil"); got != "true" {
		t.Errorf("ctx after %%reset: %q", got)
	}
}

func TestMagicEnv(t *testing.T) {
	s := newSession(t, kernel.Options{Env: []string{"HOME=/nowhere", "PATH=" + os.Getenv("PATH")}})
	t.Cleanup(func() { os.Unsetenv("KILN_MAGIC_TEST") })
	res, _, _, err := execOut(s, "%env")
	if err != nil || !strings.Contains(res, "HOME=/nowhere") {
		t.Errorf("%%env = %q, %v", res, err)
	}
	if _, out, _, err := execOut(s, "%env KILN_MAGIC_TEST = a b"); err != nil || !strings.Contains(out, "KILN_MAGIC_TEST=a b") {
		t.Errorf("%%env set: %q, %v", out, err)
	}
	if got := run(t, s, `os.Getenv("KILN_MAGIC_TEST")`); got != "a b" {
		t.Errorf("cells see KILN_MAGIC_TEST=%q", got)
	}
	if os.Getenv("KILN_MAGIC_TEST") != "a b" {
		t.Errorf("compiled code does not see the variable that %%env set")
	}
	if res, _, _, err := execOut(s, "%env HOME"); err != nil || res != "/nowhere" {
		t.Errorf("%%env HOME = %q, %v", res, err)
	}
	if e := fails(t, s, "%env NOT_SET_ANYWHERE"); e.Name != "UsageError" {
		t.Errorf("%%env of an unset variable: %s", e.Name)
	}
}

func TestMagicShell(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "%env KILN_SHELL_TEST=seen")
	t.Cleanup(func() { os.Unsetenv("KILN_SHELL_TEST") })
	_, out, errOut, err := execOut(s, "!echo one\n!echo $KILN_SHELL_TEST; echo two >&2")
	if err != nil || out != "one\nseen\n" || errOut != "two\n" {
		t.Errorf("! lines: stdout %q, stderr %q, err %v", out, errOut, err)
	}
	_, out, _, err = execOut(s, "!exit 3\n!echo never")
	if e, ok := err.(*kernel.Error); !ok || e.Name != "CommandError" || !strings.Contains(e.Value, "exit status 3") || out != "" {
		t.Errorf("failing command: %v, stdout %q", err, out)
	}
	if e := fails(t, s, "!echo a\nx := 1"); e.Name != "UsageError" {
		t.Errorf("Go in a ! cell: %s", e.Name)
	}
	// Interrupting kills the command and its children.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Execute(ctx, "!sleep 30 | cat", nil)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("interrupted command: %v after %v", err, time.Since(start))
	}
}

func TestMagicLoadAndWho(t *testing.T) {
	s := newSession(t, kernel.Options{})
	dir := t.TempDir()
	file := filepath.Join(dir, "model.go")
	if err := os.WriteFile(file, []byte("w := tensor.Ones(tensor.CPU(), 3, 4)\nn := 7\nfunc double(x int) int { return 2 * x }\ndouble(n)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run(t, s, "%load "+file); got != "14" {
		t.Errorf("%%load result = %q", got)
	}
	res, _, _, err := execOut(s, "%who")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"n ", "int", "7", "w ", "[3 4] float32 on cpu", "48 B"} {
		if !strings.Contains(res, want) {
			t.Errorf("%%who lacks %q:\n%s", want, res)
		}
	}
	if strings.Contains(res, "__kiln") || strings.Contains(res, "ctx") {
		t.Errorf("%%who lists the session's own names:\n%s", res)
	}
	if e := fails(t, s, "%load "+filepath.Join(dir, "missing.go")); e.Name != "UsageError" || !strings.Contains(e.Value, "missing.go") {
		t.Errorf("%%load of a missing file: %s: %s", e.Name, e.Value)
	}
}

func TestMagicJSONListings(t *testing.T) {
	s := newSession(t, kernel.Options{})
	run(t, s, "w := tensor.ArangeOf(tensor.CPU(), tensor.Float32, 0, 12, 1).Reshape(3, 4)\nm := nn.NewLinear(tensor.CPU(), 4, 2)\nn := 7\n"+
		"dev := tensor.CPU()\ntype point struct{ X, Y int }\np := &point{1, 2}\nxs := []int{1, 2, 3}\nseq := nn.NewSequential(nn.NewLinear(dev, 1000, 300), nn.ReLU{})\none := tensor.Scalar(dev, 2.5)")
	res, _, _, err := execOut(s, "%who --json")
	if err != nil {
		t.Fatal(err)
	}
	var vars []kernel.VariableInfo
	if err := json.Unmarshal([]byte(res), &vars); err != nil {
		t.Fatalf("%%who --json: %v in %s", err, res)
	}
	byName := map[string]kernel.VariableInfo{}
	for _, v := range vars {
		byName[v.Name] = v
	}
	if w := byName["w"]; fmt.Sprint(w.Shape) != "[3 4]" || w.DType != "float32" || w.Device != "cpu" || w.Bytes != 48 {
		t.Errorf("w: %+v", w)
	}
	if m := byName["m"]; m.Params != 10 {
		t.Errorf("m: %+v, want 10 parameters", m)
	}
	if n := byName["n"]; n.Type != "int" || n.Value != "7" {
		t.Errorf("n: %+v", n)
	}
	// One-line summaries: a tensor's first values (its first row), a
	// model's parameter count, a device's name, a length; a plain struct
	// pointer gets none rather than a dump of addresses.
	for name, want := range map[string]string{
		"w":   "[3 4] float32 on cpu, 48 B: 0, 1, 2, 3, …",
		"m":   "module, 10 parameters",
		"seq": "module, 300,300 parameters",
		"dev": "cpu",
		"xs":  "len 3",
		"p":   "",
		"one": "[] float32 on cpu, 4 B: 2.5",
	} {
		if got := byName[name].Value; got != want {
			t.Errorf("%s: value %q, want %q", name, got, want)
		}
	}
	res, _, _, err = execOut(s, "%device --json")
	if err != nil {
		t.Fatal(err)
	}
	var devs []kernel.DeviceInfo
	if err := json.Unmarshal([]byte(res), &devs); err != nil || len(devs) < 2 || devs[0].Name != "cpu" || devs[len(devs)-1].Name != "strict" {
		t.Fatalf("%%device --json: %v %s", err, res)
	}
}

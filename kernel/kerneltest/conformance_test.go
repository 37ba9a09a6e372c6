package kerneltest_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConformance runs kernel/testdata/test_kiln_kernel.py with Python's
// unittest against the installed kernel and reports each Python test as a
// subtest. Every sample of jupyter_kernel_test is filled in, so a skipped
// Python test fails too.
func TestConformance(t *testing.T) {
	requirePython(t, "python3-jupyter-client python3-jupyter-kernel-test", "jupyter_client", "jupyter_kernel_test")
	t.Parallel()
	k := kernel(t)
	out, err := k.run(t, k.root, 100*time.Second, debianPython, "-m", "unittest", "-v", "kernel/testdata/test_kiln_kernel.py")
	res := parseUnittest(out)
	if len(res.order) == 0 || res.ran != len(res.order) {
		t.Fatalf("unittest output not understood (ran %d, parsed %d tests; %v):\n%s", res.ran, len(res.order), err, out)
	}
	for _, name := range res.order {
		t.Run(name, func(t *testing.T) {
			for _, st := range res.status[name] {
				switch {
				case st == "ok":
				case strings.HasPrefix(st, "skipped"):
					t.Errorf("%s: every sample is given, nothing should be skipped", st)
				default:
					t.Errorf("%s\n%s", st, strings.Join(res.details[name], "\n"))
				}
			}
		})
	}
	if err != nil || !res.ok {
		t.Errorf("unittest did not pass (%v); its output:\n%s", err, out)
	}
}

// unittestResult is what `python -m unittest -v` printed.
type unittestResult struct {
	order   []string            // test names (Class.test_method), in order
	status  map[string][]string // ok, FAIL, ERROR, skipped '…', per test and subtest
	details map[string][]string // the traceback blocks of failures
	ran     int                 // from "Ran N tests"
	ok      bool                // the final line says OK
}

var (
	// "test_x (pkg.mod.Class.test_x) ... ok", or for subtests
	// "  test_x (pkg.mod.Class.test_x) (code='…') ... FAIL". A test with
	// subtests may print " ... " and its subtests' lines follow.
	unittestLine = regexp.MustCompile(`(?m)^\s*(test\w*) \(([\w.]+)\)(?: \(.*\))? \.\.\. ?(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)?\s*$`)
	unittestRan  = regexp.MustCompile(`(?m)^Ran (\d+) tests? in `)
	unittestEnd  = regexp.MustCompile(`(?m)^(OK|FAILED)\b.*$`)
	// "FAIL: test_x (pkg.mod.Class.test_x)" heads a traceback block.
	unittestHead = regexp.MustCompile(`(?m)^(FAIL|ERROR): (test\w*) \(([\w.]+)\)`)
)

func parseUnittest(out string) unittestResult {
	res := unittestResult{status: map[string][]string{}, details: map[string][]string{}}
	key := func(method, qual string) string {
		parts := strings.Split(qual, ".")
		if len(parts) >= 2 && parts[len(parts)-1] == method {
			return parts[len(parts)-2] + "." + method // Python 3.11: module.Class.method
		}
		return parts[len(parts)-1] + "." + method // older: module.Class
	}
	for _, m := range unittestLine.FindAllStringSubmatch(out, -1) {
		name := key(m[1], m[2])
		if _, seen := res.status[name]; !seen {
			res.order = append(res.order, name)
			res.status[name] = nil
		}
		if m[3] != "" {
			res.status[name] = append(res.status[name], m[3])
		}
	}
	heads := unittestHead.FindAllStringSubmatchIndex(out, -1)
	for i, h := range heads {
		end := len(out)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		block := out[h[0]:end]
		if j := strings.Index(block, "\n----------------------------------------------------------------------\nRan "); j >= 0 {
			block = block[:j]
		}
		name := key(out[h[4]:h[5]], out[h[6]:h[7]])
		res.details[name] = append(res.details[name], strings.TrimRight(block, "=\n"))
	}
	if m := unittestRan.FindStringSubmatch(out); m != nil {
		res.ran, _ = strconv.Atoi(m[1])
	}
	if m := unittestEnd.FindAllStringSubmatch(out, -1); len(m) > 0 {
		res.ok = m[len(m)-1][1] == "OK"
	}
	return res
}

// TestParseUnittest checks the parser on output of Python 3.11's unittest
// with a passing test, a failing subtest, an error and a skip.
func TestParseUnittest(t *testing.T) {
	out := `test_a (kernel.testdata.test_k.K.test_a) ... ok
test_b (kernel.testdata.test_k.K.test_b) ... 
  test_b (kernel.testdata.test_k.K.test_b) (code='x') ... FAIL
test_c (kernel.testdata.test_k.K.test_c) ... ERROR
test_d (kernel.testdata.test_k.K.test_d) ... skipped ''

======================================================================
ERROR: test_c (kernel.testdata.test_k.K.test_c)
----------------------------------------------------------------------
Traceback (most recent call last):
RuntimeError: boom

======================================================================
FAIL: test_b (kernel.testdata.test_k.K.test_b) (code='x')
----------------------------------------------------------------------
AssertionError: 'KILN' != '"KILN"'

----------------------------------------------------------------------
Ran 4 tests in 1.000s

FAILED (failures=1, errors=1, skipped=1)
`
	res := parseUnittest(out)
	got := fmt.Sprint(res.order, res.status, res.ran, res.ok)
	want := "[K.test_a K.test_b K.test_c K.test_d] map[K.test_a:[ok] K.test_b:[FAIL] K.test_c:[ERROR] K.test_d:[skipped '']] 4 false"
	if got != want {
		t.Errorf("parsed\n%s\nwant\n%s", got, want)
	}
	if d := strings.Join(res.details["K.test_c"], ""); !strings.Contains(d, "RuntimeError: boom") || strings.Contains(d, "KILN") {
		t.Errorf("details of test_c: %q", d)
	}
	if d := strings.Join(res.details["K.test_b"], ""); !strings.Contains(d, "KILN") || strings.Contains(d, "Ran 4") {
		t.Errorf("details of test_b: %q", d)
	}
}

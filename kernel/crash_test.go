package kernel

import (
	"os"
	"strings"
	"testing"
)

func TestCrashReason(t *testing.T) {
	for _, tc := range []struct{ name, report, want string }{
		{"stack overflow", "runtime: goroutine stack exceeds 134217728-byte limit\nruntime: sp=0xc0200e0390 stack=[0xc0200e0000, 0xc0400e0000]\nfatal error: stack overflow\n\nruntime stack:\nruntime.throw(...)\n",
			"fatal error: stack overflow (runtime: goroutine stack exceeds 134217728-byte limit)"},
		{"concurrent map writes", "fatal error: concurrent map writes\n\ngoroutine 16 [running]:\n", "fatal error: concurrent map writes"},
		{"goroutine panic recovered and repanicked by yaegi", "panic: boom [recovered, repanicked]\n\ngoroutine 43 [running]:\n",
			"panic: boom (a panic no deferred recover stopped, as in a goroutine a cell started)"},
		{"output before the report", "some cell output\nfatal error: out of memory\n", "fatal error: out of memory"},
		{"no known line", "SIGQUIT: quit\nPC=0x0\n", "SIGQUIT: quit"},
		{"empty", "\n\n", "unknown reason"},
	} {
		if got := crashReason(tc.report); got != tc.want {
			t.Errorf("%s: crashReason = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRunCrashMonitor(t *testing.T) {
	// pipe returns the read end of a pipe holding text, its write end closed.
	pipe := func(text string) *os.File {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteString(text); err != nil {
			t.Fatal(err)
		}
		w.Close()
		t.Cleanup(func() { r.Close() })
		return r
	}
	report := "\nruntime stack:\nruntime.throw({0x10216ea?, 0x4446da?})\n\ngoroutine 54 [running]:\nmain.f()\n"
	for _, tc := range []struct {
		name, report, fd2 string
		want              string // the whole output
	}{
		{"session closed", crashGoodbye, "", ""},
		{"crash report", report, "fatal error: stack overflow\n" + report,
			report + "\n" + CrashLinePrefix + "fatal error: stack overflow; restart the kernel\n"},
		{"report without a reason anywhere", "panic: x\n\ngoroutine 1 [running]:\n", "",
			"panic: x\n\ngoroutine 1 [running]:\n\n" + CrashLinePrefix + "panic: x (a panic no deferred recover stopped, as in a goroutine a cell started); restart the kernel\n"},
		{"killed", "", "", CrashLinePrefix + "without a Go crash report: it was killed by a signal " +
			"(SIGKILL from the out-of-memory killer, for example) or something called os.Exit; restart the kernel\n"},
		{"a cut goodbye is not taken for one", crashGoodbye[:5], "", crashGoodbye[:5] + "\n" + CrashLinePrefix + crashGoodbye[:5] + "; restart the kernel\n"},
	} {
		var out strings.Builder
		if err := RunCrashMonitor(pipe(tc.report), pipe(tc.fd2), &out); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if out.String() != tc.want {
			t.Errorf("%s: output\n%q\nwant\n%q", tc.name, out.String(), tc.want)
		}
	}
	// Without fd 3 (not a pipe), the report alone names the reason.
	var out strings.Builder
	if err := RunCrashMonitor(pipe("fatal error: x\n"), nil, &out); err != nil || !strings.HasSuffix(out.String(), CrashLinePrefix+"fatal error: x; restart the kernel\n") {
		t.Errorf("without fd 3: %v %q", err, out.String())
	}
}

package jupyter_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// fakeHandler is a tiny command language standing in for the interpreter
// session. A cell is one command:
//
//	echo TEXT        prints TEXT and a newline to stdout
//	stderr TEXT      prints TEXT and a newline to stderr
//	print N          prints N numbered lines to stdout, one Write each
//	bulk N           prints N MiB to stdout in 1 MiB writes
//	slowprint N DUR  prints N numbered lines spread evenly over DUR
//	page TEXT        returns a pager payload showing TEXT
//	result TEXT      returns TEXT as the cell's value
//	error NAME       fails with ename NAME
//	sleep DUR        waits DUR, or fails with KeyboardInterrupt when interrupted
//	slowerror DUR    waits DUR, then fails with ename SlowError
//	input PROMPT     asks for input and returns the answer as the value
//	display          shows HTML with display id "d1", then updates it
//	clear            clears the output
//	panic            panics
//	exit N           writes "dying" to stderr and exits the process with N
//
// Anything else is returned as its own value.
type fakeHandler struct {
	executed   atomic.Int64
	interrupts atomic.Int64
	mu         sync.Mutex
	codes      []string
	shutdowns  []bool
}

func (h *fakeHandler) KernelInfo() jupyter.KernelInfo {
	return jupyter.KernelInfo{
		Implementation: "fake", ImplementationVersion: "0.1",
		LanguageInfo: jupyter.LanguageInfo{Name: "fake", Version: "1", Mimetype: "text/x-fake", FileExtension: ".fake"},
		Banner:       "fake kernel",
	}
}

func (h *fakeHandler) Execute(ctx context.Context, req jupyter.ExecuteRequest, out jupyter.Output) jupyter.ExecuteResult {
	h.executed.Add(1)
	h.mu.Lock()
	h.codes = append(h.codes, req.Code)
	h.mu.Unlock()
	cmd, arg, _ := strings.Cut(strings.TrimSpace(req.Code), " ")
	switch cmd {
	case "echo":
		fmt.Fprintln(out.Stdout(), arg)
	case "stderr":
		fmt.Fprintln(out.Stderr(), arg)
	case "print":
		var n int
		fmt.Sscan(arg, &n)
		w := out.Stdout()
		for i := range n {
			fmt.Fprintf(w, "line %d\n", i)
		}
	case "bulk":
		var n int
		fmt.Sscan(arg, &n)
		chunk := []byte(strings.Repeat(strings.Repeat("x", 1023)+"\n", 1024))
		for range n {
			out.Stdout().Write(chunk)
		}
	case "slowprint":
		var n int
		var d time.Duration
		f := strings.Fields(arg)
		fmt.Sscan(f[0], &n)
		d, _ = time.ParseDuration(f[1])
		w := out.Stdout()
		start := time.Now()
		for i := range n {
			fmt.Fprintf(w, "line %d\n", i)
			if i%100 == 99 {
				time.Sleep(time.Until(start.Add(d * time.Duration(i+1) / time.Duration(n))))
			}
		}
	case "page":
		return jupyter.ExecuteResult{Payload: []map[string]any{{"source": "page", "data": map[string]any{"text/plain": arg}, "start": 0}}}
	case "result":
		return jupyter.ExecuteResult{Data: jupyter.MimeBundle{"text/plain": arg}}
	case "error":
		return jupyter.ExecuteResult{Error: &jupyter.ErrorContent{Ename: arg, Evalue: "failed on purpose", Traceback: []string{"trace"}}}
	case "sleep", "slowerror":
		d, _ := time.ParseDuration(arg)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return jupyter.ExecuteResult{Error: &jupyter.ErrorContent{Ename: "KeyboardInterrupt", Evalue: ctx.Err().Error()}}
		}
		if cmd == "slowerror" {
			return jupyter.ExecuteResult{Error: &jupyter.ErrorContent{Ename: "SlowError", Evalue: "late failure"}}
		}
	case "input":
		v, err := out.Input(ctx, arg, false)
		if err != nil {
			return jupyter.ExecuteResult{Error: &jupyter.ErrorContent{Ename: "InputError", Evalue: err.Error()}}
		}
		return jupyter.ExecuteResult{Data: jupyter.MimeBundle{"text/plain": v}}
	case "display":
		if err := out.Display(jupyter.MimeBundle{"text/html": "<b>v1</b>", "text/plain": "v1"}, nil, "d1"); err != nil {
			panic(err)
		}
		if err := out.UpdateDisplay(jupyter.MimeBundle{"text/html": "<b>v2</b>", "text/plain": "v2"}, nil, "d1"); err != nil {
			panic(err)
		}
	case "clear":
		out.ClearOutput(true)
	case "panic":
		panic("fake handler panics")
	case "exit":
		var n int
		fmt.Sscan(arg, &n)
		fmt.Fprintln(os.Stderr, "dying")
		os.Exit(n)
	default:
		return jupyter.ExecuteResult{Data: jupyter.MimeBundle{"text/plain": req.Code}}
	}
	return jupyter.ExecuteResult{}
}

func (h *fakeHandler) Evaluate(ctx context.Context, expr string) (jupyter.MimeBundle, *jupyter.ErrorContent) {
	if expr == "bad" {
		return nil, &jupyter.ErrorContent{Ename: "NameError", Evalue: "bad"}
	}
	return jupyter.MimeBundle{"text/plain": "value of " + expr}, nil
}

var fakeWords = []string{"print", "println", "printf", "παράδειγμα"}

func (h *fakeHandler) Complete(code string, cursor int) jupyter.CompleteResult {
	start := cursor
	for start > 0 && code[start-1] != ' ' {
		start--
	}
	prefix := code[start:cursor]
	var m []string
	for _, w := range fakeWords {
		if strings.HasPrefix(w, prefix) {
			m = append(m, w)
		}
	}
	return jupyter.CompleteResult{Matches: m, CursorStart: start, CursorEnd: cursor}
}

func (h *fakeHandler) Inspect(code string, cursor, detail int) jupyter.InspectResult {
	if code == "big" { // 64 KiB of documentation, to fill a peer's buffers
		return jupyter.InspectResult{Found: true, Data: jupyter.MimeBundle{"text/plain": strings.Repeat("doc ", 16<<10)}}
	}
	if strings.Contains(code, "print") {
		return jupyter.InspectResult{Found: true, Data: jupyter.MimeBundle{"text/plain": fmt.Sprintf("print: prints (cursor %d, detail %d)", cursor, detail)}}
	}
	return jupyter.InspectResult{}
}

func (h *fakeHandler) IsComplete(code string) (string, string) {
	switch {
	case strings.HasSuffix(strings.TrimSpace(code), "{"):
		return jupyter.Incomplete, "\t"
	case strings.HasPrefix(strings.TrimSpace(code), "}"):
		return jupyter.Invalid, ""
	}
	return jupyter.Complete, ""
}

func (h *fakeHandler) Interrupt() { h.interrupts.Add(1) }

func (h *fakeHandler) Shutdown(restart bool) {
	h.mu.Lock()
	h.shutdowns = append(h.shutdowns, restart)
	h.mu.Unlock()
}

package kernel

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"time"
	"unicode/utf8"

	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// Version is the kernel's implementation version in kernel_info_reply.
var Version = "0.1.0-dev"

// Serve runs a session as a Jupyter kernel on the sockets described by
// connectionFile until a shutdown_request arrives or ctx ends. It is the
// whole of `kiln kernel run`. Output of compiled code on file descriptors
// 1 and 2 is captured into the running cell; the kernel's own log goes to
// the original stderr. Beside the connection file, the kernel answers
// variable listings on a socket of its own (VariablesSocket), even while a
// cell runs; without it (a path it cannot bind) it still serves Jupyter.
func Serve(ctx context.Context, connectionFile string, opts Options) error {
	s, err := New(opts)
	if err != nil {
		return err
	}
	defer s.Close()
	logger := slog.New(slog.NewTextHandler(s.OriginalStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if os.Getenv("JPY_PARENT_PID") != "" {
		go watchParent(ctx, os.Getppid(), time.Second, stop)
	}
	info, err := jupyter.ReadConnectionFile(connectionFile)
	if err != nil {
		return err
	}
	// Variables listed while a cell runs (variables_socket.go); a kernel
	// without the socket still lists them through %who --json.
	if err := serveVariables(ctx, s, connectionFile, info.Key, logger); err != nil {
		logger.Warn("kernel: variables are listed only between cells", "err", err)
	}
	srv, err := jupyter.NewServer(jupyter.Config{Connection: info, Handler: &Handler{Session: s}, Logger: logger,
		MaxMessage: opts.MaxMessage})
	if err != nil {
		return err
	}
	return srv.Serve(ctx)
}

// watchParent calls stop once the kernel's parent process has gone (the
// kernel is then re-parented, and its parent pid changes), as ipykernel's
// parent poller does. jupyter_client sets JPY_PARENT_PID in the kernels it
// starts: a front end that dies or is killed without a shutdown_request
// (a client run under `timeout`, a crashed notebook server) would otherwise
// leave the kernel running, holding its memory and the client's pipes.
func watchParent(ctx context.Context, ppid int, every time.Duration, stop func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != ppid {
				stop()
				return
			}
		}
	}
}

// Handler serves a Session over Jupyter's protocol (it implements
// jupyter.Handler). The protocol counts cursor positions in bytes at this
// boundary and the session in code points; Handler converts.
type Handler struct {
	Session *Session
	count   int // the execution count of the last cell, for Evaluate
}

var _ jupyter.Handler = (*Handler)(nil)

// KernelInfo implements jupyter.Handler.
func (h *Handler) KernelInfo() jupyter.KernelInfo {
	return jupyter.KernelInfo{
		Implementation:        "kiln",
		ImplementationVersion: Version,
		LanguageInfo: jupyter.LanguageInfo{
			Name:           "go",
			Version:        runtime.Version()[2:],
			Mimetype:       "text/x-go",
			FileExtension:  ".go",
			PygmentsLexer:  "go",
			CodemirrorMode: "go",
		},
		Banner: "Kiln " + Version + ": Go cells interpreted by yaegi, with Kiln's tensor, nn and optim packages. %help lists what differs from compiled Go.",
		HelpLinks: []jupyter.HelpLink{
			{Text: "Go", URL: "https://go.dev/doc/"},
			{Text: "Kiln", URL: "https://github.com/kiln-ml/kiln"},
		},
	}
}

// cellOutput adapts the protocol's Output to the session's.
type cellOutput struct{ out jupyter.Output }

func (c cellOutput) WriteStream(s Stream, text string) {
	w := c.out.Stdout()
	if s == Stderr {
		w = c.out.Stderr()
	}
	_, _ = w.Write([]byte(text))
}

func (c cellOutput) Display(m display.Message) {
	switch m.Kind {
	case display.DisplayData:
		_ = c.out.Display(jupyter.MimeBundle(m.Data.Data), m.Data.Metadata, m.DisplayID())
	case display.UpdateDisplayData:
		_ = c.out.UpdateDisplay(jupyter.MimeBundle(m.Data.Data), m.Data.Metadata, m.DisplayID())
	case display.ClearOutput:
		_ = c.out.ClearOutput(m.Wait)
	}
}

func (c cellOutput) Input(ctx context.Context, prompt string, password bool) (string, error) {
	return c.out.Input(ctx, prompt, password)
}

// errorContent turns a session error into Jupyter's error message.
func errorContent(err error) *jupyter.ErrorContent {
	var ke *Error
	if errors.As(err, &ke) {
		tb := ke.Traceback
		if len(tb) == 0 {
			tb = []string{ke.Name + ": " + ke.Value}
		}
		return &jupyter.ErrorContent{Ename: ke.Name, Evalue: ke.Value, Traceback: tb}
	}
	return &jupyter.ErrorContent{Ename: "Error", Evalue: err.Error(), Traceback: []string{err.Error()}}
}

// Execute implements jupyter.Handler. A cell that is just a name with a
// question mark (`tensor.Zeros?`, `?x`, IPython's help syntax) is not run:
// what Inspect says about the name goes to the front end's pager.
func (h *Handler) Execute(ctx context.Context, req jupyter.ExecuteRequest, out jupyter.Output) jupyter.ExecuteResult {
	if name, ok := pageTarget(req.Code); ok {
		return h.page(name)
	}
	h.count = req.ExecutionCount
	h.Session.noteCell(req.ExecutionCount)
	data, err := h.Session.Execute(ctx, req.Code, cellOutput{out})
	if err != nil {
		return jupyter.ExecuteResult{Error: errorContent(err)}
	}
	if data == nil {
		return jupyter.ExecuteResult{}
	}
	return jupyter.ExecuteResult{Data: jupyter.MimeBundle(data.Data), Metadata: data.Metadata}
}

// pageRequest matches a help cell: an identifier or selector with one or two
// question marks before or after it.
var pageRequest = regexp.MustCompile(`^\s*(\?{0,2})\s*([\pL_][\pL\pN_]*(?:\.[\pL_][\pL\pN_]*)*)\s*(\?{0,2})\s*$`)

// pageTarget returns the name a help cell asks about.
func pageTarget(code string) (string, bool) {
	m := pageRequest.FindStringSubmatch(code)
	if m == nil || (m[1] == "") == (m[3] == "") {
		return "", false // no question mark, or on both sides
	}
	return m[2], true
}

// page answers a help cell with a pager payload (execute_reply's "page"
// source, which notebooks show in a pager or below the cell), or a NameError.
func (h *Handler) page(name string) jupyter.ExecuteResult {
	text, found := h.Session.Inspect(name, utf8.RuneCountInString(name))
	if !found {
		msg := "nothing known about " + name
		return jupyter.ExecuteResult{Error: &jupyter.ErrorContent{Ename: "NameError", Evalue: msg, Traceback: []string{"NameError: " + msg}}}
	}
	return jupyter.ExecuteResult{Payload: []map[string]any{{
		"source": "page",
		"data":   map[string]any{display.MIMETypeText: text},
		"start":  0,
	}}}
}

// Evaluate implements jupyter.Handler: a user expression is run as a cell
// whose output is discarded.
func (h *Handler) Evaluate(ctx context.Context, expr string) (jupyter.MimeBundle, *jupyter.ErrorContent) {
	h.Session.noteCell(h.count)
	data, err := h.Session.Execute(ctx, expr, OutputFuncs{})
	if err != nil {
		return nil, errorContent(err)
	}
	if data == nil {
		return jupyter.MimeBundle{display.MIMETypeText: ""}, nil
	}
	return jupyter.MimeBundle(data.Data), nil
}

// Complete implements jupyter.Handler.
func (h *Handler) Complete(code string, cursor int) jupyter.CompleteResult {
	c := h.Session.Complete(code, runeOffset(code, min(max(cursor, 0), len(code))))
	matches := c.Matches
	if matches == nil {
		matches = []string{}
	}
	return jupyter.CompleteResult{Matches: matches, CursorStart: byteOffset(code, c.Start), CursorEnd: byteOffset(code, c.End)}
}

// Inspect implements jupyter.Handler.
func (h *Handler) Inspect(code string, cursor, detail int) jupyter.InspectResult {
	text, found := h.Session.Inspect(code, runeOffset(code, min(max(cursor, 0), len(code))))
	if !found {
		return jupyter.InspectResult{}
	}
	return jupyter.InspectResult{Found: true, Data: jupyter.MimeBundle{display.MIMETypeText: text}}
}

// IsComplete implements jupyter.Handler.
func (h *Handler) IsComplete(code string) (status, indent string) {
	if _, ok := pageTarget(code); ok {
		return jupyter.Complete, ""
	}
	return IsComplete(code)
}

// Interrupt implements jupyter.Handler.
func (h *Handler) Interrupt() { h.Session.Interrupt() }

// Shutdown implements jupyter.Handler: it stops a running cell; Serve closes
// the session when the server returns.
func (h *Handler) Shutdown(restart bool) { h.Session.Interrupt() }

// check at compile time that cellOutput can read stdin.
var _ InputOutput = cellOutput{}

package jupyter

import (
	"context"
	"errors"
	"io"
)

// Handler is what a language session implements to be served as a Jupyter
// kernel. The Server calls KernelInfo, Execute, Evaluate, Complete, Inspect
// and IsComplete from one goroutine, one request at a time, in the order the
// shell requests arrived. Interrupt and Shutdown come from other goroutines
// (the control channel, SIGINT) and may arrive while Execute runs.
//
// Offsets (cursor, CursorStart, CursorEnd) are byte offsets into code; the
// Server converts them from and to Jupyter's code-point offsets.
//
// A panic in a Handler method is recovered by the Server and reported to the
// client as an error reply; the kernel keeps running.
type Handler interface {
	// KernelInfo describes the kernel for kernel_info_reply. Status and
	// ProtocolVersion are filled in by the Server.
	KernelInfo() KernelInfo

	// Execute runs one cell. ctx is cancelled when the kernel is interrupted
	// (interrupt_request or SIGINT; Interrupt is called too) or shuts down.
	// Output publishes the cell's output while it runs; everything written
	// is flushed before the reply. The returned value is published as
	// execute_result unless the request is silent; a non-nil Error is
	// published as an error message and makes the reply status "error".
	Execute(ctx context.Context, req ExecuteRequest, out Output) ExecuteResult

	// Evaluate computes one user expression of an execute_request after the
	// cell succeeded, returning its display data or an error.
	Evaluate(ctx context.Context, expr string) (MimeBundle, *ErrorContent)

	// Complete returns completions for code at the cursor (a byte offset).
	Complete(code string, cursor int) CompleteResult

	// Inspect returns documentation for the object at the cursor; detail is
	// 0 or 1 (more detail).
	Inspect(code string, cursor, detail int) InspectResult

	// IsComplete reports whether code is ready to run: status is one of
	// Complete, Incomplete, Invalid or Unknown; indent is the indentation for
	// the next line when Incomplete.
	IsComplete(code string) (status, indent string)

	// Interrupt stops the running cell if it can (the Execute ctx is already
	// cancelled when it is called). It may be called while no cell runs, and
	// must return promptly: it runs on the control channel's goroutine.
	Interrupt()

	// Shutdown is called once before the kernel exits on shutdown_request;
	// restart says the client will start a new kernel. It may be called while
	// Execute still runs and should make it return promptly.
	Shutdown(restart bool)
}

// BaseHandler gives the optional parts of a Handler neutral answers: no
// completions, nothing to inspect, "unknown" completeness, user expressions
// unsupported, interrupt and shutdown doing nothing beyond cancelling the
// cell's context. Embed it and write KernelInfo and Execute.
type BaseHandler struct{}

// Evaluate reports that user expressions are not supported.
func (BaseHandler) Evaluate(ctx context.Context, expr string) (MimeBundle, *ErrorContent) {
	return nil, &ErrorContent{Ename: "NotImplementedError", Evalue: "user expressions are not supported", Traceback: []string{}}
}

// Complete returns no matches.
func (BaseHandler) Complete(code string, cursor int) CompleteResult {
	return CompleteResult{CursorStart: cursor, CursorEnd: cursor}
}

// Inspect finds nothing.
func (BaseHandler) Inspect(code string, cursor, detail int) InspectResult { return InspectResult{} }

// IsComplete answers Unknown (frontends then decide themselves).
func (BaseHandler) IsComplete(code string) (status, indent string) { return Unknown, "" }

// Interrupt does nothing more than the cancelled context.
func (BaseHandler) Interrupt() {}

// Shutdown does nothing.
func (BaseHandler) Shutdown(restart bool) {}

// ExecuteResult is what Handler.Execute returns for a cell.
type ExecuteResult struct {
	// Data is the cell's value as a mime bundle, published as execute_result
	// (and stored as the cell's history output); nil or empty for none.
	Data     MimeBundle
	Metadata map[string]any
	// Error, when non-nil, means the cell failed.
	Error *ErrorContent
	// Payload is passed through to execute_reply (deprecated pager payloads).
	Payload []map[string]any
}

// CompleteResult is what Handler.Complete returns. CursorStart and CursorEnd
// are byte offsets of the text the matches replace.
type CompleteResult struct {
	Matches     []string
	CursorStart int
	CursorEnd   int
	Metadata    map[string]any
}

// InspectResult is what Handler.Inspect returns.
type InspectResult struct {
	Found    bool
	Data     MimeBundle
	Metadata map[string]any
}

// Output publishes a running cell's output on IOPub, each message carrying
// the cell's execute_request as parent. Methods are safe for concurrent use,
// also from goroutines the cell started. Writes to Stdout and Stderr are
// coalesced and sent at most every FlushInterval (and before any other
// output, before input requests and when the cell ends), so a cell may write
// byte by byte without flooding the frontend. After the cell ended, output
// still reaches the frontend under the same parent, but Input fails.
type Output interface {
	// Stdout and Stderr return writers for the stdout and stderr streams.
	// Writes never fail; a writer producing faster than the frontend can take
	// is slowed down (at most MaxStreamBuffer bytes per FlushInterval).
	Stdout() io.Writer
	Stderr() io.Writer
	// Display publishes display_data; with a non-empty displayID the output
	// can later be replaced with UpdateDisplay.
	Display(data MimeBundle, metadata map[string]any, displayID string) error
	// UpdateDisplay publishes update_display_data for displayID.
	UpdateDisplay(data MimeBundle, metadata map[string]any, displayID string) error
	// ClearOutput publishes clear_output; with wait the frontend clears when
	// the next output arrives.
	ClearOutput(wait bool) error
	// Input asks the frontend for a line of input (input_request on stdin)
	// and waits for the reply. It fails with ErrStdinNotAllowed when the
	// request had allow_stdin false, with ErrCellFinished after the cell
	// returned, and with the context's error when ctx or the cell is
	// cancelled (interrupt).
	Input(ctx context.Context, prompt string, password bool) (string, error)
	// Publish sends any other iopub message with the cell as parent.
	Publish(msgType string, content any) error
	// Flush sends buffered stream output now.
	Flush()
}

// Errors returned by Output methods.
var (
	// ErrStdinNotAllowed: the execute_request had allow_stdin false (for
	// example nbconvert), so the kernel must not ask for input.
	ErrStdinNotAllowed = errors.New("jupyter: stdin not allowed for this request")
	// ErrCellFinished: Input was called after the cell's Execute returned.
	ErrCellFinished = errors.New("jupyter: cell already finished")
	// ErrClosed: the server is shut down.
	ErrClosed = errors.New("jupyter: server closed")
)

package jupyter

import "encoding/json"

// MimeBundle maps MIME types ("text/plain", "text/html", "image/png") to
// data. Binary data ([]byte) is sent base64-encoded, as Jupyter expects for
// images; "application/json" values must be JSON objects, not strings.
type MimeBundle map[string]any

// Reply status values.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusAborted = "aborted"
)

// is_complete statuses.
const (
	Complete   = "complete"
	Incomplete = "incomplete"
	Invalid    = "invalid"
	Unknown    = "unknown"
)

// ExecuteRequest is the content of execute_request. The kernel fills
// ExecutionCount before handing it to Handler.Execute.
type ExecuteRequest struct {
	Code            string            `json:"code"`
	Silent          bool              `json:"silent"`
	StoreHistory    bool              `json:"store_history"`
	UserExpressions map[string]string `json:"user_expressions"`
	AllowStdin      bool              `json:"allow_stdin"`
	StopOnError     bool              `json:"stop_on_error"`

	// ExecutionCount is this cell's number (In [n]); for silent or
	// store_history=false requests, the current count, not incremented.
	ExecutionCount int `json:"-"`
}

// NewExecuteRequest returns a request for code with the defaults Jupyter
// frontends use: stored in history, stop on error, stdin not allowed.
func NewExecuteRequest(code string) ExecuteRequest {
	return ExecuteRequest{Code: code, StoreHistory: true, StopOnError: true, UserExpressions: map[string]string{}}
}

// ExecuteReply is the content of execute_reply.
type ExecuteReply struct {
	Status          string                     `json:"status"`
	ExecutionCount  int                        `json:"execution_count"`
	UserExpressions map[string]ExpressionValue `json:"user_expressions,omitempty"`
	Payload         []map[string]any           `json:"payload,omitempty"`
	*ErrorContent
}

// ErrorContent is the error part of replies with status "error" and the
// content of the iopub error message. Traceback lines may hold ANSI colour
// codes; the kernel always sends a list (possibly empty), never null.
type ErrorContent struct {
	Ename     string   `json:"ename"`
	Evalue    string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

// ExpressionValue is one evaluated user expression in execute_reply:
// status "ok" with data and metadata, or status "error" with the error.
type ExpressionValue struct {
	Status   string         `json:"status"`
	Data     MimeBundle     `json:"data,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	*ErrorContent
}

// KernelInfo is the content of kernel_info_reply. The kernel sets Status and
// ProtocolVersion itself; a Handler fills in the rest.
type KernelInfo struct {
	Status                string       `json:"status"`
	ProtocolVersion       string       `json:"protocol_version"`
	Implementation        string       `json:"implementation"`
	ImplementationVersion string       `json:"implementation_version"`
	LanguageInfo          LanguageInfo `json:"language_info"`
	Banner                string       `json:"banner"`
	HelpLinks             []HelpLink   `json:"help_links"`
	Debugger              bool         `json:"debugger"`
}

// LanguageInfo describes the kernel's language in kernel_info_reply.
type LanguageInfo struct {
	Name              string `json:"name"`
	Version           string `json:"version"`
	Mimetype          string `json:"mimetype"`
	FileExtension     string `json:"file_extension"`
	PygmentsLexer     string `json:"pygments_lexer,omitempty"`
	CodemirrorMode    any    `json:"codemirror_mode,omitempty"`
	NbconvertExporter string `json:"nbconvert_exporter,omitempty"`
}

// HelpLink is one entry of kernel_info_reply's help_links.
type HelpLink struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// CompleteRequest is the content of complete_request; CursorPos counts
// Unicode code points.
type CompleteRequest struct {
	Code      string `json:"code"`
	CursorPos int    `json:"cursor_pos"`
}

// CompleteReply is the content of complete_reply.
type CompleteReply struct {
	Status      string         `json:"status"`
	Matches     []string       `json:"matches"`
	CursorStart int            `json:"cursor_start"`
	CursorEnd   int            `json:"cursor_end"`
	Metadata    map[string]any `json:"metadata"`
	*ErrorContent
}

// InspectRequest is the content of inspect_request.
type InspectRequest struct {
	Code        string `json:"code"`
	CursorPos   int    `json:"cursor_pos"`
	DetailLevel int    `json:"detail_level"`
}

// InspectReply is the content of inspect_reply.
type InspectReply struct {
	Status   string         `json:"status"`
	Found    bool           `json:"found"`
	Data     MimeBundle     `json:"data"`
	Metadata map[string]any `json:"metadata"`
	*ErrorContent
}

// IsCompleteRequest is the content of is_complete_request.
type IsCompleteRequest struct {
	Code string `json:"code"`
}

// IsCompleteReply is the content of is_complete_reply; Indent is only sent
// with status "incomplete".
type IsCompleteReply struct {
	Status string `json:"status"`
	Indent string `json:"indent,omitempty"`
}

// HistoryRequest is the content of history_request.
type HistoryRequest struct {
	Output         bool   `json:"output"`
	Raw            bool   `json:"raw"`
	HistAccessType string `json:"hist_access_type"` // "tail", "range" or "search"
	Session        int    `json:"session"`
	Start          int    `json:"start"`
	Stop           int    `json:"stop"`
	N              int    `json:"n"`
	Pattern        string `json:"pattern"`
	Unique         bool   `json:"unique"`
}

// HistoryReply is the content of history_reply. Each entry is
// [session, line, input] or, with output, [session, line, [input, output]]
// where output is null when the cell had no result.
type HistoryReply struct {
	Status  string            `json:"status"`
	History []json.RawMessage `json:"history"`
}

// CommInfoRequest is the content of comm_info_request.
type CommInfoRequest struct {
	TargetName string `json:"target_name,omitempty"`
}

// CommInfoReply is the content of comm_info_reply: open comms by id.
type CommInfoReply struct {
	Status string                  `json:"status"`
	Comms  map[string]CommInfoItem `json:"comms"`
}

// CommInfoItem names the target of one open comm.
type CommInfoItem struct {
	TargetName string `json:"target_name"`
}

// CommOpen is the content of comm_open.
type CommOpen struct {
	CommID       string         `json:"comm_id"`
	TargetName   string         `json:"target_name"`
	Data         map[string]any `json:"data"`
	TargetModule string         `json:"target_module,omitempty"`
}

// CommMsg is the content of comm_msg and comm_close.
type CommMsg struct {
	CommID string         `json:"comm_id"`
	Data   map[string]any `json:"data"`
}

// ShutdownRequest is the content of shutdown_request and shutdown_reply.
type ShutdownRequest struct {
	Restart bool `json:"restart"`
}

// ShutdownReply is the content of shutdown_reply.
type ShutdownReply struct {
	Status  string `json:"status"`
	Restart bool   `json:"restart"`
}

// InputRequest is the content of input_request (sent on stdin).
type InputRequest struct {
	Prompt   string `json:"prompt"`
	Password bool   `json:"password"`
}

// InputReply is the content of input_reply.
type InputReply struct {
	Value string `json:"value"`
}

// Stream is the content of an iopub stream message.
type Stream struct {
	Name string `json:"name"` // "stdout" or "stderr"
	Text string `json:"text"`
}

// DisplayData is the content of display_data and update_display_data.
// DisplayID, when set, is sent as transient.display_id so later updates
// can replace the output.
type DisplayData struct {
	Data      MimeBundle     `json:"data"`
	Metadata  map[string]any `json:"metadata"`
	Transient map[string]any `json:"transient,omitempty"`
}

// ExecuteResultContent is the content of an iopub execute_result message.
type ExecuteResultContent struct {
	ExecutionCount int            `json:"execution_count"`
	Data           MimeBundle     `json:"data"`
	Metadata       map[string]any `json:"metadata"`
}

// ExecuteInput is the content of an iopub execute_input message.
type ExecuteInput struct {
	Code           string `json:"code"`
	ExecutionCount int    `json:"execution_count"`
}

// KernelStatus is the content of an iopub status message.
type KernelStatus struct {
	ExecutionState string `json:"execution_state"` // "busy", "idle" or "starting"
}

// ClearOutput is the content of an iopub clear_output message.
type ClearOutput struct {
	Wait bool `json:"wait"`
}

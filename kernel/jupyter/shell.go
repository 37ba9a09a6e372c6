package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// shellLoop handles shell requests one at a time, in arrival order.
func (s *Server) shellLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopped:
			return
		case q := <-s.shellQ:
			if q.msg.refused != nil {
				s.refuse(s.shellOut, q.msg)
				continue
			}
			s.handleShell(ctx, q)
			if q.msg.Type() == "shutdown_request" {
				s.requestStop(s.restart.Load())
				return
			}
		}
	}
}

func (s *Server) handleShell(ctx context.Context, q queued) {
	m := q.msg
	s.current.Store(m)
	defer s.current.Store(nil)
	s.status(m, "busy")
	switch m.Type() {
	case "execute_request":
		s.execute(ctx, q)
	case "kernel_info_request":
		s.reply(s.shellOut, m, "kernel_info_reply", s.kernelInfo(), nil)
	case "complete_request":
		s.complete(m)
	case "inspect_request":
		s.inspect(m)
	case "is_complete_request":
		s.isComplete(m)
	case "history_request":
		s.historyRequest(m)
	case "comm_info_request":
		s.commInfo(m)
	case "comm_open":
		s.comms.handleOpen(m)
	case "comm_msg":
		s.comms.handleMsg(m)
	case "comm_close":
		s.comms.handleClose(m)
	case "shutdown_request":
		s.shutdown(s.shellOut, m)
	default:
		s.unknown(s.shellOut, m)
	}
	s.status(m, "idle")
}

// execute runs one execute_request.
func (s *Server) execute(ctx context.Context, q queued) {
	m := q.msg
	var req ExecuteRequest
	if err := m.Decode(&req); err != nil {
		s.replyError(s.shellOut, m, "execute_reply", "BadRequest", err.Error())
		return
	}
	// After a failed cell with stop_on_error, ipykernel answers the execute
	// requests queued behind it with "aborted" instead of running them.
	if !q.arrived.After(s.abortBefore) {
		s.log.Info("jupyter: execute_request aborted after an earlier error", "msg_id", m.Header.MsgID)
		s.reply(s.shellOut, m, "execute_reply", ExecuteReply{Status: StatusAborted, ExecutionCount: s.execCount},
			map[string]any{"status": StatusAborted})
		return
	}
	if req.Silent {
		req.StoreHistory = false
	}
	blank := strings.TrimSpace(req.Code) == ""
	if req.StoreHistory && !blank {
		s.execCount++
	}
	req.ExecutionCount = s.execCount
	if !req.Silent {
		_ = s.pub.publish("execute_input", m, ExecuteInput{Code: req.Code, ExecutionCount: req.ExecutionCount})
	}
	started := time.Now().UTC()
	reply := ExecuteReply{Status: StatusOK, ExecutionCount: req.ExecutionCount,
		UserExpressions: map[string]ExpressionValue{}, Payload: []map[string]any{}}
	if blank {
		s.reply(s.shellOut, m, "execute_reply", reply, map[string]any{"status": StatusOK, "started": started})
		return
	}

	cellCtx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cellCancel = cancel
	s.mu.Unlock()
	out := &cellOutput{s: s, req: m, ctx: cellCtx, allowStdin: req.AllowStdin}
	res := s.runCell(cellCtx, req, out)
	out.done.Store(true)
	if res.Error == nil {
		for name, expr := range req.UserExpressions {
			reply.UserExpressions[name] = s.evaluate(cellCtx, expr)
		}
	}
	s.mu.Lock()
	s.cellCancel = nil
	s.mu.Unlock()
	cancel()

	if res.Error == nil && !req.Silent && len(res.Data) > 0 {
		_ = s.pub.publish("execute_result", m, ExecuteResultContent{
			ExecutionCount: req.ExecutionCount, Data: res.Data, Metadata: orEmpty(res.Metadata)})
	}
	if res.Error != nil {
		e := *res.Error
		if e.Traceback == nil {
			e.Traceback = []string{}
		}
		_ = s.pub.publish("error", m, e)
		reply = ExecuteReply{Status: StatusError, ExecutionCount: req.ExecutionCount, ErrorContent: &e,
			UserExpressions: map[string]ExpressionValue{}, Payload: []map[string]any{}}
	}
	if res.Payload != nil && res.Error == nil {
		reply.Payload = res.Payload
	}
	if req.StoreHistory {
		var output *string
		if text, ok := res.Data["text/plain"].(string); ok {
			output = &text
		}
		if err := s.history.Add(req.ExecutionCount, req.Code, output); err != nil {
			s.log.Warn("jupyter: history not saved", "err", err)
		}
	}
	s.reply(s.shellOut, m, "execute_reply", reply, map[string]any{"status": reply.Status, "started": started})
	if res.Error != nil && req.StopOnError {
		s.abortBefore = time.Now().Add(s.cfg.StopOnErrorGrace)
	}
}

// runCell calls Handler.Execute, turning a panic into an error result.
func (s *Server) runCell(ctx context.Context, req ExecuteRequest, out *cellOutput) (res ExecuteResult) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("jupyter: Execute panicked", "panic", r)
			res = ExecuteResult{Error: &ErrorContent{Ename: "panic", Evalue: fmt.Sprint(r),
				Traceback: strings.Split(strings.TrimRight(string(debug.Stack()), "\n"), "\n")}}
		}
	}()
	return s.h.Execute(ctx, req, out)
}

func (s *Server) evaluate(ctx context.Context, expr string) (v ExpressionValue) {
	defer func() {
		if r := recover(); r != nil {
			v = ExpressionValue{Status: StatusError, ErrorContent: &ErrorContent{
				Ename: "panic", Evalue: fmt.Sprint(r), Traceback: []string{}}}
		}
	}()
	data, e := s.h.Evaluate(ctx, expr)
	if e != nil {
		if e.Traceback == nil {
			e.Traceback = []string{}
		}
		return ExpressionValue{Status: StatusError, ErrorContent: e}
	}
	if data == nil {
		data = MimeBundle{}
	}
	return ExpressionValue{Status: StatusOK, Data: data, Metadata: map[string]any{}}
}

func (s *Server) complete(m *Message) {
	req := CompleteRequest{CursorPos: -1}
	if err := m.Decode(&req); err != nil {
		s.replyError(s.shellOut, m, "complete_reply", "BadRequest", err.Error())
		return
	}
	cursor := byteOffset(req.Code, req.CursorPos)
	var res CompleteResult
	if err := s.guard("Complete", func() { res = s.h.Complete(req.Code, cursor) }); err != nil {
		s.replyError(s.shellOut, m, "complete_reply", "CompletionError", err.Error())
		return
	}
	if res.Matches == nil {
		res.Matches = []string{}
	}
	start, end := res.CursorStart, res.CursorEnd
	if start == 0 && end == 0 && len(res.Matches) == 0 {
		start, end = cursor, cursor
	}
	s.reply(s.shellOut, m, "complete_reply", CompleteReply{Status: StatusOK, Matches: res.Matches,
		CursorStart: codePointOffset(req.Code, start), CursorEnd: codePointOffset(req.Code, end),
		Metadata: orEmpty(res.Metadata)}, nil)
}

func (s *Server) inspect(m *Message) {
	req := InspectRequest{CursorPos: -1}
	if err := m.Decode(&req); err != nil {
		s.replyError(s.shellOut, m, "inspect_reply", "BadRequest", err.Error())
		return
	}
	var res InspectResult
	if err := s.guard("Inspect", func() { res = s.h.Inspect(req.Code, byteOffset(req.Code, req.CursorPos), req.DetailLevel) }); err != nil {
		s.replyError(s.shellOut, m, "inspect_reply", "InspectionError", err.Error())
		return
	}
	data := res.Data
	if data == nil {
		data = MimeBundle{}
	}
	s.reply(s.shellOut, m, "inspect_reply", InspectReply{Status: StatusOK, Found: res.Found && len(data) > 0,
		Data: data, Metadata: orEmpty(res.Metadata)}, nil)
}

func (s *Server) isComplete(m *Message) {
	var req IsCompleteRequest
	if err := m.Decode(&req); err != nil {
		s.replyError(s.shellOut, m, "is_complete_reply", "BadRequest", err.Error())
		return
	}
	status, indent := Unknown, ""
	if err := s.guard("IsComplete", func() { status, indent = s.h.IsComplete(req.Code) }); err != nil {
		status, indent = Unknown, ""
	}
	switch status {
	case Complete, Invalid, Unknown:
		indent = ""
	case Incomplete:
	default:
		status, indent = Unknown, ""
	}
	s.reply(s.shellOut, m, "is_complete_reply", IsCompleteReply{Status: status, Indent: indent}, nil)
}

func (s *Server) historyRequest(m *Message) {
	var req HistoryRequest
	if err := m.Decode(&req); err != nil {
		s.replyError(s.shellOut, m, "history_reply", "BadRequest", err.Error())
		return
	}
	var entries []HistoryEntry
	switch req.HistAccessType {
	case "tail", "":
		entries = s.history.Tail(req.N)
	case "range":
		entries = s.history.Range(req.Session, req.Start, req.Stop)
	case "search":
		entries = s.history.Search(req.Pattern, req.N, req.Unique)
	default:
		s.replyError(s.shellOut, m, "history_reply", "BadRequest",
			fmt.Sprintf("unknown hist_access_type %q", req.HistAccessType))
		return
	}
	rep := HistoryReply{Status: StatusOK, History: make([]json.RawMessage, 0, len(entries))}
	for _, e := range entries {
		var item any = e.Input
		if req.Output {
			item = []any{e.Input, e.Output}
		}
		b, _ := json.Marshal([]any{e.Session, e.Line, item})
		rep.History = append(rep.History, b)
	}
	s.reply(s.shellOut, m, "history_reply", rep, nil)
}

func (s *Server) commInfo(m *Message) {
	var req CommInfoRequest
	_ = m.Decode(&req)
	rep := CommInfoReply{Status: StatusOK, Comms: map[string]CommInfoItem{}}
	for _, c := range s.comms.List(req.TargetName) {
		rep.Comms[c.ID] = CommInfoItem{TargetName: c.Target}
	}
	s.reply(s.shellOut, m, "comm_info_reply", rep, nil)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// byteOffset converts a code-point offset (Jupyter's cursor_pos) into a byte
// offset into code, clamping to the string; a negative offset means the end.
func byteOffset(code string, cp int) int {
	if cp < 0 {
		return len(code)
	}
	for i := range code {
		if cp == 0 {
			return i
		}
		cp--
	}
	return len(code)
}

// codePointOffset converts a byte offset into code into a code-point offset.
func codePointOffset(code string, b int) int {
	b = max(0, min(b, len(code)))
	return utf8.RuneCountInString(code[:b])
}

// cellOutput is the Output of one execute_request.
type cellOutput struct {
	s          *Server
	req        *Message
	ctx        context.Context
	allowStdin bool
	done       atomic.Bool
}

type streamWriter struct {
	o    *cellOutput
	name string
}

func (w streamWriter) Write(b []byte) (int, error) {
	w.o.s.pub.write(w.o.req, w.name, b)
	return len(b), nil
}

func (o *cellOutput) Stdout() io.Writer { return streamWriter{o, "stdout"} }
func (o *cellOutput) Stderr() io.Writer { return streamWriter{o, "stderr"} }
func (o *cellOutput) Flush()            { o.s.pub.flush() }

func (o *cellOutput) Display(data MimeBundle, metadata map[string]any, displayID string) error {
	return o.s.pub.publish("display_data", o.req, displayContent(data, metadata, displayID))
}

func (o *cellOutput) UpdateDisplay(data MimeBundle, metadata map[string]any, displayID string) error {
	if displayID == "" {
		return fmt.Errorf("jupyter: UpdateDisplay needs a display id")
	}
	return o.s.pub.publish("update_display_data", o.req, displayContent(data, metadata, displayID))
}

func displayContent(data MimeBundle, metadata map[string]any, displayID string) DisplayData {
	if data == nil {
		data = MimeBundle{}
	}
	d := DisplayData{Data: data, Metadata: orEmpty(metadata)}
	if displayID != "" {
		d.Transient = map[string]any{"display_id": displayID}
	}
	return d
}

func (o *cellOutput) ClearOutput(wait bool) error {
	return o.s.pub.publish("clear_output", o.req, ClearOutput{Wait: wait})
}

func (o *cellOutput) Publish(msgType string, content any) error {
	return o.s.pub.publish(msgType, o.req, content)
}

func (o *cellOutput) Input(ctx context.Context, prompt string, password bool) (string, error) {
	if !o.allowStdin {
		return "", ErrStdinNotAllowed
	}
	if o.done.Load() {
		return "", ErrCellFinished
	}
	s := o.s
	s.inputMu.Lock()
	defer s.inputMu.Unlock()
	s.pub.flush()
	// input_request goes to the execute request's identities on the stdin
	// socket: Jupyter clients give their shell and stdin sockets one identity.
	m, err := NewMessage(s.session, "input_request", o.req, InputRequest{Prompt: prompt, Password: password})
	if err != nil {
		return "", err
	}
	w := &inputWait{id: m.Header.MsgID, ch: make(chan string, 1)}
	s.mu.Lock()
	s.inputWait = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.inputWait == w {
			s.inputWait = nil
		}
		s.mu.Unlock()
	}()
	frames, err := m.Frames(s.signer)
	if err != nil {
		return "", err
	}
	s.stdinOut.send(frames)
	select {
	case v := <-w.ch:
		return v, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-o.ctx.Done():
		return "", o.ctx.Err()
	case <-s.stopped:
		return "", ErrClosed
	}
}

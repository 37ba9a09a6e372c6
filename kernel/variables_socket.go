package kernel

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A kernel's shell channel runs requests one at a time, so a listing asked
// for there waits behind a cell that trains for an hour; Jupyter's control
// channel, which does not wait, carries only interrupts and shutdowns. So a
// served session also answers variable requests on a Unix socket of its
// own, beside its connection file (VariablesSocket), one goroutine per
// connection, never touching the interpreter while a cell runs.
//
// The protocol is one JSON line each way per connection. The request:
//
//	{"key": "<the connection file's key>", "op": "list"}
//	{"key": "…", "op": "inspect", "name": "x"}
//	{"key": "…", "op": "watch"}
//
// A first request makes the session keep a snapshot from then on (watch
// does nothing else: a front end sends it when it connects, so that its
// first listing during a long cell finds one). The reply is
// {"snapshot": VariablesSnapshot} for list (an empty one for watch), {"detail":
// VariableDetail} for inspect, or {"error": "…", "busy": true|false}. A
// request without the connection's key is refused: the socket is the
// owner's only (mode 0600), and the key is the same secret Jupyter's
// signatures use.

// VariablesRequest is a request on the variables socket.
type VariablesRequest struct {
	Key  string `json:"key"`
	Op   string `json:"op"`             // list, inspect or watch
	Name string `json:"name,omitempty"` // for inspect
}

// VariablesReply is the answer to a VariablesRequest: one of Snapshot,
// Detail or Error is set. Busy goes with an Error that says the kernel was
// busy running a cell.
type VariablesReply struct {
	Snapshot *VariablesSnapshot `json:"snapshot,omitempty"`
	Detail   *VariableDetail    `json:"detail,omitempty"`
	Error    string             `json:"error,omitempty"`
	Busy     bool               `json:"busy,omitempty"`
}

// maxSocketPath is the longest Unix socket path used as is (Linux allows
// 107 bytes, macOS 103).
const maxSocketPath = 100

// VariablesSocket returns the path of the Unix socket where the kernel
// served from connectionFile answers variable requests: the connection
// file's absolute path with ".json" replaced by ".variables.sock", or, when
// that is too long for a socket, a name in os.TempDir derived from it.
func VariablesSocket(connectionFile string) string {
	abs, err := filepath.Abs(connectionFile)
	if err != nil {
		abs = connectionFile
	}
	p := strings.TrimSuffix(abs, ".json") + ".variables.sock"
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "kiln-"+hex.EncodeToString(sum[:8])+".variables.sock")
}

// serveVariables listens on the variables socket of connectionFile and
// answers requests until ctx ends. The first request (a front end that
// lists variables) makes the session take a snapshot at the end of every
// cell from then on; a front end that never asks costs nothing. The socket
// file is removed when it stops.
func serveVariables(ctx context.Context, s *Session, connectionFile, key string, log *slog.Logger) error {
	path := VariablesSocket(connectionFile)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path) // left by a kernel that died
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("kernel: variables socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		os.Remove(path)
		return fmt.Errorf("kernel: variables socket: %w", err)
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	go func() {
		defer os.Remove(path)
		for {
			c, err := l.Accept()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					log.Warn("kernel: variables socket", "err", err)
				}
				return
			}
			go answerVariables(s, c, key)
		}
	}()
	return nil
}

// variablesTimeout bounds one connection: a client that sends nothing is
// dropped.
const variablesTimeout = 10 * time.Second

// answerVariables serves one connection.
func answerVariables(s *Session, c net.Conn, key string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(variablesTimeout))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return
	}
	var req VariablesRequest
	var rep VariablesReply
	switch {
	case json.Unmarshal(line, &req) != nil:
		rep.Error = "kernel: variables: the request is not JSON"
	case !hmac.Equal([]byte(req.Key), []byte(key)):
		rep.Error = "kernel: variables: wrong key (use the connection file's)"
	case req.Op == "watch":
		s.watchVariables()
		rep.Snapshot = &VariablesSnapshot{Variables: []VariableInfo{}}
	case req.Op == "list":
		s.watchVariables()
		snap := s.Variables()
		rep.Snapshot = &snap
	case req.Op == "inspect":
		d, err := s.InspectVariable(req.Name)
		if err != nil {
			rep.Error, rep.Busy = err.Error(), errors.Is(err, ErrBusy)
		} else {
			rep.Detail = &d
		}
	default:
		rep.Error = fmt.Sprintf("kernel: variables: unknown op %q (list, inspect, watch)", req.Op)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		b, _ = json.Marshal(VariablesReply{Error: "kernel: variables: " + err.Error()})
	}
	_, _ = c.Write(append(b, '\n'))
}

// RequestVariables asks the kernel served from connectionFile for a
// variables request (list or inspect) on its variables socket, signing it
// with the connection file's key. It fails when the kernel has no such
// socket (not a Kiln kernel, or an older one), when ctx ends first, or with
// the kernel's error (wrapping ErrBusy when it was busy).
func RequestVariables(ctx context.Context, connectionFile string, req VariablesRequest) (VariablesReply, error) {
	var rep VariablesReply
	b, err := os.ReadFile(connectionFile)
	if err != nil {
		return rep, fmt.Errorf("kernel: variables: %w", err)
	}
	var info struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return rep, fmt.Errorf("kernel: variables: connection file %s: %w", connectionFile, err)
	}
	req.Key = info.Key
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", VariablesSocket(connectionFile))
	if err != nil {
		return rep, fmt.Errorf("kernel: variables: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	out, _ := json.Marshal(req)
	if _, err := c.Write(append(out, '\n')); err != nil {
		return rep, fmt.Errorf("kernel: variables: %w", err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return rep, fmt.Errorf("kernel: variables: %w", err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("kernel: variables: bad reply: %w", err)
	}
	if rep.Error != "" {
		if rep.Busy {
			return rep, fmt.Errorf("%s: %w", rep.Error, ErrBusy)
		}
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

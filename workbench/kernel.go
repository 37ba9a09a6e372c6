package workbench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// kernelHost starts (or attaches to) the kernel, restarts it when it dies,
// and runs the UI's requests on it.
type kernelHost struct {
	ctx     context.Context
	cfg     Config
	publish func(string, any)

	mu       sync.Mutex
	proc     *jupyter.KernelProcess // nil when attached
	client   *jupyter.KernelClient
	state    string // starting, idle, busy, dead, restarting
	restarts int
	lastErr  string
	gen      int // incremented at every (re)start, so a stale watcher stays quiet

	// exec holds one token: one request at a time, as the kernel runs
	// them; waiting for it gives up when the caller's context ends (a
	// panel asking for variables while a long cell trains).
	exec chan struct{}
}

// lock takes the kernel for one request, or fails when ctx ends first.
func (k *kernelHost) lock(ctx context.Context) error {
	select {
	case k.exec <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the kernel is busy running a cell: %w", ctx.Err())
	}
}

func (k *kernelHost) unlock() { <-k.exec }

func newKernelHost(ctx context.Context, cfg Config, publish func(string, any)) *kernelHost {
	return &kernelHost{ctx: ctx, cfg: cfg, publish: publish, state: "starting", exec: make(chan struct{}, 1)}
}

// kernelStartTimeout bounds how long a kernel may take to answer.
const kernelStartTimeout = 60 * time.Second

// connect starts a kernel process (or dials the attached one) and waits
// until it answers.
func (k *kernelHost) connect(ctx context.Context) (*jupyter.KernelProcess, *jupyter.KernelClient, error) {
	ctx, cancel := context.WithTimeout(ctx, kernelStartTimeout)
	defer cancel()
	if k.cfg.Existing != "" {
		c, err := jupyter.DialFile(ctx, k.cfg.Existing, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("workbench: attach to the kernel of %s: %w", k.cfg.Existing, err)
		}
		if _, err := c.WaitForReady(ctx); err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("workbench: the kernel of %s does not answer: %w", k.cfg.Existing, err)
		}
		return nil, c, nil
	}
	p, err := jupyter.StartKernel(jupyter.StartOptions{
		Spec: jupyter.KernelSpec{Argv: []string{k.cfg.Kiln, "kernel", "run", "-f", "{connection_file}"},
			DisplayName: "Go (Kiln)", Language: "go", InterruptMode: "message"},
		Name: "kiln", Dir: k.cfg.Root, Env: k.cfg.KernelEnv,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("workbench: start the kernel: %w", err)
	}
	c, err := p.Connect(ctx, nil)
	if err != nil {
		p.Kill()
		return nil, nil, fmt.Errorf("workbench: the kernel did not start: %w", err)
	}
	return p, c, nil
}

// start brings the first kernel up.
func (k *kernelHost) start(ctx context.Context) error {
	p, c, err := k.connect(ctx)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.proc, k.client, k.state = p, c, "idle"
	k.gen++
	gen := k.gen
	k.mu.Unlock()
	go k.watch(gen, c)
	k.watchVariables()
	k.announce("")
	return nil
}

// status is the kernel's state for the UI.
func (k *kernelHost) status() map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := map[string]any{"status": k.state, "restarts": k.restarts}
	if k.lastErr != "" {
		st["last_error"] = k.lastErr
	}
	return st
}

// announce publishes the kernel's status, with a message.
func (k *kernelHost) announce(message string) {
	st := k.status()
	if message != "" {
		st["message"] = message
	}
	k.publish("kernel.status", st)
}

func (k *kernelHost) setState(state string) {
	k.mu.Lock()
	k.state = state
	k.mu.Unlock()
	k.announce("")
}

// watch waits for the kernel of generation gen to die; a started kernel is
// then restarted, an attached one is reported dead.
func (k *kernelHost) watch(gen int, c *jupyter.KernelClient) {
	k.mu.Lock()
	attached := k.proc == nil
	k.mu.Unlock()
	why := "the connection was lost"
	if attached {
		// No process to wait for: the kernel's heartbeat tells.
		if !k.heartbeat(c) {
			return
		}
		why = "its heartbeat stopped"
	} else {
		select {
		case <-k.ctx.Done():
			return
		case <-c.Done():
		}
	}
	k.mu.Lock()
	if gen != k.gen || k.ctx.Err() != nil { // restarted on purpose, or closing
		k.mu.Unlock()
		return
	}
	if err := c.Err(); err != nil {
		why = err.Error()
	}
	k.lastErr, k.state = lastLine(why), "dead"
	k.mu.Unlock()
	if attached {
		k.announce("the attached kernel died: " + lastLine(why) + "; attach to a new one")
		return
	}
	k.announce("the kernel died: " + lastLine(why) + "; restarting")
	if err := k.restart(k.ctx, false); err != nil {
		k.announce("the kernel died and could not be restarted: " + err.Error())
		return
	}
	k.announce("the kernel died: " + lastLine(why) + "; restarted (variables are lost, the notebook is intact)")
}

// Heartbeat checks of an attached kernel: a ping every heartbeatEvery, each
// given heartbeatTimeout; heartbeatMisses failures in a row mean the kernel
// is gone (one slow answer on a loaded machine does not).
const (
	heartbeatEvery   = time.Second
	heartbeatTimeout = 3 * time.Second
	heartbeatMisses  = 3
)

// heartbeat pings an attached kernel until it stops answering (true) or the
// client or the workbench closes (false).
func (k *kernelHost) heartbeat(c *jupyter.KernelClient) bool {
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	misses := 0
	for {
		select {
		case <-k.ctx.Done():
			return false
		case <-c.Done():
			return !errors.Is(c.Err(), jupyter.ErrClientClosed)
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(k.ctx, heartbeatTimeout)
		err := c.Ping(ctx)
		cancel()
		if err == nil {
			misses = 0
		} else if misses++; misses >= heartbeatMisses {
			return true
		}
	}
}

// lastLine is the last non-empty line of s (a crash report's verdict).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// restart replaces the kernel with a new process; graceful asks the old
// one to shut down first.
func (k *kernelHost) restart(ctx context.Context, graceful bool) error {
	k.mu.Lock()
	if k.proc == nil {
		k.mu.Unlock()
		return errors.New("an attached kernel is restarted by whoever started it")
	}
	old, oc := k.proc, k.client
	k.gen++
	k.state = "restarting"
	k.mu.Unlock()
	k.announce("")
	if graceful && oc != nil {
		old.Shutdown(ctx, oc, 2*time.Second)
	} else {
		old.Kill()
	}
	if oc != nil {
		oc.Close()
	}
	p, c, err := k.connect(ctx)
	k.mu.Lock()
	if err != nil {
		k.state, k.lastErr = "dead", err.Error()
		k.mu.Unlock()
		return err
	}
	k.proc, k.client, k.state = p, c, "idle"
	k.restarts++
	gen := k.gen
	k.mu.Unlock()
	go k.watch(gen, c)
	k.watchVariables()
	return nil
}

func (k *kernelHost) current() (*jupyter.KernelClient, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.client == nil || k.state == "dead" || k.state == "restarting" {
		return nil, fmt.Errorf("the kernel is %s", k.state)
	}
	return k.client, nil
}

// close shuts a started kernel down; an attached one is left running.
func (k *kernelHost) close() {
	k.mu.Lock()
	p, c := k.proc, k.client
	k.gen++
	k.mu.Unlock()
	if p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		p.Shutdown(ctx, c, 2*time.Second)
		cancel()
	}
	if c != nil {
		c.Close()
	}
}

// outputOf turns an IOPub message into an nbformat output (nil for
// messages that are not outputs). update reports an update_display_data,
// whose display id is in id.
func outputOf(m *jupyter.Message, count int) (out map[string]any, update bool, id string) {
	var c map[string]any
	if m.Decode(&c) != nil {
		return nil, false, ""
	}
	if t, ok := c["transient"].(map[string]any); ok {
		id, _ = t["display_id"].(string)
	}
	switch m.Type() {
	case "stream":
		return map[string]any{"output_type": "stream", "name": c["name"], "text": c["text"]}, false, ""
	case "display_data", "update_display_data":
		o := map[string]any{"output_type": "display_data", "data": c["data"], "metadata": orEmpty(c["metadata"])}
		return o, m.Type() == "update_display_data", id
	case "execute_result":
		return map[string]any{"output_type": "execute_result", "execution_count": count, "data": c["data"],
			"metadata": orEmpty(c["metadata"])}, false, ""
	case "error":
		return map[string]any{"output_type": "error", "ename": c["ename"], "evalue": c["evalue"],
			"traceback": c["traceback"]}, false, ""
	}
	return nil, false, ""
}

func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

// maxMergedStream bounds the stream text merged into one output, so a
// long log costs copies of at most this much per message; past it, the
// text goes on in a new output.
const maxMergedStream = 64 << 10

// cellOutputs collects one execution's outputs, applying display updates
// in place, and publishes each as it comes.
type cellOutputs struct {
	mu      sync.Mutex
	path    string
	cell    string
	outs    []map[string]any
	ids     map[string][]int // display id → indexes of its outputs
	publish func(string, any)
}

func (co *cellOutputs) add(m *jupyter.Message) {
	out, update, id := outputOf(m, 0)
	if out == nil {
		if m.Type() == "clear_output" {
			co.mu.Lock()
			co.outs, co.ids = nil, map[string][]int{}
			co.mu.Unlock()
			co.publish("cell.output", map[string]any{"path": co.path, "cell_id": co.cell, "clear": true})
		}
		return
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if update {
		for _, i := range co.ids[id] {
			co.outs[i] = out
			co.publish("cell.output", map[string]any{"path": co.path, "cell_id": co.cell, "output": out, "index": i})
		}
		return
	}
	// Consecutive text on the same stream is one output, as Jupyter keeps
	// it: a training loop's log stays one block, and the notebook small.
	if n := len(co.outs); n > 0 && out["output_type"] == "stream" {
		last := co.outs[n-1]
		prev, ok1 := last["text"].(string)
		text, ok2 := out["text"].(string)
		if ok1 && ok2 && last["output_type"] == "stream" && last["name"] == out["name"] && len(prev) < maxMergedStream {
			merged := map[string]any{"output_type": "stream", "name": out["name"], "text": prev + text}
			co.outs[n-1] = merged
			co.publish("cell.output", map[string]any{"path": co.path, "cell_id": co.cell, "output": merged, "index": n - 1})
			return
		}
	}
	if id != "" {
		co.ids[id] = append(co.ids[id], len(co.outs))
	}
	co.outs = append(co.outs, out)
	co.publish("cell.output", map[string]any{"path": co.path, "cell_id": co.cell, "output": out, "index": len(co.outs) - 1})
}

// execute runs a cell of a notebook on the kernel.
func (k *kernelHost) execute(ctx context.Context, path, cellID, code string) (map[string]any, error) {
	if err := k.lock(ctx); err != nil {
		return nil, err
	}
	defer k.unlock()
	c, err := k.current()
	if err != nil {
		return nil, err
	}
	k.setState("busy")
	defer func() {
		k.mu.Lock()
		if k.state == "busy" {
			k.state = "idle"
		}
		k.mu.Unlock()
		k.announce("")
	}()
	co := &cellOutputs{path: path, cell: cellID, ids: map[string][]int{}, publish: k.publish}
	rep, err := c.Execute(ctx, jupyter.ExecuteRequest{Code: code, StoreHistory: true},
		&jupyter.ExecuteHandlers{Output: co.add})
	co.mu.Lock()
	outs := co.outs
	co.mu.Unlock()
	if outs == nil {
		outs = []map[string]any{}
	}
	for _, o := range outs {
		if o["output_type"] == "execute_result" {
			o["execution_count"] = rep.ExecutionCount
		}
	}
	status := rep.Status
	if err != nil {
		// The kernel died (or the request was abandoned): the cell shows why.
		outs = append(outs, map[string]any{"output_type": "error", "ename": "KernelDied", "evalue": lastLine(err.Error()),
			"traceback": []string{err.Error()}})
		status = "error"
	}
	var count any
	if rep.ExecutionCount > 0 {
		count = rep.ExecutionCount
	}
	k.publish("cell.done", map[string]any{"path": path, "cell_id": cellID, "execution_count": count, "status": status})
	return map[string]any{"execution_count": count, "status": status, "outputs": outs}, nil
}

// evaluate runs code silently (not in the history, no execution count) and
// returns its result's MIME bundle; a cell error is an error.
func (k *kernelHost) evaluate(ctx context.Context, code string) (map[string]any, error) {
	if err := k.lock(ctx); err != nil {
		return nil, err
	}
	defer k.unlock()
	c, err := k.current()
	if err != nil {
		return nil, err
	}
	var data map[string]any
	var cellErr string
	rep, err := c.Execute(ctx, jupyter.ExecuteRequest{Code: code}, &jupyter.ExecuteHandlers{Output: func(m *jupyter.Message) {
		out, _, _ := outputOf(m, 0)
		switch {
		case out == nil:
		case out["output_type"] == "execute_result" || out["output_type"] == "display_data":
			data, _ = out["data"].(map[string]any)
		case out["output_type"] == "error":
			cellErr = fmt.Sprintf("%v: %v", out["ename"], out["evalue"])
		}
	}})
	if err != nil {
		return nil, err
	}
	if rep.Status != "ok" {
		if cellErr == "" && rep.ErrorContent != nil {
			cellErr = rep.Ename + ": " + rep.Evalue
		}
		return nil, errors.New(cellErr)
	}
	if data == nil {
		return nil, errors.New("the kernel returned no value")
	}
	return data, nil
}

// evaluateJSON evaluates code whose result carries application/json and
// decodes it into v.
func (k *kernelHost) evaluateJSON(ctx context.Context, code string, v any) error {
	data, err := k.evaluate(ctx, code)
	if err != nil {
		return err
	}
	raw, ok := data["application/json"]
	if !ok {
		return fmt.Errorf("the kernel's answer to %s has no JSON", code)
	}
	b, _ := json.Marshal(raw)
	return json.Unmarshal(b, v)
}

// listing is a method answering {key: [...]} with the JSON list a magic
// (`%who --json`, `%device --json`) prints.
func (k *kernelHost) listing(magic, key string) method {
	return func(ctx context.Context, _ json.RawMessage) (any, error) {
		var list []map[string]any
		if err := k.evaluateJSON(ctx, magic, &list); err != nil {
			return nil, err
		}
		return map[string]any{key: list}, nil
	}
}

// decodeName reads params {name} and checks the name against valid, so
// that nothing but a name reaches the code the method runs in the kernel.
func decodeName(params json.RawMessage, valid *regexp.Regexp, what string) (string, error) {
	var p struct {
		Name string `json:"name"`
	}
	if err := decode(params, &p); err != nil {
		return "", err
	}
	if !valid.MatchString(p.Name) {
		return "", fmt.Errorf("%q is not %s", p.Name, what)
	}
	return p.Name, nil
}

// deviceName is a device's name as %device takes it.
var deviceName = regexp.MustCompile(`^[a-z]+(:[0-9]+)?$`)

// identifier is a Go identifier (a variable of the session).
var identifier = regexp.MustCompile(`^[\p{L}_][\p{L}\p{Nd}_]*$`)

func (s *Server) kernelMethods() map[string]method {
	k := s.kernel
	return map[string]method{
		"kernel.status": func(context.Context, json.RawMessage) (any, error) { return k.status(), nil },
		"kernel.execute": func(ctx context.Context, params json.RawMessage) (any, error) {
			var p struct {
				Path   string `json:"path"`
				CellID string `json:"cell_id"`
				Code   string `json:"code"`
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			res, err := k.execute(ctx, p.Path, p.CellID, p.Code)
			if err != nil {
				return nil, err
			}
			if p.Path != "" {
				outs, _ := res["outputs"].([]map[string]any)
				s.notebooks.setOutputs(p.Path, p.CellID, outs, res["execution_count"])
			}
			return res, nil
		},
		"kernel.interrupt": func(ctx context.Context, _ json.RawMessage) (any, error) {
			k.mu.Lock()
			p, c := k.proc, k.client
			k.mu.Unlock()
			if c == nil {
				return nil, errors.New("no kernel")
			}
			if p != nil {
				return map[string]any{}, p.Interrupt(ctx, c)
			}
			return map[string]any{}, c.Interrupt(ctx)
		},
		"kernel.restart": func(ctx context.Context, _ json.RawMessage) (any, error) {
			if err := k.restart(ctx, true); err != nil {
				return nil, err
			}
			k.announce("the kernel was restarted")
			return k.status(), nil
		},
		"kernel.complete": func(ctx context.Context, params json.RawMessage) (any, error) {
			var p struct {
				Code   string `json:"code"`
				Cursor int    `json:"cursor"`
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			c, err := k.current()
			if err != nil {
				return nil, err
			}
			r, err := c.Complete(ctx, p.Code, p.Cursor)
			if err != nil {
				return nil, err
			}
			if r.Matches == nil {
				r.Matches = []string{}
			}
			return map[string]any{"matches": r.Matches, "cursor_start": r.CursorStart, "cursor_end": r.CursorEnd}, nil
		},
		"kernel.inspect": func(ctx context.Context, params json.RawMessage) (any, error) {
			var p struct {
				Code   string `json:"code"`
				Cursor int    `json:"cursor"`
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			c, err := k.current()
			if err != nil {
				return nil, err
			}
			r, err := c.Inspect(ctx, p.Code, p.Cursor, 0)
			if err != nil {
				return nil, err
			}
			text, _ := r.Data["text/plain"].(string)
			return map[string]any{"found": r.Found, "text": text}, nil
		},
		"devices.list": k.listing("%device --json", "devices"),
		"devices.set": func(ctx context.Context, params json.RawMessage) (any, error) {
			name, err := decodeName(params, deviceName, "a device name (cpu, cuda:0, strict)")
			if err != nil {
				return nil, err
			}
			if _, err := k.evaluate(ctx, "%device "+name); err != nil {
				return nil, err
			}
			return map[string]any{}, nil
		},
		"variables.list":    k.variablesList,
		"variables.inspect": k.variablesInspect,
		"model.tree": func(ctx context.Context, params json.RawMessage) (any, error) {
			name, err := decodeName(params, identifier, "a variable name")
			if err != nil {
				return nil, err
			}
			data, err := k.evaluate(ctx, "viz.ModuleTree("+name+")")
			if err != nil {
				return nil, err
			}
			html, _ := data["text/html"].(string)
			return map[string]any{"html": html}, nil
		},
		"model.graph": func(ctx context.Context, params json.RawMessage) (any, error) {
			var p struct {
				Name  string `json:"name"`
				Input string `json:"input"` // a Go expression for the example input; guessed when empty
			}
			if err := decode(params, &p); err != nil {
				return nil, err
			}
			if !identifier.MatchString(p.Name) {
				return nil, fmt.Errorf("%q is not a variable name", p.Name)
			}
			data, err := k.evaluate(ctx, graphCode(p.Name, p.Input))
			if err != nil {
				return nil, err
			}
			svg, _ := data["image/svg+xml"].(string)
			return map[string]any{"svg": svg}, nil
		},
	}
}

// graphCode is the cell that traces model name into a graph. Without an
// input expression it makes one from the model's first parameter: a
// Linear's [out, in] weight takes [1, in], a convolution's [out, in, kh, kw]
// weight takes a [1, in, 28, 28] image.
func graphCode(name, input string) string {
	if input == "" {
		input = `func() *tensor.Tensor {
	ps := nn.Params(` + name + `)
	if len(ps) == 0 {
		panic("the model has no parameters to guess an input from: give an example input")
	}
	w := ps[0].Param
	dev := w.Device().NoGrad()
	s := w.Shape()
	if len(s) == 2 {
		return tensor.Randn(dev, 1, s[1])
	}
	if len(s) == 4 {
		return tensor.Randn(dev, 1, s[1], 28, 28)
	}
	panic("cannot guess an input for a first parameter of shape " + fmt.Sprint(w.Shape()) + ": give an example input")
}()`
	}
	return `func() *viz.Graph {
	g, err := viz.Trace(` + name + `, ` + input + `)
	if err != nil {
		panic(err)
	}
	return g
}()`
}

// Variables are asked of the kernel on its variables socket (see
// kernel.VariablesSocket and kernel/variables_socket.go), which answers
// while a cell runs, from the snapshot taken when the last cell finished.
// A kernel without the socket is asked `%who --json` on the shell channel,
// which waits for the running cell.

// variablesTimeout bounds a request on the variables socket.
const variablesTimeout = 3 * time.Second

// variablesSocket is kernel.VariablesSocket (the workbench does not link
// the interpreter): the socket beside the connection file, or one in the
// temporary folder named for it when that path is too long.
func variablesSocket(connectionFile string) string {
	abs, err := filepath.Abs(connectionFile)
	if err != nil {
		abs = connectionFile
	}
	p := strings.TrimSuffix(abs, ".json") + ".variables.sock"
	if len(p) <= 100 {
		return p
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "kiln-"+hex.EncodeToString(sum[:8])+".variables.sock")
}

// errNoVariablesSocket means the kernel does not answer on a variables
// socket (not a Kiln kernel, or an older one).
var errNoVariablesSocket = errors.New("the kernel has no variables socket")

// errKernelBusy is what a variables request that needs the interpreter
// wraps while a cell runs.
var errKernelBusy = errors.New("the kernel is busy")

// variablesRequest sends one request on the kernel's variables socket and
// returns the reply's payload (snapshot or detail).
func (k *kernelHost) variablesRequest(ctx context.Context, req map[string]any) (map[string]any, error) {
	k.mu.Lock()
	file := k.cfg.Existing
	if k.proc != nil {
		file = k.proc.ConnectionFile
	}
	var key string
	if k.client != nil {
		key = k.client.Connection().Key
	}
	k.mu.Unlock()
	if file == "" {
		return nil, errNoVariablesSocket
	}
	if key == "" {
		info, err := jupyter.ReadConnectionFile(file)
		if err != nil {
			return nil, err
		}
		key = info.Key
	}
	ctx, cancel := context.WithTimeout(ctx, variablesTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", variablesSocket(file))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoVariablesSocket, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	req["key"] = key
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("the kernel's variables socket: %w", err)
	}
	var rep struct {
		Snapshot map[string]any `json:"snapshot"`
		Detail   map[string]any `json:"detail"`
		Error    string         `json:"error"`
		Busy     bool           `json:"busy"`
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return nil, fmt.Errorf("the kernel's variables socket: %w", err)
	}
	switch {
	case rep.Busy:
		return nil, fmt.Errorf("%w: %s", errKernelBusy, strings.TrimPrefix(rep.Error, "kernel: "))
	case rep.Error != "":
		return nil, errors.New(strings.TrimPrefix(rep.Error, "kernel: "))
	case rep.Snapshot != nil:
		return rep.Snapshot, nil
	case rep.Detail != nil:
		return rep.Detail, nil
	}
	return nil, errors.New("the kernel's variables socket sent an empty reply")
}

// watchVariables tells a new kernel that the workbench lists its
// variables, so that it keeps a snapshot at the end of every cell and a
// listing during the first long cell finds one. A kernel without the
// socket is left alone. It runs before the kernel is announced, while it
// is idle: sent from a goroutine it could arrive after the first cell had
// ended (and before the next began), and a listing during that next cell
// found no snapshot (TestVariablesWhileTheCellRuns failed so once).
func (k *kernelHost) watchVariables() {
	_, _ = k.variablesRequest(k.ctx, map[string]any{"op": "watch"})
}

// variablesList answers {variables, cell, busy, running, live}: the
// variables with their summaries, as of cell (the last finished one), and
// whether a cell (running) is running now. It does not wait for a running
// cell unless the kernel has no variables socket.
func (k *kernelHost) variablesList(ctx context.Context, _ json.RawMessage) (any, error) {
	snap, err := k.variablesRequest(ctx, map[string]any{"op": "list"})
	if err == nil {
		if snap["variables"] == nil {
			snap["variables"] = []any{}
		}
		delete(snap, "taken")
		return snap, nil
	}
	if !errors.Is(err, errNoVariablesSocket) {
		return nil, err
	}
	var list []map[string]any
	if err := k.evaluateJSON(ctx, "%who --json", &list); err != nil {
		return nil, err
	}
	return map[string]any{"variables": list, "live": true}, nil
}

// variablesInspect answers the richer view of one variable (params
// {name}): its summary with values, parameter table or elements (see
// kernel.VariableDetail). While a cell runs it fails at once saying the
// kernel is busy.
func (k *kernelHost) variablesInspect(ctx context.Context, params json.RawMessage) (any, error) {
	name, err := decodeName(params, identifier, "a variable name")
	if err != nil {
		return nil, err
	}
	d, err := k.variablesRequest(ctx, map[string]any{"op": "inspect", "name": name})
	if errors.Is(err, errNoVariablesSocket) {
		return nil, fmt.Errorf("cannot inspect %s: %w", name, err)
	}
	return d, err
}

package jupyter

import (
	"fmt"
	"sort"
	"sync"
)

// CommOpenFunc is called when a frontend opens a comm for a registered
// target, with the comm_open data. Returning an error closes the comm again
// (the frontend gets comm_close).
type CommOpenFunc func(c *Comm, data map[string]any) error

// Comms is the kernel's comm registry: targets the session accepts, and the
// comms open now. Comm messages from the frontend are handled on the shell
// channel, in order with execute requests; callbacks run there too, so they
// must not block for long.
type Comms struct {
	s       *Server
	mu      sync.Mutex
	targets map[string]CommOpenFunc
	open    map[string]*Comm
}

func newComms(s *Server) *Comms {
	return &Comms{s: s, targets: map[string]CommOpenFunc{}, open: map[string]*Comm{}}
}

// RegisterTarget makes target_name openable by frontends; open (which may be
// nil) is called for each comm_open. Registering a name again replaces it.
func (cs *Comms) RegisterTarget(name string, open CommOpenFunc) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if open == nil {
		open = func(*Comm, map[string]any) error { return nil }
	}
	cs.targets[name] = open
}

// UnregisterTarget removes a target; comms already open stay open.
func (cs *Comms) UnregisterTarget(name string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.targets, name)
}

// Open opens a comm from the kernel side: it publishes comm_open for target
// with data. The frontend must know the target; if it does not it answers
// with comm_close.
func (cs *Comms) Open(target string, data map[string]any) (*Comm, error) {
	c := &Comm{ID: NewID(), Target: target, comms: cs}
	cs.mu.Lock()
	cs.open[c.ID] = c
	cs.mu.Unlock()
	if data == nil {
		data = map[string]any{}
	}
	if err := cs.s.publishComm("comm_open", CommOpen{CommID: c.ID, TargetName: target, Data: data}, nil); err != nil {
		cs.forget(c.ID)
		return nil, err
	}
	return c, nil
}

// Get returns the open comm with id, or nil.
func (cs *Comms) Get(id string) *Comm {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.open[id]
}

// List returns the open comms, by id, optionally only those of target
// (target "" lists all).
func (cs *Comms) List(target string) []*Comm {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []*Comm
	for _, c := range cs.open {
		if target == "" || c.Target == target {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (cs *Comms) forget(id string) *Comm {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.open[id]
	delete(cs.open, id)
	return c
}

// handleOpen answers a frontend's comm_open.
func (cs *Comms) handleOpen(m *Message) {
	var req CommOpen
	if err := m.Decode(&req); err != nil || req.CommID == "" {
		cs.s.log.Warn("jupyter: bad comm_open dropped", "err", err)
		return
	}
	cs.mu.Lock()
	open, ok := cs.targets[req.TargetName]
	c := &Comm{ID: req.CommID, Target: req.TargetName, comms: cs}
	if ok {
		cs.open[c.ID] = c
	}
	cs.mu.Unlock()
	if !ok {
		cs.s.log.Info("jupyter: comm_open for unknown target, closing", "target", req.TargetName)
		_ = cs.s.publishComm("comm_close", CommMsg{CommID: req.CommID, Data: map[string]any{}}, nil)
		return
	}
	var err error
	cs.s.guard("comm open "+req.TargetName, func() { err = open(c, req.Data) })
	if err != nil {
		cs.s.log.Info("jupyter: comm target refused comm_open", "target", req.TargetName, "err", err)
		cs.forget(c.ID)
		_ = cs.s.publishComm("comm_close", CommMsg{CommID: req.CommID, Data: map[string]any{"error": err.Error()}}, nil)
	}
}

// handleMsg delivers a frontend's comm_msg.
func (cs *Comms) handleMsg(m *Message) {
	var req CommMsg
	if err := m.Decode(&req); err != nil {
		cs.s.log.Warn("jupyter: bad comm_msg dropped", "err", err)
		return
	}
	c := cs.Get(req.CommID)
	if c == nil {
		cs.s.log.Info("jupyter: comm_msg for unknown comm dropped", "comm_id", req.CommID)
		return
	}
	c.mu.Lock()
	f := c.onMsg
	c.mu.Unlock()
	if f != nil {
		cs.s.guard("comm msg "+c.Target, func() { f(req.Data, m.Buffers) })
	}
}

// handleClose handles a frontend's comm_close.
func (cs *Comms) handleClose(m *Message) {
	var req CommMsg
	if err := m.Decode(&req); err != nil {
		cs.s.log.Warn("jupyter: bad comm_close dropped", "err", err)
		return
	}
	c := cs.forget(req.CommID)
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	f := c.onClose
	c.mu.Unlock()
	if f != nil {
		cs.s.guard("comm close "+c.Target, func() { f(req.Data) })
	}
}

// Comm is one open comm: a bidirectional channel between kernel code and a
// frontend object (a widget, a live chart).
type Comm struct {
	ID     string
	Target string

	comms   *Comms
	mu      sync.Mutex
	closed  bool
	onMsg   func(data map[string]any, buffers [][]byte)
	onClose func(data map[string]any)
}

// OnMessage sets the function called for each comm_msg from the frontend.
func (c *Comm) OnMessage(f func(data map[string]any, buffers [][]byte)) {
	c.mu.Lock()
	c.onMsg = f
	c.mu.Unlock()
}

// OnClose sets the function called when the frontend closes the comm.
func (c *Comm) OnClose(f func(data map[string]any)) {
	c.mu.Lock()
	c.onClose = f
	c.mu.Unlock()
}

// Send publishes a comm_msg with data and optional binary buffers. It fails
// if the comm is closed.
func (c *Comm) Send(data map[string]any, buffers ...[]byte) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("jupyter: comm %s (%s) is closed", c.ID, c.Target)
	}
	if data == nil {
		data = map[string]any{}
	}
	return c.comms.s.publishComm("comm_msg", CommMsg{CommID: c.ID, Data: data}, buffers)
}

// Close closes the comm from the kernel side, publishing comm_close. Closing
// twice is a no-op.
func (c *Comm) Close(data map[string]any) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.comms.forget(c.ID)
	if data == nil {
		data = map[string]any{}
	}
	return c.comms.s.publishComm("comm_close", CommMsg{CommID: c.ID, Data: data}, nil)
}

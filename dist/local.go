package dist

import (
	"fmt"
	"sync"
	"time"

	"github.com/kiln-ml/kiln/tensor"
)

// LocalConfig configures an in-process group. Its zero value is usable.
type LocalConfig struct {
	// Timeout is how long a member waits in a collective for the others
	// before failing with ErrTimeout (and breaking the group). Zero means
	// DefaultTimeout; negative means wait forever.
	Timeout time.Duration `json:"timeout"`
}

// NewLocalGroup returns n communicators that rendezvous in memory, one per
// member, with the default timeout. Use each from its own goroutine (one per
// device, say): a collective returns once all n members have called it.
// It panics if n < 1.
func NewLocalGroup(n int) []Communicator {
	return NewLocalGroupConfig(n, LocalConfig{})
}

// NewLocalGroupConfig is NewLocalGroup with a config. It panics if n < 1.
func NewLocalGroupConfig(n int, cfg LocalConfig) []Communicator {
	if n < 1 {
		panic(fmt.Sprintf("dist.NewLocalGroup: group size %d < 1", n))
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	g := &localGroup{size: n, timeout: timeout}
	g.round = g.newRound()
	out := make([]Communicator, n)
	for r := range out {
		out[r] = &localMember{g: g, rank: r}
	}
	return out
}

// localGroup is the state the members share: the round being gathered and
// the error that broke the group, if any.
type localGroup struct {
	size    int
	timeout time.Duration

	mu     sync.Mutex
	round  *localRound
	broken error
}

// localRound is one collective: each member's call, then each one's result.
type localRound struct {
	calls   []*localCall
	arrived int
	done    chan struct{}
	err     error
	results [][]byte
	shapes  [][]int
}

// localCall is one member's side of a collective.
type localCall struct {
	name string // "AllReduce", …
	op   ReduceOp
	root int
	payload
}

func (g *localGroup) newRound() *localRound {
	return &localRound{calls: make([]*localCall, g.size), done: make(chan struct{})}
}

// localMember is one rank's Communicator.
type localMember struct {
	g      *localGroup
	rank   int
	closed bool
}

func (m *localMember) Rank() int       { return m.rank }
func (m *localMember) Size() int       { return m.g.size }
func (m *localMember) LocalRank() int  { return m.rank }
func (m *localMember) Backend() string { return "local" }

// Close leaves the group: members that wait for this one, now or later,
// fail with ErrClosed instead of timing out.
func (m *localMember) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.size > 1 && g.broken == nil {
		g.fail(fmt.Errorf("%w: rank %d left the group", ErrClosed, m.rank))
	}
	return nil
}

// fail breaks the group and releases the members waiting in the current
// round. Callers hold g.mu.
func (g *localGroup) fail(err error) {
	g.broken = err
	rd := g.round
	if rd.err == nil && rd.results == nil {
		rd.err = err
		close(rd.done)
	}
}

// exchange deposits c, waits for every member and returns this member's
// result bytes and shape.
func (m *localMember) exchange(c *localCall) ([]byte, []int, error) {
	if m.closed {
		return nil, nil, fmt.Errorf("%w: rank %d: %s after Close", ErrClosed, m.rank, c.name)
	}
	g := m.g
	g.mu.Lock()
	if g.broken != nil {
		g.mu.Unlock()
		return nil, nil, fmt.Errorf("rank %d: %s: group broken: %w", m.rank, c.name, g.broken)
	}
	rd := g.round
	rd.calls[m.rank] = c
	rd.arrived++
	if rd.arrived == g.size {
		rd.results, rd.shapes, rd.err = g.compute(rd.calls)
		if rd.err != nil {
			g.broken = rd.err
		}
		g.round = g.newRound()
		close(rd.done)
	}
	g.mu.Unlock()

	var expire <-chan time.Time
	if g.timeout > 0 {
		timer := time.NewTimer(g.timeout)
		defer timer.Stop()
		expire = timer.C
	}
	select {
	case <-rd.done:
	case <-expire:
		g.mu.Lock()
		if g.round == rd && rd.err == nil && rd.results == nil {
			var missing []int
			for r, call := range rd.calls {
				if call == nil {
					missing = append(missing, r)
				}
			}
			g.fail(fmt.Errorf("%w: rank %d: %s did not complete in %s: rank(s) %v never arrived", ErrTimeout, m.rank, c.name, g.timeout, missing))
		}
		g.mu.Unlock()
		<-rd.done
	}
	if rd.err != nil {
		return nil, nil, rd.err
	}
	return rd.results[m.rank], rd.shapes[m.rank], nil
}

// compute checks that the calls agree and computes every member's result.
// Every member of a reduction gets the same bytes (summed in rank order), so
// the ranks stay bit-identical.
func (g *localGroup) compute(calls []*localCall) ([][]byte, [][]int, error) {
	if err := checkCalls(calls); err != nil {
		return nil, nil, err
	}
	c0 := calls[0]
	results := make([][]byte, g.size)
	shapes := make([][]int, g.size)
	switch c0.name {
	case "Barrier":
	case "AllReduce", "ReduceScatter":
		acc := append([]byte(nil), c0.raw...)
		for _, c := range calls[1:] {
			reduceInto(c0.dtype, c0.op, acc, c.raw)
		}
		if c0.op == Mean {
			divide(c0.dtype, acc, g.size)
		}
		for r := range results {
			if c0.name == "AllReduce" {
				results[r], shapes[r] = acc, c0.shape
				continue
			}
			esize, _ := elemSize(c0.dtype)
			rb := rowBytes(c0.shape, esize)
			start, count := rowSplit(c0.shape[0], g.size, r)
			results[r] = acc[start*rb : (start+count)*rb]
			shapes[r] = append([]int{count}, c0.shape[1:]...)
		}
	case "Broadcast":
		for r := range results {
			results[r], shapes[r] = calls[c0.root].raw, c0.shape
		}
	case "AllGather":
		var all []byte
		rows := 0
		for _, c := range calls {
			all = append(all, c.raw...)
			rows += c.shape[0]
		}
		shape := append([]int{rows}, c0.shape[1:]...)
		for r := range results {
			results[r], shapes[r] = all, shape
		}
	}
	return results, shapes, nil
}

// checkCalls reports whether every rank called the same collective on
// tensors that fit together; its error names the first disagreeing rank.
func checkCalls(calls []*localCall) error {
	c0 := calls[0]
	for r, c := range calls[1:] {
		r++
		if c.name != c0.name || c.op != c0.op || c.root != c0.root {
			return fmt.Errorf("%w: rank 0 called %s and rank %d called %s", ErrMismatch, describe(c0), r, describe(c))
		}
		if c.name == "Barrier" {
			continue
		}
		if c.dtype != c0.dtype {
			return fmt.Errorf("%w: %s: rank 0 has a %s tensor and rank %d a %s tensor", ErrMismatch, c.name, c0.dtype, r, c.dtype)
		}
		if err := checkShapes(c.name, 0, c0.shape, r, c.shape); err != nil {
			return err
		}
	}
	return nil
}

// checkShapes reports whether two ranks' shapes fit the collective: equal,
// or for AllGather equal but for dimension 0.
func checkShapes(name string, r0 int, s0 []int, r int, s []int) error {
	ok := len(s) == len(s0)
	for i := 0; ok && i < len(s); i++ {
		if s[i] != s0[i] && (i > 0 || name != "AllGather") {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s: rank %d has shape %s and rank %d has shape %s", ErrMismatch, name, r0, shapeString(s0), r, shapeString(s))
	}
	return nil
}

// describe names a call for a mismatch error.
func describe(c *localCall) string {
	switch c.name {
	case "AllReduce", "ReduceScatter":
		return fmt.Sprintf("%s(%s)", c.name, c.op)
	case "Broadcast":
		return fmt.Sprintf("Broadcast(root %d)", c.root)
	}
	return c.name
}

// AllReduce reduces t in place over the group.
func (m *localMember) AllReduce(t *tensor.Tensor, op ReduceOp) error {
	p, err := readPayload("AllReduce", m.rank, t, op, true)
	if err != nil {
		return err
	}
	raw, _, err := m.exchange(&localCall{name: "AllReduce", op: op, payload: p})
	if err != nil {
		return err
	}
	return writeBack("AllReduce", m.rank, t, raw)
}

// Broadcast copies rank root's t into every member's t.
func (m *localMember) Broadcast(t *tensor.Tensor, root int) error {
	if root < 0 || root >= m.g.size {
		return fmt.Errorf("dist: rank %d: Broadcast from root %d outside a group of %d", m.rank, root, m.g.size)
	}
	p, err := readPayload("Broadcast", m.rank, t, Sum, false)
	if err != nil {
		return err
	}
	raw, _, err := m.exchange(&localCall{name: "Broadcast", root: root, payload: p})
	if err != nil {
		return err
	}
	return writeBack("Broadcast", m.rank, t, raw)
}

// AllGather concatenates every member's t along dimension 0.
func (m *localMember) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	p, err := readPayload("AllGather", m.rank, t, Sum, false)
	if err != nil {
		return nil, err
	}
	if len(p.shape) == 0 {
		return nil, fmt.Errorf("%w: rank %d: AllGather of a scalar (needs at least one dimension)", ErrUnsupported, m.rank)
	}
	raw, shape, err := m.exchange(&localCall{name: "AllGather", payload: p})
	if err != nil {
		return nil, err
	}
	return newTensor("AllGather", m.rank, t, raw, shape)
}

// ReduceScatter reduces t over the group and returns this member's rows.
func (m *localMember) ReduceScatter(t *tensor.Tensor, op ReduceOp) (*tensor.Tensor, error) {
	p, err := readPayload("ReduceScatter", m.rank, t, op, true)
	if err != nil {
		return nil, err
	}
	if len(p.shape) == 0 {
		return nil, fmt.Errorf("%w: rank %d: ReduceScatter of a scalar (needs at least one dimension)", ErrUnsupported, m.rank)
	}
	raw, shape, err := m.exchange(&localCall{name: "ReduceScatter", op: op, payload: p})
	if err != nil {
		return nil, err
	}
	return newTensor("ReduceScatter", m.rank, t, raw, shape)
}

// Barrier waits for every member.
func (m *localMember) Barrier() error {
	_, _, err := m.exchange(&localCall{name: "Barrier"})
	return err
}

package main

import (
	"fmt"
	"os"
	"sync"
)

// eventName is the one Wails event the page listens to; its argument is an
// envelope.
const eventName = "workbench"

// envelope is the argument of every "workbench" event.
type envelope struct {
	Topic string `json:"topic"`
	Data  any    `json:"data"`
}

// emitter sends one event to the page. The Wails implementation wraps
// runtime.EventsEmit and must only ever hold Wails' own context: EventsEmit
// given any other context ends the process (log.Fatalf).
type emitter interface {
	Emit(name string, data any)
}

// maxPending bounds the updates kept before the page is ready. Past it the
// oldest are dropped: panels fetch snapshots, so only liveness is lost.
const maxPending = 4096

// publisher is the engine's Publisher for the desktop app. Until the page is
// ready (ready is called) it buffers updates; then it sends them, in order,
// through the emitter; after shutdown it drops them, so nothing reaches
// Wails once the window is gone.
type publisher struct {
	// emitMu serialises emits so that updates reach the page in order; it is
	// never held by shutdown, so closing the window cannot wait on an emit.
	emitMu sync.Mutex

	mu      sync.Mutex
	em      emitter
	pending []envelope
	dropped int
	closed  bool
}

// Publish sends an update to the page, or buffers it before the page is
// ready, or drops it after shutdown.
func (p *publisher) Publish(topic string, data any) {
	p.emitMu.Lock()
	defer p.emitMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	em := p.em
	if em == nil {
		if len(p.pending) >= maxPending {
			p.pending = p.pending[1:]
			p.dropped++
		}
		p.pending = append(p.pending, envelope{Topic: topic, Data: data})
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	em.Emit(eventName, envelope{Topic: topic, Data: data})
}

// ready starts delivering through em, first sending what was buffered. Later
// calls are ignored, as are calls after shutdown.
func (p *publisher) ready(em emitter) {
	p.emitMu.Lock()
	defer p.emitMu.Unlock()
	p.mu.Lock()
	if p.closed || p.em != nil || em == nil {
		p.mu.Unlock()
		return
	}
	p.em = em
	pending, dropped := p.pending, p.dropped
	p.pending, p.dropped = nil, 0
	p.mu.Unlock()
	if dropped > 0 {
		debugf("%d early updates were dropped before the page was ready", dropped)
	}
	for _, e := range pending {
		em.Emit(eventName, e)
	}
}

// shutdown stops all delivery: buffered and later updates are dropped.
func (p *publisher) shutdown() {
	p.mu.Lock()
	p.closed = true
	p.em = nil
	p.pending = nil
	p.mu.Unlock()
}

// debugf logs to stderr when KILN_WORKBENCH_DEBUG is set.
func debugf(format string, args ...any) {
	if os.Getenv("KILN_WORKBENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "kiln-workbench: "+format+"\n", args...)
	}
}

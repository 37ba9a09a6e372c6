package main

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// fakeEmitter records what would have gone to the page.
type fakeEmitter struct {
	mu     sync.Mutex
	events []envelope
	names  []string
}

func (f *fakeEmitter) Emit(name string, data any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names = append(f.names, name)
	f.events = append(f.events, data.(envelope))
}

func (f *fakeEmitter) topics() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Topic)
	}
	return out
}

func TestPublisherBuffersUntilReady(t *testing.T) {
	p := &publisher{}
	p.Publish("kernel.status", map[string]string{"status": "starting"})
	p.Publish("runs.changed", struct{}{})
	em := &fakeEmitter{}
	p.ready(em)
	if got, want := em.topics(), []string{"kernel.status", "runs.changed"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after ready: %v, want %v", got, want)
	}
	p.Publish("cell.done", 1)
	if got, want := em.topics(), []string{"kernel.status", "runs.changed", "cell.done"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after publish: %v, want %v", got, want)
	}
	for _, n := range em.names {
		if n != "workbench" {
			t.Errorf("event name %q, want workbench", n)
		}
	}
	if d := em.events[0].Data.(map[string]string)["status"]; d != "starting" {
		t.Errorf("data %q, want starting", d)
	}
	// A second ready (a page reload) keeps the first emitter and resends nothing.
	em2 := &fakeEmitter{}
	p.ready(em2)
	p.Publish("notebook.saved", 2)
	if len(em2.events) != 0 || len(em.events) != 4 {
		t.Errorf("after a second ready: first got %d, second %d events; want 4 and 0", len(em.events), len(em2.events))
	}
}

func TestPublisherDropsAfterShutdown(t *testing.T) {
	for _, readyFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("ready=%v", readyFirst), func(t *testing.T) {
			p := &publisher{}
			em := &fakeEmitter{}
			p.Publish("early", 0)
			if readyFirst {
				p.ready(em)
			}
			p.shutdown()
			p.Publish("late", 1)
			p.ready(em) // must not revive it
			p.Publish("later", 2)
			want := []string(nil)
			if readyFirst {
				want = []string{"early"}
			}
			if got := em.topics(); !reflect.DeepEqual(got, want) {
				t.Fatalf("emitted %v, want %v", got, want)
			}
		})
	}
}

func TestPublisherBoundsTheBuffer(t *testing.T) {
	p := &publisher{}
	for i := range maxPending + 10 {
		p.Publish("run.update", i)
	}
	em := &fakeEmitter{}
	p.ready(em)
	if len(em.events) != maxPending {
		t.Fatalf("flushed %d, want %d", len(em.events), maxPending)
	}
	if first := em.events[0].Data.(int); first != 10 {
		t.Errorf("oldest kept update is %d, want 10 (the oldest are dropped)", first)
	}
}

// TestPublisherKeepsOrderUnderConcurrency publishes from many goroutines
// while the page becomes ready; every update arrives once, and each
// goroutine's updates arrive in the order it sent them.
func TestPublisherKeepsOrderUnderConcurrency(t *testing.T) {
	p := &publisher{}
	em := &fakeEmitter{}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p.Publish(fmt.Sprint(w), i)
			}
		}()
	}
	p.ready(em)
	wg.Wait()
	if len(em.events) != workers*each {
		t.Fatalf("got %d events, want %d", len(em.events), workers*each)
	}
	next := map[string]int{}
	for _, e := range em.events {
		if e.Data.(int) != next[e.Topic] {
			t.Fatalf("worker %s: got update %d, want %d", e.Topic, e.Data, next[e.Topic])
		}
		next[e.Topic]++
	}
}

package train

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"
)

// EventLogVersion is the version of the events.jsonl format, written in the
// "version" field of the log's first record. It changes when a field
// changes meaning or is removed; added fields keep it.
const EventLogVersion = 1

// EventKind says what an Event reports.
type EventKind string

// The kinds of Event, in the order a run publishes them.
const (
	EventStart      EventKind = "start"      // the run begins; carries Version and Config
	EventResume     EventKind = "resume"     // Resume continues the run from the checkpoint at Path, at Position; carries Config
	EventStep       EventKind = "step"       // every Config.LogEvery optimizer steps: running training metrics
	EventEpoch      EventKind = "epoch"      // an epoch ended: one event per split ("train", then "valid")
	EventCheckpoint EventKind = "checkpoint" // a checkpoint was written to Path, at Position, with the latest Metrics
	EventEnd        EventKind = "end"        // the run ended; Reason says why
)

// Event is one record of a training run, published to Observers and
// written as one JSON line of the run directory's events.jsonl:
//
//	{"version":1,"kind":"start","time":"…","epoch":0,"step":0,"config":{…},"batches":32}
//	{"kind":"step","time":"…","epoch":1,"step":10,"split":"train","metrics":{"loss":0.69},"lr":0.01,"batches":32,"batch":10,"samples":160}
//	{"kind":"epoch","time":"…","epoch":1,"step":32,"split":"train","metrics":{"loss":0.6},"lr":0.01,"system":{"cpu_percent":93,…}}
//	{"kind":"epoch","time":"…","epoch":1,"step":32,"split":"valid","metrics":{"loss":0.5,"accuracy":0.8}}
//	{"kind":"checkpoint","time":"…","epoch":1,"step":32,"path":"run/checkpoints/epoch-0001-step-000032",
//	 "position":{"epochs":1,"batch":0,"step":32},"metrics":{"train.loss":0.6,"valid.loss":0.5,"valid.accuracy":0.8}}
//	{"kind":"end","time":"…","epoch":3,"step":96,"reason":"completed"}
//
// Epoch counts from 1 (0 before the first epoch): on step and epoch events
// it is the epoch under way, on checkpoint, resume and end events the
// epochs completed. Step is the number of optimizer steps taken so far in
// the run. Metric values that are not finite are written as the strings
// "nan", "inf" and "-inf". The package documentation describes the log as
// a whole, resumed runs included.
type Event struct {
	Version int             `json:"version,omitempty"` // EventLogVersion, on the start event only
	Kind    EventKind       `json:"kind"`
	Time    time.Time       `json:"time"`
	Epoch   int             `json:"epoch"`
	Step    int             `json:"step"`
	Split   string          `json:"split,omitempty"`   // "train" or "valid"
	Metrics Values          `json:"metrics,omitempty"` // metric values by name ("train.loss", "valid.loss", … on checkpoint events)
	LR      float64         `json:"lr,omitempty"`      // the learning rate, on step and train epoch events
	Elapsed float64         `json:"elapsed_s,omitempty"`
	Reason  StopReason      `json:"reason,omitempty"` // on the end event
	Error   string          `json:"error,omitempty"`  // on the end event of a failed run; on a resume event, the corrupt checkpoints skipped
	Config  json.RawMessage `json:"config,omitempty"` // on start and resume events

	Path     string    `json:"path,omitempty"`     // the checkpoint directory, on checkpoint and resume events
	Position *Position `json:"position,omitempty"` // the run's position, on checkpoint and resume events
	System   Values    `json:"system,omitempty"`   // host and device usage, on train epoch events and at most every 5 s on step events (see the package doc)

	// Progress within the epoch, for dashboards: Batches is the number of
	// training batches per epoch (on start and step events), Batch the
	// batches of the current epoch done so far and Samples the training
	// samples they held (on step events).
	Batches int `json:"batches,omitempty"`
	Batch   int `json:"batch,omitempty"`
	Samples int `json:"samples,omitempty"`

	// WorldSize is the number of data-parallel ranks (Supervised.Comm), on
	// the start event of a distributed run only. In such a run Batches and
	// Batch count rank 0's batches (its shard is never smaller than
	// another's) and Samples all ranks' samples.
	WorldSize int `json:"world_size,omitempty"`
}

// Values maps metric names to values. In JSON, non-finite values are the
// strings "nan", "inf" and "-inf".
type Values map[string]float64

// MarshalJSON writes v, non-finite values as strings.
func (v Values) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(v))
	for k, x := range v {
		switch {
		case math.IsNaN(x):
			m[k] = "nan"
		case math.IsInf(x, 1):
			m[k] = "inf"
		case math.IsInf(x, -1):
			m[k] = "-inf"
		default:
			m[k] = x
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads v, accepting "nan", "inf" and "-inf".
func (v *Values) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	out := make(Values, len(m))
	for k, x := range m {
		switch x := x.(type) {
		case float64:
			out[k] = x
		case string:
			switch x {
			case "nan":
				out[k] = math.NaN()
			case "inf":
				out[k] = math.Inf(1)
			case "-inf":
				out[k] = math.Inf(-1)
			default:
				return fmt.Errorf("train: metric %q: bad value %q", k, x)
			}
		default:
			return fmt.Errorf("train: metric %q: bad value %v", k, x)
		}
	}
	*v = out
	return nil
}

// Observer receives a run's events. OnEvent runs on a goroutine of its own
// for each observer, in event order, never on the training loop's: a slow
// observer does not slow training, but when it falls more than
// ObserverBuffer events behind, further events are dropped for it (and
// counted in Result.DroppedEvents), except the end event, which the run
// waits to deliver.
type Observer interface {
	OnEvent(e Event)
}

// ObserverBuffer is how many events an Observer may fall behind.
const ObserverBuffer = 1024

// ObserverFunc adapts a function to Observer. (In yaegi notebooks, prefer a
// type with an OnEvent method: closures created in a loop share variables.)
type ObserverFunc func(e Event)

// OnEvent calls f(e).
func (f ObserverFunc) OnEvent(e Event) { f(e) }

// fanout delivers events to observers on their own goroutines.
// The end event is never dropped: publish waits until every observer can
// take it.
type fanout struct {
	chans   []chan Event
	wg      sync.WaitGroup
	dropped int
}

func newFanout(obs []Observer) *fanout {
	f := &fanout{}
	for _, o := range obs {
		if o == nil {
			continue
		}
		ch := make(chan Event, ObserverBuffer)
		f.chans = append(f.chans, ch)
		f.wg.Add(1)
		go func(o Observer) {
			defer f.wg.Done()
			for e := range ch {
				safeOnEvent(o, e)
			}
		}(o)
	}
	return f
}

// safeOnEvent calls o.OnEvent, so that a panicking observer cannot end the
// process from its goroutine.
func safeOnEvent(o Observer, e Event) {
	defer func() { _ = recover() }()
	o.OnEvent(e)
}

func (f *fanout) publish(e Event) {
	for _, ch := range f.chans {
		if e.Kind == EventEnd {
			ch <- e
			continue
		}
		select {
		case ch <- e:
		default:
			f.dropped++
		}
	}
}

// close waits for every observer to handle the events it was sent.
func (f *fanout) close() {
	for _, ch := range f.chans {
		close(ch)
	}
	f.wg.Wait()
}

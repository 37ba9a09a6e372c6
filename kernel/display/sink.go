package display

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync/atomic"
)

// Kind says what a [Message] asks the front end to do. The names follow the
// Jupyter messages they become.
type Kind int

const (
	// DisplayData shows a bundle (display_data).
	DisplayData Kind = iota
	// UpdateDisplayData replaces the bundle shown under a display_id
	// (update_display_data).
	UpdateDisplayData
	// ClearOutput clears the output of the running cell (clear_output).
	ClearOutput
)

// String returns the Jupyter message type of k.
func (k Kind) String() string {
	switch k {
	case DisplayData:
		return "display_data"
	case UpdateDisplayData:
		return "update_display_data"
	case ClearOutput:
		return "clear_output"
	}
	return "unknown"
}

// Message is one display request sent to the [Sink].
type Message struct {
	Kind Kind
	// Data is the bundle to show (DisplayData, UpdateDisplayData).
	// Data.Transient["display_id"] names the display it shows or updates.
	Data Data
	// Wait, for ClearOutput, defers clearing until new output arrives
	// (avoids flicker when replacing output).
	Wait bool
}

// DisplayID returns the display_id the message carries, or "".
func (m Message) DisplayID() string {
	id, _ := m.Data.Transient["display_id"].(string)
	return id
}

// Sink receives display requests. The kernel session installs one with
// SetSink and routes each message to the cell that is running. Display may be
// called from several goroutines at once.
type Sink interface {
	Display(m Message)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(m Message)

// Display calls f(m).
func (f SinkFunc) Display(m Message) { f(m) }

// ErrNoSink is returned when nothing listens for display requests: the
// program is not running inside a Kiln kernel.
var ErrNoSink = errors.New("display: no kernel to display to (not running inside a Kiln kernel)")

type sinkBox struct{ s Sink }

var current atomic.Pointer[sinkBox]

// SetSink makes s receive every later display request and returns the sink
// it replaces (nil if none). A nil s removes the sink. It is safe to call at
// any time from any goroutine.
func SetSink(s Sink) (previous Sink) {
	var box *sinkBox
	if s != nil {
		box = &sinkBox{s}
	}
	if old := current.Swap(box); old != nil {
		return old.s
	}
	return nil
}

func send(m Message) error {
	box := current.Load()
	if box == nil {
		return ErrNoSink
	}
	box.s.Display(m)
	return nil
}

// Display shows d now, below the running cell's other output. It fails only
// with ErrNoSink.
func Display(d Data) error {
	return send(Message{Kind: DisplayData, Data: withText(d)})
}

// Clear clears the running cell's output. With wait set, the clearing
// happens when the next output arrives, so replacing output does not flicker.
// It fails only with ErrNoSink.
func Clear(wait bool) error {
	return send(Message{Kind: ClearOutput, Wait: wait})
}

// Handle is a display that can be updated in place after it was shown.
type Handle struct {
	id string
}

// New shows d under a fresh display_id and returns the handle that updates
// it. Without a sink nothing is shown and the handle's Update returns
// ErrNoSink.
func New(d Data) *Handle {
	h := &Handle{id: newDisplayID()}
	_ = send(Message{Kind: DisplayData, Data: h.tag(d)})
	return h
}

// ID returns the handle's display_id.
func (h *Handle) ID() string { return h.id }

// Update replaces what the handle shows with d, wherever it is shown (also
// in cells that ran earlier). It fails only with ErrNoSink.
func (h *Handle) Update(d Data) error {
	return send(Message{Kind: UpdateDisplayData, Data: h.tag(d)})
}

// Display shows d under the handle's display_id once more, below the running
// cell's output: a second view of the same display, which later updates
// change too. It fails only with ErrNoSink.
func (h *Handle) Display(d Data) error {
	return send(Message{Kind: DisplayData, Data: h.tag(d)})
}

func (h *Handle) tag(d Data) Data {
	d = withText(d).clone()
	if d.Transient == nil {
		d.Transient = MIMEMap{}
	}
	d.Transient["display_id"] = h.id
	return d
}

// withText makes sure a bundle has a text/plain form, as Jupyter expects.
func withText(d Data) Data {
	if _, ok := d.Data[MIMETypeText]; ok {
		return d
	}
	d = d.clone()
	if d.Data == nil {
		d.Data = MIMEMap{}
	}
	d.Data[MIMETypeText] = ""
	return d
}

func newDisplayID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

package jupyter

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"time"
)

// ProtocolVersion is the Jupyter messaging protocol version Kiln speaks and
// writes into every header.
const ProtocolVersion = "5.3"

// delimiter separates the ZeroMQ routing identities from the signed part of
// a message on the wire.
const delimiter = "<IDS|MSG>"

// Errors returned by ParseMessage. They wrap more detail; test with errors.Is.
var (
	// ErrNoDelimiter: the frames contain no "<IDS|MSG>" delimiter frame.
	ErrNoDelimiter = errors.New("jupyter: no <IDS|MSG> delimiter")
	// ErrMissingFrames: fewer than the signature and the four JSON frames
	// follow the delimiter.
	ErrMissingFrames = errors.New("jupyter: missing message frames")
	// ErrSignature: the HMAC signature does not match the frames.
	ErrSignature = errors.New("jupyter: bad message signature")
	// ErrMalformed: a JSON frame is not a valid JSON object, or the header
	// lacks msg_type or msg_id.
	ErrMalformed = errors.New("jupyter: malformed message")
)

// Header is a Jupyter message header (also used as parent_header).
// A zero Header encodes as {} (the parent of unsolicited messages).
type Header struct {
	MsgID    string `json:"msg_id,omitempty"`
	Session  string `json:"session,omitempty"`
	Username string `json:"username,omitempty"`
	Date     string `json:"date,omitempty"`
	MsgType  string `json:"msg_type,omitempty"`
	Version  string `json:"version,omitempty"`
}

// Message is one Jupyter message: routing identities, the four signed JSON
// parts and optional binary buffers. Content stays raw JSON; Decode unpacks it.
type Message struct {
	// Identities are the ZeroMQ routing frames before the delimiter. A kernel
	// copies a request's identities into its reply (and into input_request).
	Identities [][]byte
	Header     Header
	Parent     Header
	Metadata   map[string]any
	Content    json.RawMessage
	Buffers    [][]byte

	// rawHeader is the header exactly as received, so that a reply's
	// parent_header repeats fields this package does not know; parentRaw is
	// that copy on the reply side.
	rawHeader json.RawMessage
	parentRaw json.RawMessage
	signature string // as received, for replay detection
	// refused: a frame of the message was refused for its size (see
	// limit.go); only Identities and Header are set.
	refused *TooLargeError
}

// Type returns the message type (Header.MsgType).
func (m *Message) Type() string { return m.Header.MsgType }

// Decode unmarshals the content into v. It fails if the content is not JSON
// of v's shape.
func (m *Message) Decode(v any) error {
	if err := json.Unmarshal(m.Content, v); err != nil {
		return fmt.Errorf("jupyter: decode %s content: %w", m.Header.MsgType, err)
	}
	return nil
}

// NewMessage builds a message of msgType in session with content marshalled
// to JSON. With a non-nil parent it is a reply or output for that request: it
// takes the parent's header as parent_header and its routing identities. It
// fails only if content cannot be marshalled.
func NewMessage(session, msgType string, parent *Message, content any) (*Message, error) {
	raw, err := marshalContent(content)
	if err != nil {
		return nil, fmt.Errorf("jupyter: marshal %s content: %w", msgType, err)
	}
	m := &Message{
		Header:   newHeader(session, msgType),
		Metadata: map[string]any{},
		Content:  raw,
	}
	if parent != nil {
		m.Parent = parent.Header
		m.Identities = parent.Identities
		m.parentRaw = parent.rawHeader
	}
	return m, nil
}

func marshalContent(content any) (json.RawMessage, error) {
	switch c := content.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		if len(c) == 0 {
			return json.RawMessage("{}"), nil
		}
		return c, nil
	}
	return json.Marshal(content)
}

var username = func() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "kiln"
}()

func newHeader(session, msgType string) Header {
	return Header{
		MsgID:    NewID(),
		Session:  session,
		Username: username,
		// Microseconds: jupyter_client's date regex accepts at most six
		// fractional digits.
		Date:    time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		MsgType: msgType,
		Version: ProtocolVersion,
	}
}

// NewID returns a random version-4 UUID string, used for msg_id, session
// ids, comm ids and connection keys.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("jupyter: crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Signer computes and checks HMAC-SHA256 message signatures. A Signer with
// an empty key signs with "" and accepts any signature, as the protocol
// specifies for connections with authentication disabled.
type Signer struct {
	key []byte
}

// NewSigner returns a Signer for the connection key and signature scheme.
// The scheme must be "hmac-sha256" (or empty, meaning that); others fail.
func NewSigner(scheme, key string) (*Signer, error) {
	if scheme != "" && scheme != "hmac-sha256" {
		return nil, fmt.Errorf("jupyter: unsupported signature scheme %q (only hmac-sha256)", scheme)
	}
	return &Signer{key: []byte(key)}, nil
}

// Enabled reports whether messages are signed (the key is not empty).
func (s *Signer) Enabled() bool { return s != nil && len(s.key) > 0 }

// Sign returns the lowercase hex HMAC-SHA256 of the concatenated parts
// (header, parent_header, metadata, content), or "" when signing is off.
func (s *Signer) Sign(parts ...[]byte) string {
	if !s.Enabled() {
		return ""
	}
	return hex.EncodeToString(s.mac(parts))
}

func (s *Signer) mac(parts [][]byte) []byte {
	h := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// Verify reports whether sig is the signature of parts, in constant time.
// With signing off every signature is accepted.
func (s *Signer) Verify(sig []byte, parts ...[]byte) bool {
	if !s.Enabled() {
		return true
	}
	got := make([]byte, hex.DecodedLen(len(sig)))
	n, err := hex.Decode(got, sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got[:n], s.mac(parts))
}

// ParseMessage decodes wire frames ([identities…, "<IDS|MSG>", signature,
// header, parent_header, metadata, content, buffers…]) into a Message,
// checking the signature with signer (nil means no checking). It fails with
// ErrNoDelimiter, ErrMissingFrames, ErrSignature or ErrMalformed; it never
// panics on any input.
func ParseMessage(frames [][]byte, signer *Signer) (*Message, error) {
	d := -1
	for i, f := range frames {
		if string(f) == delimiter {
			d = i
			break
		}
	}
	if d < 0 {
		return nil, ErrNoDelimiter
	}
	if len(frames) < d+6 {
		return nil, fmt.Errorf("%w: %d frames after the delimiter, need 5", ErrMissingFrames, len(frames)-d-1)
	}
	sig, header, parent, metadata, content := frames[d+1], frames[d+2], frames[d+3], frames[d+4], frames[d+5]
	if signer != nil && !signer.Verify(sig, header, parent, metadata, content) {
		return nil, ErrSignature
	}
	m := &Message{signature: string(sig)}
	if d > 0 {
		m.Identities = cloneFrames(frames[:d])
	}
	if err := unmarshalObject("header", header, &m.Header); err != nil {
		return nil, err
	}
	if m.Header.MsgType == "" || m.Header.MsgID == "" {
		return nil, fmt.Errorf("%w: header without msg_type or msg_id", ErrMalformed)
	}
	m.rawHeader = append(json.RawMessage(nil), header...)
	if err := unmarshalObject("parent_header", parent, &m.Parent); err != nil {
		return nil, err
	}
	if err := unmarshalObject("metadata", metadata, &m.Metadata); err != nil {
		return nil, err
	}
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	var probe map[string]json.RawMessage
	if err := unmarshalObject("content", content, &probe); err != nil {
		return nil, err
	}
	m.Content = append(json.RawMessage(nil), content...)
	if len(frames) > d+6 {
		m.Buffers = cloneFrames(frames[d+6:])
	}
	return m, nil
}

// unmarshalObject decodes a frame that must be a JSON object.
func unmarshalObject(name string, frame []byte, v any) error {
	t := bytes.TrimLeft(frame, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: %s is not a JSON object", ErrMalformed, name)
	}
	if err := json.Unmarshal(frame, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, name, err)
	}
	return nil
}

func cloneFrames(fs [][]byte) [][]byte {
	out := make([][]byte, len(fs))
	for i, f := range fs {
		out[i] = append([]byte(nil), f...)
	}
	return out
}

// Frames serialises m for the wire, signed by signer (nil or disabled means
// an empty signature). It fails only if the header or metadata cannot be
// marshalled.
func (m *Message) Frames(signer *Signer) ([][]byte, error) {
	header, err := json.Marshal(m.Header)
	if err != nil {
		return nil, fmt.Errorf("jupyter: marshal header: %w", err)
	}
	parent := []byte(m.parentRaw)
	if len(parent) == 0 {
		if parent, err = json.Marshal(m.Parent); err != nil {
			return nil, fmt.Errorf("jupyter: marshal parent header: %w", err)
		}
	}
	md := m.Metadata
	if md == nil {
		md = map[string]any{}
	}
	metadata, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("jupyter: marshal metadata: %w", err)
	}
	content := []byte(m.Content)
	if len(content) == 0 {
		content = []byte("{}")
	}
	frames := make([][]byte, 0, len(m.Identities)+6+len(m.Buffers))
	frames = append(frames, m.Identities...)
	frames = append(frames, []byte(delimiter), []byte(signer.Sign(header, parent, metadata, content)),
		header, parent, metadata, content)
	frames = append(frames, m.Buffers...)
	return frames, nil
}

package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	"github.com/kiln-ml/kiln/backends"
)

// The wire protocol. A session is one bidirectional gRPC stream. The client
// sends frames, each a run of calls; the server runs them in order and
// answers only the calls that wait (hello, read, sync, memory stats), one
// reply frame per request frame that holds any. Buffer ids are chosen by
// the client and are names in that stream's table only, so a client cannot
// name another's buffers and allocation needs no round trip.
//
// Every field is a varint (lengths, ids, dimensions; signed values
// zigzag-encoded) or eight little-endian bytes (float64 values, seeds).

// protocolVersion changes whenever the encoding does; the server refuses a
// hello of another version.
const protocolVersion = 2

// Call opcodes, client to server.
const (
	opHello byte = iota + 1
	opAlloc
	opFree
	opWrite
	opRead
	opSync
	opStats
	opFill
	opCopy
	opUnary
	opUnaryGrad
	opBinary
	opBinaryScalar
	opWhere
	opReduce
	opArgReduce
	opScan
	opSort
	opMatmul
	opGather
	opScatter
	opIm2Col
	opCol2Im
	opRandom
)

// Reply opcodes, server to client.
const (
	repHello byte = iota + 1
	repRead
	repSync
	repStats
)

// Error codes carried by replies, so that the client rewraps the
// backends sentinels callers test with errors.Is.
const (
	codeNone byte = iota
	codeOther
	codeDivideByZero
	codeOutOfMemory
)

// chunkBytes is the most bytes one write or read call carries: larger
// transfers are split into calls of this size, so no gRPC message comes near
// the size limits and transfers stream through flow control.
const chunkBytes = 1 << 20

// windowBytes is the HTTP/2 flow-control window of a stream: several
// chunks may be in flight before the sender waits.
const windowBytes = 8 * chunkBytes

// maxRank bounds the dimensions of a decoded view, so that a corrupt frame
// cannot make the server allocate without limit.
const maxRank = 64

// serviceName and sessionMethod name the one gRPC method.
const (
	serviceName   = "kiln.remote.Remote"
	sessionMethod = "/" + serviceName + "/Session"
	codecName     = "kiln-remote"
)

// frame is the message of both directions: encoded calls or replies.
// A received frame's bytes may belong to gRPC's buffer pool until release;
// a sent frame's bytes are either b (handed over: the sender never touches
// them again) or pooled (returned to the pool when gRPC has written them).
type frame struct {
	b      []byte
	buf    mem.Buffer // received: holds b until release
	pooled *[]byte    // sent: bytes from the pool
}

// release returns a received frame's bytes to gRPC's pool; b is invalid
// afterwards.
func (f *frame) release() {
	if f.buf != nil {
		f.buf.Free()
		f.buf, f.b = nil, nil
	}
}

// frameCodec moves frames as raw bytes: the payload is already encoded.
type frameCodec struct{}

func (frameCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("remote: codec: cannot marshal %T", v)
	}
	if f.pooled != nil {
		return mem.BufferSlice{mem.NewBuffer(f.pooled, mem.DefaultBufferPool())}, nil
	}
	return mem.BufferSlice{mem.SliceBuffer(f.b)}, nil
}

func (frameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("remote: codec: cannot unmarshal into %T", v)
	}
	// One piece (the usual case) is kept without a copy until release.
	f.buf = data.MaterializeToBuffer(mem.DefaultBufferPool())
	f.b = f.buf.ReadOnlyData()
	return nil
}

func (frameCodec) Name() string { return codecName }

func init() { encoding.RegisterCodecV2(frameCodec{}) }

// sessionHandler is what the service's handler type requires of a server.
type sessionHandler interface {
	session(stream grpc.ServerStream) error
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*sessionHandler)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Session",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			return srv.(sessionHandler).session(stream)
		},
	}},
	Metadata: "kiln/remote",
}

// encoder appends fields to a frame.
type encoder struct{ b []byte }

func (e *encoder) op(c byte)      { e.b = append(e.b, c) }
func (e *encoder) u(v uint64)     { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) i(v int64)      { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) f(v float64)    { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *encoder) u64(v uint64)   { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) bytes(p []byte) { e.u(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) str(s string)   { e.u(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) flag(v bool)    { e.b = append(e.b, boolByte(v)) }
func (e *encoder) ints(v []int) {
	e.u(uint64(len(v)))
	for _, x := range v {
		e.i(int64(x))
	}
}
func (e *encoder) view(id uint64, v backends.View) {
	e.u(id)
	e.b = append(e.b, byte(v.DType))
	e.ints(v.Shape)
	e.ints(v.Strides)
	e.i(int64(v.Offset))
}

func (e *encoder) geometry(g backends.ConvGeometry) {
	for _, v := range []int{g.N, g.C, g.H, g.W, g.KH, g.KW, g.StrideH, g.StrideW,
		g.PadTop, g.PadLeft, g.DilationH, g.DilationW, g.OutH, g.OutW} {
		e.i(int64(v))
	}
	e.f(g.PadValue)
}

// reply appends an error code and message.
func (e *encoder) errorField(err error) {
	if err == nil {
		e.b = append(e.b, codeNone)
		return
	}
	code := codeOther
	switch {
	case errors.Is(err, backends.ErrDivideByZero):
		code = codeDivideByZero
	case errors.Is(err, backends.ErrOutOfMemory):
		code = codeOutOfMemory
	}
	e.b = append(e.b, code)
	e.str(err.Error())
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// errCorrupt is the decoder's error for a frame that ends early or holds a
// value out of range.
var errCorrupt = errors.New("corrupt frame")

// decoder reads fields from a frame. After the first failure every read
// returns zero and err holds the cause, so callers check err once per call.
type decoder struct {
	b   []byte
	err error
	// ints holds unused room for the slices ints returns: one allocation
	// serves the dimensions of many views. Slices handed out are never
	// reused, so a backend may keep a view's shape.
	ints []int
}

// intsBlock is how many ints one allocation of decoder.ints holds.
const intsBlock = 128

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("remote: %w: %s", errCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) more() bool { return d.err == nil && len(d.b) > 0 }

func (d *decoder) byte1() byte {
	if len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) u() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) i() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int reads a signed varint that must fit an int.
func (d *decoder) int() int {
	v := d.i()
	if int64(int(v)) != v {
		d.fail("integer out of range")
		return 0
	}
	return int(v)
}

// count reads a non-negative length no larger than limit.
func (d *decoder) count(limit uint64) int {
	v := d.u()
	if v > limit {
		d.fail(fmt.Sprintf("length %d over %d", v, limit))
		return 0
	}
	return int(v)
}

func (d *decoder) u64() uint64 {
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) f() float64 { return math.Float64frombits(d.u64()) }
func (d *decoder) flag() bool { return d.byte1() != 0 }

// bytes returns a slice of the frame itself (no copy).
func (d *decoder) bytes() []byte {
	n := d.count(uint64(len(d.b)))
	if d.err != nil {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) str() string { return string(d.bytes()) }

func (d *decoder) intSlice() []int {
	n := d.count(maxRank)
	if d.err != nil {
		return nil
	}
	if n == 0 {
		return []int{}
	}
	if len(d.ints) < n {
		d.ints = make([]int, max(intsBlock, n))
	}
	v := d.ints[:n:n]
	d.ints = d.ints[n:]
	for k := range v {
		v[k] = d.int()
	}
	return v
}

// wireView is a view as sent: the buffer is still an id.
type wireView struct {
	id   uint64
	view backends.View
}

func (d *decoder) view() wireView {
	id := d.u()
	dt := backends.DType(d.byte1())
	shape := d.intSlice()
	strides := d.intSlice()
	off := d.int()
	if d.err == nil && (!dt.Valid() || len(shape) != len(strides)) {
		d.fail(fmt.Sprintf("bad view: dtype %d, %d dimensions with %d strides", dt, len(shape), len(strides)))
	}
	return wireView{id: id, view: backends.View{DType: dt, Shape: shape, Strides: strides, Offset: off}}
}

func (d *decoder) geometry() backends.ConvGeometry {
	var v [14]int
	for k := range v {
		v[k] = d.int()
	}
	return backends.ConvGeometry{N: v[0], C: v[1], H: v[2], W: v[3], KH: v[4], KW: v[5],
		StrideH: v[6], StrideW: v[7], PadTop: v[8], PadLeft: v[9], DilationH: v[10], DilationW: v[11],
		OutH: v[12], OutW: v[13], PadValue: d.f()}
}

// errorField reads an error code and message; the sentinels the backends
// package defines are wrapped again so errors.Is works across the wire.
func (d *decoder) errorField(where string) error {
	code := d.byte1()
	if code == codeNone || d.err != nil {
		return nil
	}
	msg := d.str()
	switch code {
	case codeDivideByZero:
		return &remoteError{where: where, msg: msg, sentinel: backends.ErrDivideByZero}
	case codeOutOfMemory:
		return &remoteError{where: where, msg: msg, sentinel: backends.ErrOutOfMemory}
	}
	return &remoteError{where: where, msg: msg}
}

// remoteError is a failure the server reported.
type remoteError struct {
	where    string // the server's address
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return "remote " + e.where + ": " + e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

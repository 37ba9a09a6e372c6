// Package remote is Kiln's Remote decorator: a backends.Backend whose
// buffers live on another machine's device, driven over gRPC, and the
// server (`kiln serve`) that lends its devices.
//
// A client opens a device by URL, remote://HOST:PORT/DEVICE, through
// tensor.OpenURL (with the token in KILN_REMOTE_TOKEN and, for TLS, the
// certificate to trust in KILN_REMOTE_CA), or with Dial:
//
//	b, err := remote.Dial("gpu-box:7878", "cuda:0", remote.Options{Token: token, TLS: cfg})
//
// Every call of the backend contract travels on one bidirectional stream.
// Kernel calls, Alloc, Free and Write are batched and sent without waiting
// (the client names buffers itself, so even Alloc needs no reply); only the
// sync points, Read and Sync, wait for the server. A batch also goes out,
// before any sync point, once it holds milliseconds of estimated work (a
// large matrix product), so that the server computes while the client
// records the calls that follow. A training step of an MNIST MLP crosses
// the wire as one frame of about fifty calls and one round trip (its loss
// read). A failure on the server
// (an index out of range, a division by zero, an allocation over the cap)
// becomes the sticky error of the next Read or Sync, as on a local
// asynchronous device, and wraps the same sentinels (backends.ErrDivideByZero,
// backends.ErrOutOfMemory).
//
// A dropped connection is never a hang: the stream's end (the server
// stopped, the network reset) or keepalive (a silent link, found within
// about 1.5× Options.KeepaliveTime) breaks the backend, and every later
// Read, Sync and Alloc returns an error wrapping ErrConnectionLost. The
// server frees a client's buffers when its stream ends, however it ends.
// Buffer ids are names in one stream's table, so a client cannot reach
// another client's buffers, even by forging ids.
//
// The server checks a token on every stream (ErrUnauthenticated for a
// wrong one) and speaks TLS when given a certificate. Sessions on one
// device take turns frame by frame, each frame ending with a Sync, so a
// failure is charged to the session whose calls caused it.
//
// What it does not do: of the optional fused interfaces, only
// CrossEntropyFusion, AdamFusion, MultiAdamFusion, LinearFusion,
// LinearActFusion and SGDFusion are forwarded (see Fused); for the others (backends.Fusion,
// ConvFusion, AttentionFusion, NormFusion, EmbeddingFusion,
// BatchNormFusion) package
// tensor composes the operations from primitives (results are the same;
// more calls cross the wire); a session does not survive a reconnection
// (its buffers are gone with the stream); MemoryStats counts this client's
// buffers (ServerMemoryStats asks the server for its whole device).
package remote

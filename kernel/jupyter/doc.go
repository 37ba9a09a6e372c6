// Package jupyter implements the Jupyter messaging protocol (version 5.3)
// over ZeroMQ (github.com/go-zeromq/zmq4, pure Go): the kernel side that
// serves a language session to Jupyter frontends, and a client that starts
// or attaches to kernels, as the Kiln workbench does.
//
// # Kernel side
//
// A language session implements Handler (execute, complete, inspect,
// is_complete, interrupt, shutdown). NewServer binds the five sockets of a
// connection file and Serve answers requests until a shutdown_request:
//
//	err := jupyter.Run(ctx, connectionFile, session, logger) // the body of `kiln kernel run`
//
// The Server signs and checks every message (HMAC-SHA256 with the
// connection key; an empty key disables signing), drops and logs messages
// with a bad signature, replayed signatures or a malformed body, publishes
// busy and idle around every request, answers on the socket a request came
// on, aborts queued cells after a failure with stop_on_error, keeps the
// execution history (optionally in a file), routes comms to registered
// targets, and relays stdin input requests. Shell requests run one at a
// time in order; control requests (interrupt, shutdown) run concurrently,
// and SIGINT is trapped so an interrupt never kills the kernel.
//
// While a cell runs, Handler.Execute gets an Output for its stdout and
// stderr streams, display data and updates, clear_output and input. Stream
// writes are coalesced: published at most every 50 ms, before any other
// output and before the cell's idle status, with a bounded buffer that
// slows a writer down rather than growing (20,000 printed lines arrive as a
// handful of messages).
//
// No peer can block the kernel: replies and output go through bounded
// queues, and the sockets use a TCP transport that drops a connection
// whose peer takes no data for 10 s (zmq4 itself would wait forever, and a
// stalled subscriber would stall every other one).
//
// # Client side
//
// StartKernel writes a connection file with free ports and a random key
// and starts a kernel from a kernelspec's argv; KernelProcess.Connect (or
// Dial and DialFile for a kernel started elsewhere) returns a KernelClient
// with methods for each request (Execute, Complete, Inspect, IsComplete,
// History, CommInfo, Interrupt, Shutdown, Ping), IOPub output delivered to
// the execution that caused it and to subscribers, and input requests
// answered by callbacks. When the kernel process dies, pending calls fail
// with a *KernelDiedError carrying the exit status and the end of its
// stderr.
//
// # Not included
//
// Transports other than tcp (ipc), CurveZMQ encryption and the 5.5
// kernel registration handshake; the debugger (debug_request is answered
// with an error); iopub_welcome. The package knows nothing of Go or yaegi:
// package kernel supplies the Handler.
package jupyter

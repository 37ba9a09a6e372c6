// Package workbench is the engine of Kiln's workbench: a Jupyter client of
// `kiln kernel` processes plus the API its user interface calls, served to a
// browser (`kiln workbench --browser`) or to the desktop window
// (cmd/kiln-workbench).
//
// A Server owns one kernel process, started with the `kiln` binary and
// supervised (a kernel that dies is restarted, and the UI is told), or a
// kernel attached through its connection file. Cells never run inside the
// workbench, so a cell that ends its process costs a restart, never the
// user's notebook or runs. The Server also opens, edits and autosaves
// notebooks (.ipynb, nbformat 4) under a root directory, follows training
// runs' event logs (events.jsonl) in its run directories and those of every
// run in the per-user run registry (train.RegisteredRuns), wherever the runs
// were started and whatever started them, and lists and exports their
// checkpoints.
//
// Everything the UI does is one call, Server.Call(ctx, method, params),
// with JSON parameters and result (API.md lists the methods), and every
// live update is a (topic, data) pair given to the Publishers registered
// with Subscribe. Handler serves both over HTTP and a WebSocket.
//
// # Security model
//
// Whoever reaches the API runs code as the user, so Handler answers only
// the workbench's own page and the user's scripts, with Jupyter Server's
// checks (API.md has the table): the Host header must be a loopback name,
// one of Config.AllowedHosts or the IP address the connection arrived on
// (DNS rebinding); the token is required (Config.Token, compared in
// constant time); calls and the WebSocket handshake must come from the
// workbench's own origin (Origin, else Referer; a request with neither
// must show the token itself rather than rely on the cookie); calls must
// be Content-Type: application/json, which no page of another origin can
// send without a CORS preflight, never granted. Refusals are 403 (415 for
// the content type) with a message naming the fault, and execute
// nothing. Listening beyond loopback is the command's decision: `kiln
// workbench` requires TLS or --insecure for it and warns.
//
// The package does not draw anything: the UI is package frontend's. It
// does not serve CORS, so no other origin can use the API from a browser.
package workbench

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
// runs' event logs (events.jsonl) in run directories, wherever the runs were
// started, and lists and exports their checkpoints.
//
// Everything the UI does is one call, Server.Call(ctx, method, params),
// with JSON parameters and result (API.md lists the methods), and every
// live update is a (topic, data) pair given to the Publishers registered
// with Subscribe. Handler serves both over HTTP and a WebSocket, behind a
// token. The package does not draw anything: the UI is package frontend's.
package workbench

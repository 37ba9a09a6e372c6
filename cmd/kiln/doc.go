// Command kiln is Kiln's command-line tool: it lists devices, runs the demo
// training job, and (as later parts land) runs the Jupyter kernel, the
// workbench in browser mode, exports checkpoints and benchmarks. It is pure
// Go and builds with CGO_ENABLED=0.
//
// Usage:
//
//	kiln demo [-steps N] [-device NAME]   train a small network and print the loss
//	kiln devices                          list detected devices
//	kiln version                          print the version
package main

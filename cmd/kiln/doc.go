// Command kiln is Kiln's command-line tool: it lists devices, runs the demo
// training job, and (as later parts land) runs the Jupyter kernel, the
// workbench in browser mode, exports checkpoints and benchmarks. It is pure
// Go and builds with CGO_ENABLED=0.
//
// Usage:
//
//	kiln demo [-steps N] [-device NAME]   train a small network and print the loss
//	kiln devices                          list detected devices
//	kiln export RUN_OR_CHECKPOINT [--format safetensors] -o FILE
//	                                      write the model weights of a checkpoint (or of a
//	                                      run directory's best checkpoint) to one file
//	kiln inspect [--json] PATH            show the tensors and metadata of a safetensors
//	                                      file, checkpoint or run directory
//	kiln version                          print the version
package main

// Command kiln is Kiln's command-line tool: it lists devices, runs the demo
// training job, and (as later parts land) runs the Jupyter kernel, the
// workbench in browser mode, exports checkpoints and benchmarks. It is pure
// Go and builds with CGO_ENABLED=0.
//
// Usage:
//
//	kiln demo [-epochs N] [-batch N] [-lr X] [-subset N] [-device NAME] [-run-dir DIR]
//	                 train a 784-256-128-10 MLP on MNIST (two epochs, AdamW, cosine
//	                 schedule) with a live dashboard on a terminal (q stops after the
//	                 current step), log lines otherwise; writes config.json and
//	                 events.jsonl to DIR (default runs/mnist-mlp-<time>) and prints
//	                 the test accuracy and each epoch's time
//	kiln demo -xor [-steps N] [-device NAME]
//	                 train a two-layer perceptron on XOR-like data, written with
//	                 tensors alone, and print the loss
//	kiln devices     list detected devices
//	kiln export RUN_OR_CHECKPOINT [--format safetensors] -o FILE
//	                 write the model weights of a checkpoint (or of a run
//	                 directory's best checkpoint) to one file
//	kiln inspect [--json] PATH
//	                 show the tensors and metadata of a safetensors file,
//	                 GGUF or ONNX file, checkpoint or run directory (with
//	                 whether its process lives: running, killed, stale, …)
//	kiln launch -n N [--hosts H1,H2:SLOTS] [-x VAR]... [--dry-run] PROGRAM [ARGS...]
//	                 run PROGRAM as N ranks under Open MPI's mpirun (adds
//	                 --allow-run-as-root as root, --oversubscribe --bind-to
//	                 none past the cores); dist.Init finds each rank
//	kiln workbench [--browser] [--addr A] [--allow-host H]... [--tls-cert F --tls-key F | --insecure]
//	                 the workbench: the desktop app, or served to a browser;
//	                 a non-loopback --addr needs TLS or --insecure
//	kiln version     print the version
package main

// Command kiln is Kiln's command-line tool: it trains the demo models,
// lists devices, inspects and exports model files, checkpoints and runs,
// launches data-parallel programs, and runs the Jupyter kernel and the
// workbench. It is pure Go and builds with CGO_ENABLED=0; the CUDA backend
// loads NVIDIA's libraries at run time when there are any.
//
// Usage:
//
//	kiln <command> [arguments]
//
// The commands (`kiln help COMMAND` or `kiln COMMAND -h` shows one's flags):
//
//	kiln demo [-epochs N] [-batch N] [-lr X] [-subset N] [-device NAME] [-run-dir DIR] [-resume DIR] [-np N]
//	kiln demo -xor [-steps N] [-device NAME]
//	        train a 784-256-128-10 MLP on MNIST (AdamW, cosine schedule) with
//	        a live dashboard on a terminal, log lines otherwise, writing the
//	        run directory; or, with -xor, a small perceptron on XOR-like data
//	kiln devices
//	        list every backend compiled in with its devices, or why it has
//	        none (no NVIDIA driver, say), and the default device and why;
//	        fails when KILN_DEVICE names no usable device
//	kiln export RUN_OR_CHECKPOINT [--format safetensors|gguf|onnx] [--gguf-type T] [--model GRAPH.onnx] -o FILE
//	        write the model weights of a checkpoint (or of a run directory's
//	        best checkpoint) to one safetensors, GGUF or ONNX file
//	kiln help [COMMAND]
//	        list the commands, or show one's usage, description and flags
//	kiln inspect [--json] FILE_OR_DIRECTORY
//	        show what a safetensors, GGUF or ONNX file, checkpoint or run
//	        directory holds (a run's: whether its process lives: running,
//	        killed, stale, …); a file is recognised by its first bytes
//	kiln kernel run -f CONNECTION_FILE [-max-message SIZE]
//	kiln kernel install [--user | --prefix DIR] [--name NAME] [--display-name TEXT]
//	kiln kernel uninstall [--prefix DIR] [--name NAME]
//	kiln kernel build --with MODULE[@VERSION][/PKG]... [-o BIN] [--install [--prefix DIR] [--name NAME]]
//	        run the Jupyter kernel, install or remove its kernelspec, or
//	        build a kernel whose cells may import more packages
//	kiln launch -n N [--hosts H1,H2:SLOTS] [-x VAR]... [--mpirun PATH] [--dry-run] PROGRAM [ARGS...]
//	        run PROGRAM as N ranks under Open MPI's mpirun (adds
//	        --allow-run-as-root as root, --oversubscribe --bind-to none past
//	        the cores); dist.Init finds each rank
//	kiln onnx gen MODEL.onnx -o DIR [--package NAME]
//	        generate a Go package running an ONNX model with Kiln tensor ops
//	kiln serve [--addr HOST:PORT] [--token TOKEN] [--tls-cert FILE --tls-key FILE | --insecure] [--max-session-bytes N]
//	        lend this machine's devices to remote clients
//	        (remote://HOST:PORT/DEVICE) over gRPC, with a token and
//	        optional TLS
//	kiln version
//	kiln --version
//	        print the Kiln release, module version and VCS revision, Go
//	        version and platform, backends compiled in and CPU features
//	kiln workbench [--browser] [--addr HOST:PORT] [--root DIR] [--runs DIR]... [--existing CONN]
//	               [--allow-host NAME]... [--tls-cert FILE --tls-key FILE | --insecure]
//	        the workbench: the desktop app, or served to a browser; a
//	        non-loopback --addr needs TLS or --insecure
//
// Exit status: 0 on success (help included), 1 when a command fails, 2 for
// a usage error: no command, an unknown one, or bad flags or arguments.
//
// Environment: KILN_DEVICE names the default device (cpu, cuda, cuda:N,
// strict); one it cannot use is an error, never a silent fallback.
// KILN_CUDA_PATH lists directories to look for the CUDA libraries in first.
// KILN_REMOTE lists remote device URLs (remote://HOST:PORT/DEVICE) for
// `kiln devices` to show; KILN_REMOTE_TOKEN is the token sent to `kiln
// serve` (and the one it requires when --token is not given), and
// KILN_REMOTE_CA a PEM file of the certificates a TLS client trusts.
//
// The table of commands in main.go drives dispatch and help; a test checks
// that this comment lists every command's forms.
package main

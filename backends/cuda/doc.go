// Package cuda is Kiln's NVIDIA GPU backend. Linking it (package tensor does,
// unless built with -tags kiln_nocuda) registers the device kind "cuda", so
// tensor.Cuda(0), tensor.ParseDevice("cuda:0") and KILN_DEVICE=cuda:0 reach it.
//
// # No toolkit at build time
//
// Nothing here needs cgo or CUDA headers: the driver (libcuda.so.1), NVRTC
// (libnvrtc), cuBLAS (libcublas) and NVML (libnvidia-ml) are opened when a
// cuda device is first used, through github.com/ebitengine/purego, so the
// kiln binary builds with CGO_ENABLED=0 anywhere. Each library is searched
// for in this order:
//
//  1. every directory in KILN_CUDA_PATH (colon-separated), and its lib64/ and lib/;
//  2. the system loader path (the bare file name, as ld.so resolves it);
//  3. /usr/local/cuda/lib64 and /usr/local/cuda/targets/<arch>/lib;
//  4. pip's nvidia-* wheels (nvidia/cuda_nvrtc/lib, nvidia/cublas/lib) in
//     $VIRTUAL_ENV, ~/.local and the system site-packages.
//
// The driver and NVRTC are required; without them Open fails with a
// *LoadError (wrapping ErrNoDriver or ErrNoLibrary) that names the library,
// every file tried and how to install it, and Enumerate lists no device.
// cuBLAS is optional (a tiled GEMM kernel replaces it); NVML only feeds
// metrics.
//
// # One OS thread per GPU
//
// A CUDA context is current per OS thread. Each opened GPU therefore has one
// goroutine locked to an OS thread (runtime.LockOSThread) that made the
// device's primary context current and then runs every driver, NVRTC and
// cuBLAS call for that device, in the order the backend submitted them.
// Kernel launches, writes and frees are queued to it and return at once;
// Alloc, Read and Sync wait for their turn. Any goroutine may use the
// backend: calls from many goroutines are serialised on that one thread.
//
// # Kernels
//
// Every Backend primitive is CUDA C generated in Go (kernels.go): element-wise
// ops from the shared backends op table over strided views, reductions,
// arg-reductions, scans, sorts, gather/scatter, copies with casts,
// im2col/col2im, Philox random numbers on the CPU's counters, and a tiled
// GEMM. NVRTC compiles them at run time for the GPU's architecture; the PTX is
// cached on disk (cache.go) under a key hashing the source, the architecture,
// the NVRTC version and the options. KILN_CUDA_CACHE=off disables the cache;
// KILN_CUDA_CACHE=<dir> moves it.
//
// # Memory
//
// Buffers come from a caching allocator (alloc.go): sizes are rounded to
// classes, freed blocks are kept and reused, on the same stream at once and
// on another stream only after an event says the last use finished. When the
// driver runs out of memory the cache is emptied and the allocation retried;
// a second failure is backends.ErrOutOfMemory.
//
// # Mixed precision
//
// Float16 and BFloat16 tensors run everywhere (kernels compute them in
// float32); their GEMMs go through cublasGemmStridedBatchedEx with float32
// accumulation. tensor.Device.Autocast gives a view on which matmul, linear
// and conv cast to half precision; optim.GradScaler scales float16 losses.
// Float32 GEMMs may use TF32 tensor cores once SetTF32(true) is called.
//
// # Testing without a GPU
//
// The tests need no GPU: library search and its errors, kernel generation
// (every kernel passes g++ -fsyntax-only under a CUDA shim, and the
// element-wise, random, half-conversion, indexing and reduction kernels
// and the tiled GEMM are built with g++ and run on the CPU, one OS thread
// per CUDA thread, and compared with the Go definitions), the compile cache, the
// allocator and the thread discipline against a fake Driver, and the
// conformance suite with the strict backend standing in for the GPU. On a
// GPU machine, `make gpu-check` (cuda.mk) runs the suite on cuda:0.
//
// # What it does not do
//
// No multi-stream scheduling, no pinned host memory, no fused softmax,
// layer norm or losses (they run as compositions of the primitives);
// behind the fusing decorator (cuda:0+fused) each chain of element-wise
// ops runs as one generated kernel (fused.go), which the tests build with
// g++ and run on an emulating driver (fused_emulate_test.go).
// Sorts and scans use one thread per line and the fallback GEMM is a plain
// tiled kernel: correct, not fast.
package cuda

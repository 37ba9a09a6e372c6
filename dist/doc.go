// Package dist runs collective operations (all-reduce, broadcast,
// all-gather, reduce-scatter, barrier) over tensors between the ranks of a
// group, for training past one device or one process.
//
// A Communicator is one rank's handle on its group. Two implementations
// exist:
//
//   - Open MPI, between processes and machines (OpenMPI, or Init under a
//     launcher). libmpi.so.40 is loaded at run time with purego, so programs
//     build with CGO_ENABLED=0 and run without Open MPI until they ask for
//     it; then a missing library is an ErrNoLibrary error naming the file
//     and the Debian package (openmpi-bin, which brings libopenmpi3). Every
//     MPI call runs on one goroutine locked to its OS thread.
//   - An in-process group (NewLocalGroup), for several devices or goroutines
//     in one process, rendezvousing in memory.
//   - NVIDIA's NCCL, on CUDA tensors without copies through the host: one
//     process per GPU (NCCL, bootstrapped over MPI) or several GPUs in one
//     process (NewNCCLGroup). See "NCCL" below.
//
// Init reads the launcher's environment (Open MPI's mpirun, SLURM's srun,
// PMIx) and opens MPI; with no launcher the world is one process, and its
// collectives are identities:
//
//	c, err := dist.Init(ctx) // under: mpirun -np 2 ./train
//	if err != nil { ... }
//	defer c.Close()
//	err = c.AllReduce(grad, dist.Mean)
//
// MPI and in-process collectives copy float32, float64 and int64 tensors
// through the host.
// Every rank must call the same collectives in the same order; before each
// one the ranks exchange a small header (collective, op, root, dtype,
// shape), so disagreeing ranks all fail with ErrMismatch naming the ranks
// and their shapes instead of corrupting data or hanging.
//
// # Failures and timeouts
//
// A failed collective returns an error naming the rank; the communicator is
// then broken and later collectives fail at once. In-process groups time a
// collective out (LocalConfig.Timeout) and name the ranks that never
// arrived. MPI cannot interrupt a blocked call: when a rank dies, Open MPI's
// mpirun ends the whole job (naming the rank); when a rank hangs, a watchdog
// makes the waiting collective return ErrTimeout after Config.Timeout
// ("rank 0: collective Barrier did not complete in …"), leaving the MPI call
// blocked and the communicator unusable, so the program should exit.
//
// # NCCL
//
// NCCL runs the collectives on the GPUs themselves (NVLink, PCIe,
// InfiniBand). It needs the CUDA backend (a cuda:N device: an NVIDIA driver
// and NVRTC, see backends/cuda) and libnccl.so.2, loaded at run time like
// Open MPI: $KILN_NCCL_LIBRARY, else libnccl.so.2 where the system loader
// finds it (apt install libnccl2 from NVIDIA's CUDA repository), else the
// copy in pip's nvidia-nccl-cu12 wheel (PyTorch brings it). Without it the
// constructors fail with ErrNoNCCL naming the files tried. One process per
// GPU, under mpirun:
//
//	boot, err := dist.Init(ctx) // MPI: carries NCCL's 128-byte unique id
//	if err != nil { ... }
//	dev, err := tensor.Cuda(boot.LocalRank())
//	if err != nil { ... }
//	c, err := dist.NCCL(ctx, boot, dev, dist.Config{Timeout: time.Minute})
//	if err != nil { ... }
//	defer c.Close() // before boot.Close()
//	err = c.AllReduce(grad, dist.Mean) // grad lives on dev
//
// Several GPUs in one process, one goroutine per GPU:
//
//	comms, err := dist.NewNCCLGroup([]tensor.Device{gpu0, gpu1})
//	// then, in the goroutine of GPU i: comms[i].AllReduce(grad[i], dist.Sum)
//
// Each collective first exchanges the same call header as MPI's (over NCCL
// itself, or in memory within a group), so disagreeing ranks fail with
// ErrMismatch; then the NCCL call is enqueued on the CUDA backend's stream
// for the device, after the work queued there, and the collective returns
// once the device has run it: collectives are synchronous, correct rather
// than overlapped with computation. A group's calls are issued together
// between ncclGroupStart and ncclGroupEnd on one OS thread. Mean is a Sum
// divided on the device. Float32, float64, float16, bfloat16, int64, int32,
// int8 and uint8 tensors are supported (NCCL has no int16 type: an Int16
// tensor fails with ErrUnsupported); strided views are copied to dense
// buffers and back. AllGather with ranks of different lengths pads to the
// longest; ReduceScatter of a length that does not divide by the size is
// an all-reduce of which each rank keeps its rows (NCCL splits evenly only).
//
// While a collective waits, NCCL is polled for asynchronous errors
// (ncclCommGetAsyncError: a peer died, a network failed); such an error, or
// Config.Timeout passing, aborts the NCCL communicator (ncclCommAbort),
// which makes NCCL's blocked calls and kernels return, and the collective
// fails (ErrTimeout for the timeout) with the communicator broken.
// ncclCommInitRank cannot be aborted: when ctx ends first, NCCL returns
// ErrTimeout and leaves the call blocked on the device's thread.
//
// Without a GPU, the tests run these communicators against a stand-in
// library (testdata/fakenccl.c, built with gcc) that exports NCCL's C API
// over host memory: that checks the bindings' calling convention, the
// grouping, the header exchange, padding, Mean and the watchdog, not NCCL
// or CUDA. The GPU tests (TestNCCL*, BenchmarkNCCLAllReduce; `make
// gpu-check` runs them) cover groups on real GPUs; no test starts NCCL in
// several processes on GPUs, and whether ncclCommDestroy in Close waits for
// the other processes' Close depends on the NCCL version.
//
// # Not yet
//
// MPICH's ABI (its handles are integer constants, not Open MPI's symbols);
// tensors over 2³¹−1 elements in one MPI call; non-blocking collectives and
// sub-communicators; NCCL collectives overlapped with computation (a
// dedicated stream ordered by events) and NCCL's non-blocking
// communicators. Distributed data-parallel training in package train
// is built on this package but is not part of it.
package dist

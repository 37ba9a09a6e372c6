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
// Collectives copy float32, float64 and int64 tensors through the host.
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
// # Not yet
//
// NCCL between GPUs (collectives on CUDA tensors go through the host);
// MPICH's ABI (its handles are integer constants, not Open MPI's symbols);
// tensors over 2³¹−1 elements in one MPI call; non-blocking collectives and
// sub-communicators. Distributed data-parallel training in package train
// is built on this package but is not part of it.
package dist

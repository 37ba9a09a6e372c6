/* allreduce_bench.c: the C reference for BenchmarkAllReduceMPI. It times
 * in-place float32 MPI_Allreduce (sum) for the same sizes, iteration
 * counts and timed chunks as the Go benchmark (dist/bench_test.go:
 * benchSizes, benchIters, bestChunk), and rank 0 prints "CBENCH bytes
 * seconds", the seconds per all-reduce of the fastest chunk.
 * Build and run: mpicc -O2 -o allreduce_bench allreduce_bench.c &&
 * mpirun -np 2 ./allreduce_bench */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { CHUNKS = 8 };

int main(int argc, char **argv) {
	static const long sizes[] = {1L << 10, 16L << 10, 256L << 10, 1L << 20, 4L << 20, 16L << 20, 64L << 20};
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		long size = sizes[s], n = size / 4;
		long iters = (128L << 20) / size;
		if (iters < 4) iters = 4;
		if (iters > 2000) iters = 2000;
		long chunks = iters < CHUNKS ? iters : CHUNKS, per = iters / chunks;
		float *buf = calloc(n, sizeof(float));
		MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double best = 1e300;
		for (long c = 0; c < chunks; c++) {
			double start = MPI_Wtime();
			for (long i = 0; i < per; i++)
				MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			double sec = (MPI_Wtime() - start) / per;
			if (sec < best) best = sec;
		}
		if (rank == 0) printf("CBENCH %ld %g\n", size, best);
		free(buf);
	}
	MPI_Finalize();
	return 0;
}

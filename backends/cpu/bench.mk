# Targets for backends/cpu's assembly and benchmarks; the top-level Makefile
# includes this file (include backends/cpu/bench.mk).

.PHONY: asm bench-compare test-purego

# asm regenerates the amd64 kernels (kernels_amd64.s and their Go
# declarations) with avo; the generator is its own module in
# backends/cpu/asm/gen, and the output is committed.
asm:
	$(GO) generate ./backends/cpu

# test-purego runs the CPU backend's tests without the assembly kernels.
test-purego:
	$(GO) test $(GOTESTFLAGS) -count=1 -tags purego ./backends/cpu/...

# bench-compare measures Kiln's GEMM, STREAM-style kernels, convolutions
# and MNIST training steps against numpy and PyTorch (OpenBLAS; PyTorch
# as shipped and tuned) on 1 and 2 threads in one interleaved run and
# prints a table of Kiln/peer ratios. BENCH_COMPARE_FLAGS passes options to
# the script (e.g. --rounds 5 --sizes 256,1024 --only sgemm).
BENCH_COMPARE_FLAGS ?=
bench-compare: deps-fixtures
	$(PYTHON) scripts/bench_compare.py $(BENCH_COMPARE_FLAGS)

# Targets for backends/cpu's assembly and benchmarks; the top-level Makefile
# includes this file (include backends/cpu/bench.mk).

.PHONY: asm asm-check bench-compare bench-bf16 test-purego

# asm regenerates the amd64 kernels (kernels_amd64.s and their Go
# declarations) with avo; the generator is its own module in
# backends/cpu/asm/gen, and the output is committed.
asm:
	$(GO) generate ./backends/cpu

# asm-check fails when the committed kernels_amd64.s, kernels_amd64.go or
# gelu_table_data.go differ from what the generator writes (the first line
# of the first two, which names the output paths, aside).
asm-check:
	@tmp=$$(mktemp -d) && \
	(cd backends/cpu/asm/gen && $(GO) run . -out $$tmp/k.s -stubs $$tmp/k.go -pkg cpu -gelutab $$tmp/t.go) && \
	for f in s go; do \
		tail -n +2 $$tmp/k.$$f > $$tmp/new; tail -n +2 backends/cpu/kernels_amd64.$$f > $$tmp/old; \
		if ! cmp -s $$tmp/new $$tmp/old; then \
			echo "backends/cpu/kernels_amd64.$$f differs from asm/gen's output: run make asm"; rm -rf $$tmp; exit 1; \
		fi; \
	done; \
	if ! cmp -s $$tmp/t.go backends/cpu/gelu_table_data.go; then \
		echo "backends/cpu/gelu_table_data.go differs from asm/gen's output: run make asm"; rm -rf $$tmp; exit 1; \
	fi; rm -rf $$tmp; echo "asm-check: kernels_amd64.s, kernels_amd64.go and gelu_table_data.go match the generator"

# test-purego runs the CPU backend's tests without the assembly kernels.
test-purego:
	$(GO) test $(GOTESTFLAGS) -count=1 -tags purego ./backends/cpu/...

# bench-compare measures Kiln's GEMM, STREAM-style kernels, activations
# (exp, log, tanh, erf, sigmoid, SiLU, GELU forward and backward, a GELU
# forward plus backward on [64·256, 1024]), convolutions and MNIST training
# steps against numpy and PyTorch (OpenBLAS; PyTorch as shipped and tuned)
# on 1 and 2 threads in one interleaved run and prints a table of
# Kiln/peer ratios. BENCH_COMPARE_FLAGS passes options to the script (e.g.
# --rounds 5 --sizes 256,1024 --only sgemm, or --only 'gelu|tanh|exp').
BENCH_COMPARE_FLAGS ?=
bench-compare: deps-fixtures
	$(PYTHON) scripts/bench_compare.py $(BENCH_COMPARE_FLAGS)

# bench-bf16 runs the bfloat16 benchmarks three times, interleaved (take
# the best of each): square GEMMs at n = 256, 512 and 1024 on 1 and 2
# threads, Kiln's float32 GEMM against the bfloat16 one (VDPBF16PS where
# the CPU has it) from bfloat16 operands into bfloat16 and float32, the
# widening path bfloat16 took before, and float32 operands rounded while
# packing; then the GPT-style training step in float32 and with bfloat16
# autocast at both sizes.
bench-bf16:
	$(GO) test -run '^$$' -bench 'GEMMBF16$$' -benchtime 0.5s -count 3 ./backends/cpu
	$(GO) test -run '^$$' -bench 'GEMMBF16Ratio' -benchtime 40x -count 3 ./backends/cpu
	$(GO) test -run '^$$' -bench 'GPTTrainStepBF16' -benchtime 3x -count 3 -timeout 60m ./nn

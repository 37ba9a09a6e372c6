#!/bin/sh
# Kiln's GPU check, run from the bundle `make gpu-check-bundle` builds
# (bin/gpu-check/): copy that directory to a machine with an NVIDIA GPU and
# run ./run.sh there. No Go toolchain is needed.
#
#  1. opens the device (KILN_BENCH_DEVICE, default cuda:0); exits 2 if it cannot;
#  2. runs the cuda package's tests, with the conformance suite on the GPU;
#  3. runs the tensor, nn and optim suites with KILN_TEST_DEVICES=<device>, so
#     every op and every gradient check also runs there;
#  4. runs the benchmarks and, where PyTorch with CUDA is installed, the same
#     workloads in PyTorch, printed as ratios.
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
run cuda
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
exit $status

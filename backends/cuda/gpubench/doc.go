// Package gpubench holds the benchmarks that `make gpu-check` runs on a GPU
// machine: sgemm and bf16 GEMM TFLOP/s at 4096, element-wise GB/s, MNIST MLP
// and CNN epoch times, and the device's memory after each of 5 epochs. It
// has no API: the work is in its test file, built into gpubench.test with
// `go test -c` and run by run.sh, which then hands the results (JSON) to
// torch_bench.py for the PyTorch ratios.
//
// Under `go test ./...` its test skips unless KILN_GPU_CHECK=1. With it set,
// the device named by KILN_BENCH_DEVICE (default cuda:0) must open, or the
// binary prints why ("no CUDA driver: …") and exits with status 2.
// KILN_BENCH_QUICK=1 shrinks every workload, to check the benchmark itself
// on a CPU.
package gpubench

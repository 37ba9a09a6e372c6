// Package vulkan is a Kiln backend over Vulkan 1.2+ compute, for every GPU
// vendor whose driver speaks Vulkan (AMD, Intel, NVIDIA, Apple through
// MoltenVK) and for Mesa's lavapipe, a conformant software Vulkan device on
// the CPU that lets every test of this backend run on machines without a GPU.
//
// The Vulkan loader (libvulkan.so.1) is opened at run time with purego: the
// package needs neither cgo nor the Vulkan SDK to build, and a machine
// without Vulkan simply lists no devices. Importing the package registers the
// device kind "vulkan" ("vulkan:0", "vulkan:1", …) with package backends;
// tensor.Vulkan(i) and KILN_DEVICE=vulkan select it.
//
// Kernels are GLSL compute shaders under shaders/, compiled to SPIR-V by
// `go generate` (glslc) and committed under spv/, so `go build` needs no
// compiler. Shaders read their arguments through 64-bit buffer device
// addresses (no descriptor sets) and are specialised by constants for the
// dtype and variant. Dispatches are recorded into command buffers and
// submitted in batches; Read and Sync wait for them on a timeline semaphore.
//
// Element-wise kernels (Fill, Copy, Unary, UnaryGrad, Binary, BinaryScalar,
// Where) follow the CPU backend's definitions: exact ops compute in double
// (or exactly in int64 for integers, pow included), transcendental ops in
// float for Float32, Float16 and BFloat16 and in double for Float64 and
// integer inputs. GLSL has no double transcendentals, so shaders/f64math.glsl
// and f64trig.glsl hold Go's math package's algorithms, operation for
// operation with its constants: exp, log (bit for bit with Go's), tanh, erf,
// pow (IEEE's special cases, repeated squaring of the integer part), sin,
// cos and tan (Cody–Waite reduction below 2^29, Payne–Hanek's with 4/π's
// bits above), atan, asin, acos, atan2 (every signed-zero and infinite
// case), sinh, cosh, asinh, acosh and atanh. Float remainder and floor
// division, on every float dtype, use an exact fmod (shift and subtract
// on the significands) and equal the CPU's bit for bit, −0, ±Inf and NaN
// included (TestF64Binary).
//
// Measured on lavapipe against the CPU backend over dense sweeps (20,001
// points each plus the whole exponent range and the special values;
// TestF64Functions, TestF64Binary, TestF64Math), the worst distance in ulps,
// forward / derivative: exp 1, log 0, asin, acos, atan and atan2 0 / 0,
// sin 1 / 2, cos 2 / 1, tan 2 / 5 (at x = 1.66e8), sinh and cosh 3 / 3,
// asinh, acosh, atanh 2 / 0, erf 1 / 2, tanh 1 / 64, mish 4 / 1024, pow 4
// (binary, 46,641 pairs) and up to 3 / 4 as pow(x, p). The remaining
// differences come from exp, 1 ulp from Go's amd64 assembly, and grow
// only where a formula cancels: 1 − tanh² (tanh', mish'), 1 + erf for
// x ≪ 0 (gelu 180, gelu_tanh 88 ulps) and derivatives crossing zero (gelu'
// 4096, gelu_tanh' 1024 ulps); measured in ulps of max(|f|, 1) every
// function and derivative is within 5. On a device without shaderFloat64
// everything that needs double (Float64, integer transcendentals, Copy,
// Where) runs on the CPU backend with host copies, in stream order;
// Backend.HostOps counts those calls per op and dtype. On software devices
// the dtype and op codes are passed at run time instead of as
// specialisation constants, so that llvmpipe compiles one pipeline per
// shader rather than hundreds.
//
// Matmul runs a 64×64-tile GEMM through shared memory, or, for Float32,
// Float16 and BFloat16 on a device that reports subgroup shuffles in
// compute shaders (VkPhysicalDeviceSubgroupProperties; lavapipe does),
// shaders/matmul_subgroup.comp: 8×subgroup-size tiles whose A values pass
// between invocations by subgroupShuffle, bit for bit the same results
// (TestSubgroupGEMM) and on lavapipe 2.5–7× the shared-memory path's speed
// (BenchmarkGEMMPaths). There is no cooperative-matrix path: Debian's glslc
// (shaderc 2023.2, glslang 11.13) does not know GL_KHR_cooperative_matrix
// and lavapipe does not offer it, so it could be neither built nor tested.
//
// Backend.Close releases a device: it waits for the queued work, then
// destroys its buffers, caches, pipelines, command pool, semaphore and
// VkDevice; later calls fail with ErrClosed. The process's VkInstance,
// shared by every device, stays.
//
// Devices are ordered discrete GPUs first, then integrated, virtual and CPU
// devices; software implementations (lavapipe) are listed with Software set
// and are never chosen as the default device over the CPU backend.
//
// Build with -tags kiln_novulkan to leave the backend out.
package vulkan

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
// (or exactly in int64 for integers), transcendental ops in float for
// Float32, Float16 and BFloat16 and, for exp, log and the activations built
// on them, in double for Float64 (shaders/f64math.glsl: within 1 ulp of Go's
// math). What has no shader yet (sin, erf, asin… on Float64, float Rem and
// FloorDiv, integer Pow, everything on a device without shaderFloat64) runs
// on the CPU backend with host copies, in stream order; Backend.HostOps
// counts those calls per op and dtype. On software devices the dtype and op
// codes are passed at run time instead of as specialisation constants, so
// that llvmpipe compiles one pipeline per shader rather than hundreds.
//
// Devices are ordered discrete GPUs first, then integrated, virtual and CPU
// devices; software implementations (lavapipe) are listed with Software set
// and are never chosen as the default device over the CPU backend.
//
// Build with -tags kiln_novulkan to leave the backend out.
package vulkan

package vulkan

// The SPIR-V under spv/ is compiled from shaders/*.comp with glslc (Debian's
// glslc package, or the Vulkan SDK) by shaders/compile.sh. Run `go generate
// ./backends/vulkan` after editing a shader and commit both files;
// TestSPIRVUpToDate fails when a committed .spv is stale.
//go:generate sh shaders/compile.sh

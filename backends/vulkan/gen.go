package vulkan

// The SPIR-V under spv/ is compiled from shaders/*.comp with glslc (Debian's
// glslc package, or the Vulkan SDK). Run `go generate ./backends/vulkan`
// after editing a shader and commit both files; TestSPIRVUpToDate fails
// when a committed .spv is stale.
//go:generate sh -c "for f in shaders/*.comp; do n=$(basename $f .comp); glslc --target-env=vulkan1.2 -O -I shaders $f -o spv/$n.spv || exit 1; done"

//go:build !kiln_novulkan && !js && !wasip1

package tensor

// The Vulkan backend registers the "vulkan" device kind. It loads the
// Vulkan loader (libvulkan.so.1) only when devices are listed or opened, so
// linking it costs nothing on machines without Vulkan; build with -tags
// kiln_novulkan to leave it out. WebAssembly builds leave it out too.
import _ "github.com/kiln-ml/kiln/backends/vulkan"

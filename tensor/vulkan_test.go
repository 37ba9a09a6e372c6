//go:build !kiln_novulkan && !js && !wasip1

package tensor_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends/vulkan"
	"github.com/kiln-ml/kiln/tensor"
)

// vulkanDevices returns the Vulkan devices, skipping the test without any.
func vulkanDevices(t *testing.T) []tensor.DeviceEntry {
	t.Helper()
	if len(vulkan.Devices()) == 0 {
		t.Skip("no Vulkan device (apt-get install libvulkan1 mesa-vulkan-drivers gives lavapipe)")
	}
	var out []tensor.DeviceEntry
	for _, e := range tensor.Devices() {
		if e.Kind == "vulkan" {
			out = append(out, e)
		}
	}
	return out
}

// KILN_DEVICE=vulkan selects vulkan:0, as do Vulkan(0) and "vulkan:0".
func TestKilnDeviceVulkan(t *testing.T) {
	vulkanDevices(t)
	t.Setenv("KILN_DEVICE", "vulkan")
	tensor.ResetDefaultDevice()
	defer tensor.ResetDefaultDevice()
	def, err := tensor.DefaultDevice()
	if err != nil {
		t.Fatal(err)
	}
	v0, err := tensor.Vulkan(0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tensor.ParseDevice("vulkan:0")
	if err != nil {
		t.Fatal(err)
	}
	if def.String() != "vulkan:0" || !def.Same(v0) || !p.Same(v0) || tensor.DefaultDeviceReason() != "KILN_DEVICE=vulkan" {
		t.Fatalf("default %s (%s), Vulkan(0) %s, ParseDevice %s", def, tensor.DefaultDeviceReason(), v0, p)
	}
	x := tensor.Arange(def, 0, 4, 1).To(tensor.Float32)
	if got := x.Mul(x).Sum().Item(); got != 14 {
		t.Fatalf("sum of squares on vulkan:0 = %v, want 14", got)
	}
}

// A software Vulkan device (lavapipe) is listed, labelled, and never the
// default: the reason says why it was passed over.
func TestSoftwareVulkanIsNeverTheDefault(t *testing.T) {
	var soft []tensor.DeviceEntry
	for _, e := range vulkanDevices(t) {
		if e.Software {
			soft = append(soft, e)
		}
	}
	if len(soft) == 0 {
		t.Skip("no software Vulkan device")
	}
	t.Setenv("KILN_DEVICE", "") // restored after the test
	os.Unsetenv("KILN_DEVICE")
	tensor.ResetDefaultDevice()
	defer tensor.ResetDefaultDevice()
	def, err := tensor.DefaultDevice()
	if err != nil {
		t.Fatal(err)
	}
	if def.Kind() == "vulkan" && def.Info().Software {
		t.Fatalf("default device is the software device %s", def)
	}
	reason := tensor.DefaultDeviceReason()
	if !strings.Contains(reason, "not "+soft[0].String()) || !strings.Contains(reason, "software") {
		t.Errorf("reason %q does not say why %s was not chosen", reason, soft[0])
	}
	table := tensor.Devices().String()
	for _, e := range soft {
		if e.Default || e.NotDefault == "" {
			t.Errorf("%s: Default %v, NotDefault %q", e, e.Default, e.NotDefault)
		}
	}
	for _, w := range []string{"VENDOR", "Mesa (software)", "no (software device"} {
		if !strings.Contains(table, w) {
			t.Errorf("device table lacks %q:\n%s", w, table)
		}
	}
}

// Asking for a Vulkan device that is not there names the count.
func TestVulkanNoSuchDevice(t *testing.T) {
	n := len(vulkanDevices(t))
	_, err := tensor.Vulkan(n)
	if !errors.Is(err, tensor.ErrNoDevice) || !strings.Contains(err.Error(), "no such device") {
		t.Fatalf("Vulkan(%d) = %v", n, err)
	}
}

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// cudaMissing returns why this machine (or build) has no CUDA device, or
// nil when it has one.
func cudaMissing() error {
	drv, err := backends.Lookup("cuda")
	if err != nil {
		return err // built with -tags kiln_nocuda
	}
	if len(drv.Enumerate()) > 0 {
		return nil
	}
	_, err = drv.Open(0)
	return err
}

// setKilnDevice sets KILN_DEVICE to v for the test ("unset" unsets it) and
// makes the default device be chosen anew, then again after the test.
func setKilnDevice(t *testing.T, v string) {
	t.Setenv("KILN_DEVICE", v) // restored after the test
	if v == "unset" {
		os.Unsetenv("KILN_DEVICE")
	}
	tensor.ResetDefaultDevice()
	t.Cleanup(tensor.ResetDefaultDevice)
}

// `kiln devices` lists cpu and strict with their devices, and cuda with
// its devices or, on a machine without a GPU, the reason; it marks the
// default device and says why.
func TestDevicesListsEveryBackend(t *testing.T) {
	setKilnDevice(t, "unset")
	code, stdout, stderr := kiln("devices")
	if code != 0 || stderr != "" {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	for _, row := range []string{`(?m)^BACKEND +DEVICE +NAME +VENDOR +MEMORY +CORES +DETAIL$`, `(?m)^cpu +cpu\b.* \d+ +\d+ worker goroutines$`, `(?m)^strict +strict +strict checks over `} {
		if !regexp.MustCompile(row).MatchString(stdout) {
			t.Errorf("no line matching %s:\n%s", row, stdout)
		}
	}
	if err := cudaMissing(); err != nil {
		why := err.Error()
		if _, err := backends.Lookup("cuda"); err != nil {
			why = "not in this build of kiln"
		}
		if !regexp.MustCompile(`(?m)^cuda +- +not available: \S.*$`).MatchString(stdout) || !strings.Contains(stdout, why) {
			t.Errorf("no cuda row with its reason (%v):\n%s", err, stdout)
		}
		if !regexp.MustCompile(`(?m)^cpu +cpu \*`).MatchString(stdout) || !strings.Contains(stdout, "* default device: cpu (best detected: cpu (") {
			t.Errorf("cpu is not marked as the default device:\n%s", stdout)
		}
	} else if !regexp.MustCompile(`(?m)^cuda +cuda:0 \* `).MatchString(stdout) {
		t.Errorf("cuda:0 is not marked as the default device:\n%s", stdout)
	}
}

// KILN_DEVICE=strict makes strict the default device, marked as such.
func TestDevicesMarksKilnDevice(t *testing.T) {
	setKilnDevice(t, "strict")
	code, stdout, _ := kiln("devices")
	if code != 0 || !regexp.MustCompile(`(?m)^strict +strict \* `).MatchString(stdout) || !strings.Contains(stdout, "* default device: strict (KILN_DEVICE=strict)\n") {
		t.Errorf("status %d:\n%s", code, stdout)
	}
}

// A KILN_DEVICE that names no usable device is an error naming the
// variable, its value and why, after the list, as it is for every program
// asking for the default device.
func TestDevicesBadKilnDevice(t *testing.T) {
	absentGPU, why := "cuda", "no CUDA"
	if _, err := backends.Lookup("cuda"); err != nil {
		why = "no CUDA backend"
	} else if cudaMissing() == nil {
		absentGPU, why = "cuda:99", "no device cuda:99"
	}
	for _, c := range []struct{ value, why string }{
		{absentGPU, why},
		{"bogus", `no driver for device kind "bogus"`},
		{"cuda:x", `bad index "x"`},
		{"", "empty device name"},
	} {
		t.Run(c.value, func(t *testing.T) {
			setKilnDevice(t, c.value)
			code, stdout, stderr := kiln("devices")
			want := `kiln: devices: tensor: KILN_DEVICE="` + c.value + `": `
			if code != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, c.why) || strings.Count(stderr, "tensor:") != 1 {
				t.Errorf("status %d, stderr %q, want %q… saying %q", code, stderr, want, c.why)
			}
			if !regexp.MustCompile(`(?m)^cpu +cpu `).MatchString(stdout) || strings.Contains(stdout, " * ") ||
				!strings.Contains(stdout, "default device: none; KILN_DEVICE names no usable device") {
				t.Errorf("the list:\n%s", stdout)
			}
			if _, err := tensor.DefaultDevice(); err == nil || !strings.Contains(err.Error(), "KILN_DEVICE") {
				t.Errorf("DefaultDevice: %v", err)
			}
		})
	}
}

// vulkanSoftware returns the software Vulkan devices (lavapipe), or nil.
func vulkanSoftware() []backends.DeviceInfo {
	drv, err := backends.Lookup("vulkan")
	if err != nil {
		return nil
	}
	var out []backends.DeviceInfo
	for _, d := range drv.Enumerate() {
		if d.Software {
			out = append(out, d)
		}
	}
	return out
}

// `kiln devices` lists a software Vulkan device (lavapipe) with its vendor,
// labelled software, and says why the default is not it.
func TestDevicesLabelsSoftwareVulkan(t *testing.T) {
	soft := vulkanSoftware()
	if len(soft) == 0 {
		t.Skip("no software Vulkan device (apt-get install mesa-vulkan-drivers gives lavapipe)")
	}
	setKilnDevice(t, "unset")
	code, stdout, stderr := kiln("devices")
	if code != 0 || stderr != "" {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	d := soft[0]
	row := `(?m)^vulkan +` + regexp.QuoteMeta(d.String()) + ` +` + regexp.QuoteMeta(d.Name) + ` +Mesa \(software\) +\S+ \S+ +\S+ +software: never the default`
	if !regexp.MustCompile(row).MatchString(stdout) {
		t.Errorf("no row matching %s:\n%s", row, stdout)
	}
	if cpu, vk := strings.Index(stdout, "\ncpu "), strings.Index(stdout, "\nvulkan "); cpu < 0 || vk < cpu {
		t.Errorf("the software device is listed before the cpu:\n%s", stdout)
	}
	if !strings.Contains(stdout, "; not "+d.String()+" ("+d.Name+"): software, slower than the cpu backend)") {
		t.Errorf("the default device's reason does not say why %s was passed over:\n%s", d, stdout)
	}
}

// KILN_DEVICE=vulkan makes vulkan:0 the default, even a software one.
func TestDevicesKilnDeviceVulkan(t *testing.T) {
	if len(vulkanSoftware()) == 0 {
		if drv, err := backends.Lookup("vulkan"); err != nil || len(drv.Enumerate()) == 0 {
			t.Skip("no Vulkan device")
		}
	}
	setKilnDevice(t, "vulkan")
	code, stdout, _ := kiln("devices")
	if code != 0 || !regexp.MustCompile(`(?m)^vulkan +vulkan:0 \* `).MatchString(stdout) || !strings.Contains(stdout, "* default device: vulkan:0 (KILN_DEVICE=vulkan)\n") {
		t.Errorf("status %d:\n%s", code, stdout)
	}
}

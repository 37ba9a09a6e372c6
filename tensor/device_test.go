package tensor_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/tensor"
)

func TestParseDevice(t *testing.T) {
	cases := []struct {
		name, in, want string
		err            error
	}{
		{"cpu", "cpu", "cpu", nil},
		{"upper case and spaces", " CPU ", "cpu", nil},
		{"cpu with index 0", "cpu:0", "cpu", nil},
		{"autodiff suffix", "cpu+autodiff", "cpu+autodiff", nil},
		{"strict test device", "strict", "strict", nil},
		{"unknown kind", "tpu:0", "", tensor.ErrNoDevice},
		{"bad index", "cpu:x", "", tensor.ErrArgument},
		{"negative index", "cpu:-1", "", tensor.ErrArgument},
		{"second cpu", "cpu:1", "", tensor.ErrNoDevice},
		{"empty", "", "", tensor.ErrArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := tensor.ParseDevice(c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("ParseDevice(%q) error %v, want %v", c.in, err, c.err)
				}
				return
			}
			if err != nil || d.String() != c.want {
				t.Fatalf("ParseDevice(%q) = %v, %v; want %s", c.in, d, err, c.want)
			}
		})
	}
}

func TestCudaWithoutBackendIsAnError(t *testing.T) {
	_, err := tensor.Cuda(0)
	if err == nil {
		t.Skip("a CUDA device is present")
	}
	if !errors.Is(err, tensor.ErrNoDevice) || !strings.Contains(err.Error(), "cuda") {
		t.Fatalf("Cuda(0) error %q does not name the missing device", err)
	}
}

func TestDefaultDeviceHonoursKilnDevice(t *testing.T) {
	t.Setenv("KILN_DEVICE", "strict")
	tensor.ResetDefaultDevice()
	defer tensor.ResetDefaultDevice()
	d, err := tensor.DefaultDevice()
	if err != nil || d.Kind() != "strict" {
		t.Fatalf("DefaultDevice with KILN_DEVICE=strict = %v, %v", d, err)
	}
	if r := tensor.DefaultDeviceReason(); r != "KILN_DEVICE=strict" {
		t.Fatalf("reason %q", r)
	}

	t.Setenv("KILN_DEVICE", "cuda:7")
	tensor.ResetDefaultDevice()
	if _, err := tensor.DefaultDevice(); err == nil || !strings.Contains(err.Error(), "KILN_DEVICE") {
		t.Fatalf("an absent KILN_DEVICE must be an error naming it, got %v", err)
	}
}

func TestDefaultDeviceEmptyEnvIsAnError(t *testing.T) {
	t.Setenv("KILN_DEVICE", "")
	tensor.ResetDefaultDevice()
	defer tensor.ResetDefaultDevice()
	// An empty KILN_DEVICE is set but names nothing: an error, never a fallback.
	if _, err := tensor.DefaultDevice(); err == nil {
		t.Fatal("KILN_DEVICE='' must be an error")
	}
}

// Without KILN_DEVICE the default is the first device a driver detects and
// opens (a GPU before the CPU), and the reason says so.
func TestDefaultDeviceWithoutEnvIsBestDetected(t *testing.T) {
	t.Setenv("KILN_DEVICE", "") // restored after the test
	os.Unsetenv("KILN_DEVICE")
	tensor.ResetDefaultDevice()
	defer tensor.ResetDefaultDevice()
	d, err := tensor.DefaultDevice()
	if err != nil {
		t.Fatalf("DefaultDevice without KILN_DEVICE: %v", err)
	}
	want := "cpu" // the fallback when nothing is detected
	for _, e := range tensor.Devices() {
		if e.Kind != "strict" && !e.Software {
			want = e.Kind // the first device detected, in the drivers' order
			break
		}
	}
	reason := tensor.DefaultDeviceReason()
	if d.Kind() != want || !strings.HasPrefix(reason, "best detected: "+want) {
		t.Errorf("default device %s (%q), want the best detected, %s", d, reason, want)
	}
}

func TestDevicesListsCPU(t *testing.T) {
	list := tensor.Devices()
	found := false
	for _, e := range list {
		if e.Kind == "cpu" {
			found = true
			if e.Cores < 1 {
				t.Errorf("cpu entry has %d cores", e.Cores)
			}
		}
		if e.Kind == "strict" {
			t.Error("the strict test backend must not be listed as hardware")
		}
	}
	if !found {
		t.Fatalf("Devices() = %v, no cpu", list)
	}
	if s := list.String(); !strings.Contains(s, "DEVICE") || !strings.Contains(s, "cpu") {
		t.Fatalf("table rendering:\n%s", s)
	}
}

func TestZeroDevicePanicsWithClearError(t *testing.T) {
	var d tensor.Device
	err := tensor.Try(func() { tensor.Zeros(d, 2) })
	if !errors.Is(err, tensor.ErrNoDevice) || !strings.Contains(err.Error(), "zero Device") {
		t.Fatalf("got %v", err)
	}
}

func TestNoGradViewRecordsNothing(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		w := tensor.Ones(ad, 2, 2).RequireGrad()
		x := tensor.Ones(ad.NoGrad(), 2)
		y := x.Matmul(w)
		if y.RequiresGrad() || y.Node() != nil {
			t.Fatal("an op with a NoGrad input recorded a node")
		}
		if !strings.Contains(y.Device().String(), "nograd") {
			t.Fatalf("output device %s should stay a NoGrad view", y.Device())
		}
		// The same device keeps recording elsewhere.
		z := tensor.Ones(ad, 2).Matmul(w)
		if !z.RequiresGrad() {
			t.Fatal("NoGrad leaked into other ops on the device")
		}
	})
}

func TestDeterministicAcrossWorkerCounts(t *testing.T) {
	run := func(workers int) []float32 {
		cpu.Default().SetWorkers(workers)
		defer cpu.Default().SetWorkers(0)
		dev := tensor.CPU().Autodiff()
		dev.Seed(123)
		var out []float32
		tensor.Scope(func() {
			x := tensor.Randn(dev, 257, 129)
			w := tensor.Randn(dev, 129, 65).RequireGrad()
			y := x.Matmul(w).Tanh().Sum(0)
			loss := y.Mul(y).Mean()
			g := loss.Backward().Get(w)
			out = append(out, y.Float32s()...)
			out = append(out, g.Float32s()...)
			out = append(out, tensor.Rand(dev, 1000).Float32s()...)
			out = append(out, x.Sum().Float32s()...)
		})
		return out
	}
	a, b := run(1), run(2)
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("element %d differs: %v with 1 worker, %v with 2", i, a[i], b[i])
		}
	}
}

func TestSeedReproducesRandomStreams(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dev.Seed(9)
		a := tensor.Randn(dev, 100).Float32s()
		b := tensor.Rand(dev, 10).Float32s()
		dev.Seed(9)
		c := tensor.Randn(dev, 100).Float32s()
		d := tensor.Rand(dev, 10).Float32s()
		for i := range a {
			if a[i] != c[i] {
				t.Fatal("Randn not reproducible")
			}
		}
		for i := range b {
			if b[i] != d[i] {
				t.Fatal("Rand not reproducible")
			}
		}
		// Statistics of a large sample.
		n := tensor.Randn(dev, 200000)
		if m := n.Mean().Item(); math.Abs(m) > 0.01 {
			t.Errorf("Randn mean %v", m)
		}
		if v := n.Square().Mean().Item(); math.Abs(v-1) > 0.02 {
			t.Errorf("Randn variance %v", v)
		}
		u := tensor.Uniform(dev, 2, 4, 100000)
		if m := u.Mean().Item(); math.Abs(m-3) > 0.01 {
			t.Errorf("Uniform mean %v", m)
		}
		bern := tensor.Bernoulli(dev, 0.3, 100000)
		if m := bern.Mean().Item(); math.Abs(m-0.3) > 0.01 {
			t.Errorf("Bernoulli mean %v", m)
		}
		ri := tensor.RandInt(dev, -3, 3, 10000).Int64s()
		for _, v := range ri {
			if v < -3 || v >= 3 {
				t.Fatalf("RandInt value %d outside [-3, 3)", v)
			}
		}
	})
}

package nn_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/tensor"
)

// testDevices are the devices every nn test runs on: the CPU and the strict
// backend (asynchronous, poisoning freed buffers, tracking leaks).
func testDevices() []tensor.Device {
	return []tensor.Device{tensor.CPU(), tensor.MustDevice("strict")}
}

// forEachDevice runs fn as a subtest on every test device, inside a Scope.
// On the strict device the test then fails if a buffer allocated during fn
// is still live (tensors nn makes outside scopes must be freed with
// nn.Release) or if the device reports an error.
func forEachDevice(t *testing.T, fn func(t *testing.T, dev tensor.Device)) {
	t.Helper()
	for _, dev := range testDevices() {
		t.Run(dev.String(), func(t *testing.T) {
			isStrict := dev.Kind() == "strict"
			var mark uint64
			if isStrict {
				strict.Default().ClearError()
				mark = strict.Default().Mark()
			}
			tensor.Scope(func() { fn(t, dev) })
			if err := dev.Sync(); err != nil {
				t.Fatalf("device error after test: %v", err)
			}
			if isStrict && !t.Failed() {
				for _, l := range strict.Default().LiveSince(mark) {
					t.Errorf("leaked %s", l)
				}
			}
		})
	}
}

// floats builds a Float32 tensor from values.
func floats(dev tensor.Device, vals []float32, shape ...int) *tensor.Tensor {
	return tensor.FromFloat32s(dev, vals, shape...)
}

// seq returns n values start, start+1, ….
func seq(start float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = start + float32(i)
	}
	return out
}

// assertValues fails unless got holds want (within 1e-6).
func assertValues(t *testing.T, what string, got *tensor.Tensor, want []float64) {
	t.Helper()
	g := got.Float64s()
	if len(g) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(want))
	}
	for i := range g {
		if math.Abs(g[i]-want[i]) > 1e-6 {
			t.Fatalf("%s: value %d is %v, want %v (all: %v)", what, i, g[i], want[i], g)
		}
	}
}

// mustPanic returns the error fn panicked with, failing the test when fn
// returns normally or panics with something that is not an error.
func mustPanic(t *testing.T, fn func()) (err error) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("no panic")
		}
		e, ok := r.(error)
		if !ok {
			t.Fatalf("panic with %T %v, want an error", r, r)
		}
		err = e
	}()
	fn()
	return nil
}

// isTensorError reports whether err is a *tensor.Error wrapping kind.
func isTensorError(err error, kind error) bool {
	var te *tensor.Error
	return errors.As(err, &te) && errors.Is(err, kind)
}

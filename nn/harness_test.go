package nn_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// forEachDevice is the shared harness (internal/testutil): fn runs on the
// CPU and the strict device, inside a Scope; on the strict device the test
// fails if a buffer allocated during fn is still live (tensors nn makes
// outside scopes must be freed with nn.Release) or the device reports an
// error.
var forEachDevice = testutil.ForEachDevice

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

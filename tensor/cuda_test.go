//go:build !kiln_nocuda && !js && !wasip1

package tensor_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends/cuda"
	"github.com/kiln-ml/kiln/tensor"
)

// TestCudaWithoutDriverNamesWhatIsMissing checks every way of asking for a
// GPU on a machine without the NVIDIA driver.
func TestCudaWithoutDriverNamesWhatIsMissing(t *testing.T) {
	if cuda.Available() == nil {
		t.Skip("a CUDA device is present")
	}
	_, err1 := tensor.Cuda(0)
	_, err2 := tensor.ParseDevice("cuda:0")
	t.Setenv("KILN_DEVICE", "cuda:0")
	tensor.ResetDefaultDevice()
	defer tensor.ResetDefaultDevice()
	_, err3 := tensor.DefaultDevice()
	for i, err := range []error{err1, err2, err3} {
		if err == nil || !errors.Is(err, tensor.ErrNoDevice) {
			t.Fatalf("case %d: err = %v, want ErrNoDevice", i, err)
		}
		if _, e := os.Stat("/dev/nvidiactl"); e != nil {
			for _, w := range []string{"no CUDA", "libcuda.so.1", "install"} {
				if !strings.Contains(err.Error(), w) && !strings.Contains(err.Error(), "libnvrtc") {
					t.Errorf("case %d: error %q does not mention %q", i, err, w)
				}
			}
		}
	}
	for _, e := range tensor.Devices() {
		if e.Kind == "cuda" {
			t.Errorf("Devices lists %s without a driver", e)
		}
	}
}

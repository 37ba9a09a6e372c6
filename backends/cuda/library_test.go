//go:build !kiln_nocuda

package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withDlopen replaces the loader for one test.
func withDlopen(t *testing.T, f func(string) (uintptr, error)) *[]string {
	t.Helper()
	var calls []string
	old := dlopen
	dlopen = func(p string) (uintptr, error) { calls = append(calls, p); return f(p) }
	t.Cleanup(func() { dlopen = old })
	return &calls
}

func TestLibraryLoadingErrorsNameWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KILN_CUDA_PATH", dir)
	withDlopen(t, func(p string) (uintptr, error) { return 0, errors.New(p + ": cannot open shared object file") })
	for _, tc := range []struct {
		lib      library
		sentinel error
		want     []string
	}{
		{libDriver, ErrNoDriver, []string{"no CUDA driver", "libcuda.so.1", filepath.Join(dir, "libcuda.so.1"), "/usr/local/cuda/lib64/libcuda.so.1", "nvidia-driver"}},
		{libNVRTC, ErrNoLibrary, []string{"no CUDA library", "NVRTC", "libnvrtc.so.12", "pip install nvidia-cuda-nvrtc"}},
		{libCUBLAS, ErrNoLibrary, []string{"cuBLAS", "libcublas.so.12", "pip install nvidia-cublas"}},
		{libNVML, ErrNoLibrary, []string{"NVML", "libnvidia-ml.so.1"}},
	} {
		t.Run(tc.lib.names[0], func(t *testing.T) {
			_, err := tc.lib.open()
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("error %v does not wrap %v", err, tc.sentinel)
			}
			var le *LoadError
			if !errors.As(err, &le) || len(le.Tried) < len(tc.lib.names)*3 {
				t.Fatalf("error %v is not a *LoadError listing every candidate", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLibrarySearchOrder(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KILN_CUDA_PATH", dir)
	lib64 := filepath.Join(dir, "lib64")
	if err := os.MkdirAll(lib64, 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(lib64, "libnvrtc.so.12")
	if err := os.WriteFile(want, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	calls := withDlopen(t, func(p string) (uintptr, error) {
		if p == want {
			return 42, nil
		}
		return 0, errors.New("no")
	})
	h, err := libNVRTC.open()
	if err != nil || h != 42 {
		t.Fatalf("open = %d, %v; want the file in KILN_CUDA_PATH/lib64", h, err)
	}
	// Files that do not exist are never handed to dlopen; bare names are.
	if len(*calls) != 1 || (*calls)[0] != want {
		t.Errorf("dlopen calls %v, want only %s", *calls, want)
	}
	c := libNVRTC.candidates()
	first := func(s string) int {
		for i, p := range c {
			if strings.HasPrefix(p, s) || p == s {
				return i
			}
		}
		return -1
	}
	order := []int{first(dir), first("libnvrtc.so.13"), first("/usr/local/cuda")}
	for i := 1; i < len(order); i++ {
		if order[i-1] < 0 || order[i] < order[i-1] {
			t.Fatalf("search order wrong: %v in %v", order, c)
		}
	}
}

func TestNoDriverOnThisMachine(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA device")
	}
	_, err := libDriver.open()
	if err == nil {
		t.Skip("libcuda.so.1 is installed without a device")
	}
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Fatalf("err = %v", err)
	}
}

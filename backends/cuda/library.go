//go:build !kiln_nocuda

package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// ErrNoDriver is wrapped by every error caused by a missing or unusable CUDA
// driver (libcuda.so.1): no NVIDIA driver installed, or no GPU.
var ErrNoDriver = errors.New("no CUDA driver")

// ErrNoLibrary is wrapped by errors for a missing CUDA toolkit library other
// than the driver (NVRTC, cuBLAS, NVML).
var ErrNoLibrary = errors.New("no CUDA library")

// library describes one shared library loaded at run time.
type library struct {
	what    string   // "the CUDA driver", "NVRTC"
	names   []string // file names, most preferred first
	wheel   string   // glob under site-packages for pip's nvidia-* wheels
	install string   // how to get it
	cause   error    // ErrNoDriver or ErrNoLibrary
}

var (
	libDriver = library{what: "the CUDA driver", names: []string{"libcuda.so.1", "libcuda.so"},
		install: "install the NVIDIA driver for your GPU (e.g. apt-get install nvidia-driver-550) " +
			"or, in a container, run with the NVIDIA container toolkit (docker run --gpus all)",
		cause: ErrNoDriver}
	libNVRTC = library{what: "NVRTC (the CUDA run-time compiler)",
		names: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"},
		wheel: "nvidia/cuda_nvrtc/lib",
		install: "pip install nvidia-cuda-nvrtc-cu12, or install the CUDA toolkit (apt-get install cuda-nvrtc-12-x), " +
			"or point KILN_CUDA_PATH at a directory holding libnvrtc.so",
		cause: ErrNoLibrary}
	libCUBLAS = library{what: "cuBLAS",
		names: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"},
		wheel: "nvidia/cublas/lib",
		install: "pip install nvidia-cublas-cu12, or install the CUDA toolkit (apt-get install libcublas-12-x), " +
			"or point KILN_CUDA_PATH at a directory holding libcublas.so",
		cause: ErrNoLibrary}
	libNVML = library{what: "NVML (NVIDIA management library)",
		names:   []string{"libnvidia-ml.so.1", "libnvidia-ml.so"},
		install: "it ships with the NVIDIA driver; install the driver or the NVIDIA container toolkit",
		cause:   ErrNoLibrary}
)

// LoadError says which library could not be loaded, every file tried and how
// to install it. It wraps ErrNoDriver or ErrNoLibrary.
type LoadError struct {
	Library string   // what was missing, in words
	Tried   []string // every path or name passed to dlopen, in order
	Last    string   // the loader's message for the last attempt
	Install string   // how to get the library
	cause   error
}

// Error names the library, the files tried and the remedy.
func (e *LoadError) Error() string {
	prefix := "no CUDA library"
	if e.cause == ErrNoDriver {
		prefix = "no CUDA driver"
	}
	msg := fmt.Sprintf("%s: cannot load %s (tried %s)", prefix, e.Library, strings.Join(e.Tried, ", "))
	if e.Last != "" {
		msg += ": " + e.Last
	}
	return msg + "; to fix: " + e.Install
}

// Unwrap returns ErrNoDriver or ErrNoLibrary.
func (e *LoadError) Unwrap() error { return e.cause }

// dlopen opens one shared library; tests replace it to simulate machines.
var dlopen = func(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// candidates lists where lib is looked for, in order: each directory of
// KILN_CUDA_PATH (and its lib64 and lib), the system loader's own search by
// bare file name, /usr/local/cuda, then pip's nvidia-* wheels.
func (lib library) candidates() []string {
	var out []string
	var dirs []string
	if p := os.Getenv("KILN_CUDA_PATH"); p != "" {
		for _, d := range filepath.SplitList(p) {
			if d != "" {
				dirs = append(dirs, d, filepath.Join(d, "lib64"), filepath.Join(d, "lib"))
			}
		}
	}
	for _, d := range dirs {
		for _, n := range lib.names {
			out = append(out, filepath.Join(d, n))
		}
	}
	out = append(out, lib.names...)
	arch := map[string]string{"amd64": "x86_64-linux", "arm64": "sbsa-linux"}[runtime.GOARCH]
	for _, d := range []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/" + arch + "/lib"} {
		for _, n := range lib.names {
			out = append(out, filepath.Join(d, n))
		}
	}
	if lib.wheel != "" {
		for _, sp := range sitePackages() {
			for _, n := range lib.names {
				out = append(out, filepath.Join(sp, lib.wheel, n))
			}
		}
	}
	return out
}

// sitePackages lists Python package directories that may hold nvidia-* wheels.
func sitePackages() []string {
	var pats []string
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		pats = append(pats, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		pats = append(pats, filepath.Join(h, ".local", "lib", "python3*", "site-packages"))
	}
	pats = append(pats, "/usr/local/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages",
		"/usr/local/lib/python3*/site-packages")
	var out []string
	for _, p := range pats {
		m, _ := filepath.Glob(p)
		sort.Strings(m)
		out = append(out, m...)
	}
	return out
}

// open loads lib from the first candidate that dlopen accepts.
func (lib library) open() (uintptr, error) {
	var tried []string
	last := ""
	seen := map[string]bool{}
	for _, c := range lib.candidates() {
		if seen[c] {
			continue
		}
		seen[c] = true
		if strings.ContainsRune(c, '/') {
			if _, err := os.Stat(c); err != nil {
				tried = append(tried, c)
				continue
			}
		}
		h, err := dlopen(c)
		tried = append(tried, c)
		if err == nil {
			return h, nil
		}
		last = err.Error()
	}
	return 0, &LoadError{Library: lib.what + " (" + lib.names[0] + ")", Tried: tried, Last: last,
		Install: lib.install, cause: lib.cause}
}

// bind resolves each name in syms to the function pointer fn points at.
func bind(h uintptr, lib string, syms map[string]any) error {
	for name, fn := range syms {
		addr, err := purego.Dlsym(h, name)
		if err != nil {
			return fmt.Errorf("%w: %s lacks %s (too old?): %v", ErrNoLibrary, lib, name, err)
		}
		purego.RegisterFunc(fn, addr)
	}
	return nil
}

// libraries holds the handles opened once per process.
type libraries struct {
	driver, nvrtc, cublas, nvml uintptr
	driverErr, nvrtcErr         error
	cublasErr, nvmlErr          error
}

var (
	libsOnce sync.Once
	libs     libraries
)

// loadLibraries opens every library once; each missing one keeps its error.
func loadLibraries() *libraries {
	libsOnce.Do(func() {
		libs.driver, libs.driverErr = libDriver.open()
		if libs.driverErr != nil {
			return // without a driver the rest is useless
		}
		libs.nvrtc, libs.nvrtcErr = libNVRTC.open()
		libs.cublas, libs.cublasErr = libCUBLAS.open()
		libs.nvml, libs.nvmlErr = libNVML.open()
	})
	return &libs
}

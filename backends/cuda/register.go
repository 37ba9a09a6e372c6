//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"sync"

	"github.com/kiln-ml/kiln/backends"
)

func init() { backends.Register(cudaKind{}) }

// cudaKind is the backends.Driver for "cuda" devices.
type cudaKind struct{}

func (cudaKind) Kind() string  { return "cuda" }
func (cudaKind) Priority() int { return 100 } // a GPU before the CPU

var (
	sysOnce sync.Once
	sysDrv  *cudaDriver
	sysErr  error
	sysNVRT *nvrtc
	sysML   *nvml

	openMu sync.Mutex
	opened = map[int]*Backend{}
)

// system loads the libraries and the driver once per process.
func system() (*cudaDriver, error) {
	sysOnce.Do(func() {
		l := loadLibraries()
		if l.driverErr != nil {
			sysErr = l.driverErr
			return
		}
		if sysDrv, sysErr = newCudaDriver(l.driver); sysErr != nil {
			return
		}
		if l.nvrtcErr != nil {
			sysErr = l.nvrtcErr
			return
		}
		if sysNVRT, sysErr = newNVRTC(l.nvrtc); sysErr != nil {
			return
		}
		if l.nvmlErr == nil {
			sysML, _ = newNVML(l.nvml) // metrics only: ignore failure
		}
	})
	return sysDrv, sysErr
}

// Available reports whether CUDA devices can be used, and if not, why:
// the error names the missing library, the files tried and how to install it.
func Available() error {
	drv, err := system()
	if err != nil {
		return err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDriver, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: the driver found no GPU", ErrNoDriver)
	}
	return nil
}

// Enumerate lists the GPUs, or nothing when the driver or NVRTC is missing.
func (cudaKind) Enumerate() []backends.DeviceInfo {
	if Available() != nil {
		return nil
	}
	n, _ := sysDrv.DeviceCount()
	var out []backends.DeviceInfo
	for i := range n {
		p, err := sysDrv.Props(i)
		if err != nil {
			continue
		}
		out = append(out, backends.DeviceInfo{Kind: "cuda", Index: i, Name: p.Name, MemoryBytes: p.TotalMemory,
			Cores: p.SMCount, Detail: fmt.Sprintf("compute capability %d.%d", p.Major, p.Minor)})
	}
	return out
}

// Open returns the backend of GPU index, starting its thread on first use.
func (cudaKind) Open(index int) (backends.Backend, error) {
	return Open(index)
}

// Open returns the Backend of GPU index. Without a usable driver, NVRTC or
// GPU the error says what is missing and how to get it.
func Open(index int) (*Backend, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	openMu.Lock()
	defer openMu.Unlock()
	if b, ok := opened[index]; ok {
		return b, nil
	}
	n, _ := sysDrv.DeviceCount()
	if index < 0 || index >= n {
		return nil, fmt.Errorf("cuda: no device cuda:%d (found %d GPUs)", index, n)
	}
	l := loadLibraries()
	var newBlas func(Stream) (gemmer, error)
	if l.cublasErr == nil {
		newBlas = func(s Stream) (gemmer, error) { return newCublas(l.cublas, s) }
	}
	b, err := newBackend(sysDrv, sysNVRT, index, cacheDir(), newBlas, sysML)
	if err != nil {
		return nil, err
	}
	opened[index] = b
	return b, nil
}

//go:build !kiln_nocuda

package cuda

import "unsafe"

// DevicePtr is a CUDA device address (CUdeviceptr).
type DevicePtr uint64

// Stream is a CUDA stream handle; 0 is the legacy default stream.
type Stream uintptr

// Event is a CUDA event handle, used by the allocator to know when a freed
// block's last use on its stream has finished.
type Event uintptr

// Module is a loaded CUDA module (CUmodule).
type Module uintptr

// Function is a kernel entry point in a Module (CUfunction).
type Function uintptr

// Props describes one GPU as the driver reports it.
type Props struct {
	Name         string
	TotalMemory  int64
	SMCount      int
	Major, Minor int // compute capability
	DriverVer    int // e.g. 12040 for CUDA 12.4
}

// Arch returns the NVRTC architecture option for p, "sm_90" for 9.0.
func (p Props) Arch() string { return "sm_" + itoa(p.Major) + itoa(p.Minor) }

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Driver is the slice of the CUDA driver API the backend uses. The real one
// calls libcuda through purego; tests use a fake in Go. Every method is
// called on the device's own OS thread (see doc.go), after Init for that
// device made its context current there.
type Driver interface {
	// DeviceCount returns the number of GPUs.
	DeviceCount() (int, error)
	// Props describes GPU ordinal.
	Props(ordinal int) (Props, error)
	// Init retains GPU ordinal's primary context and makes it current on
	// the calling thread.
	Init(ordinal int) error
	// MemGetInfo returns free and total device memory in bytes.
	MemGetInfo() (free, total int64, err error)
	// MemAlloc allocates device memory; an out-of-memory failure wraps
	// backends.ErrOutOfMemory.
	MemAlloc(bytes int64) (DevicePtr, error)
	// MemFree releases memory from MemAlloc.
	MemFree(p DevicePtr) error
	// CopyHtoD copies host memory to the device, ordered on s.
	CopyHtoD(dst DevicePtr, src []byte, s Stream) error
	// CopyDtoH copies device memory to the host and waits for it.
	CopyDtoH(dst []byte, src DevicePtr, s Stream) error
	// StreamCreate makes a non-blocking stream.
	StreamCreate() (Stream, error)
	// StreamSync waits for all work on s.
	StreamSync(s Stream) error
	// EventCreate makes an event without timing.
	EventCreate() (Event, error)
	// EventRecord records e on s.
	EventRecord(e Event, s Stream) error
	// EventDone reports whether the work before e's record has finished.
	EventDone(e Event) (bool, error)
	// EventDestroy frees e.
	EventDestroy(e Event) error
	// StreamWaitEvent makes later work on s wait for e.
	StreamWaitEvent(s Stream, e Event) error
	// ModuleLoad loads a PTX or cubin image.
	ModuleLoad(image []byte) (Module, error)
	// ModuleFunction looks up a kernel by its extern "C" name.
	ModuleFunction(m Module, name string) (Function, error)
	// Launch runs f on grid×block threads with the given parameter
	// pointers (one per kernel parameter) on s.
	Launch(f Function, grid, block [3]uint32, shared uint32, s Stream, params []unsafe.Pointer) error
}

// Compiler turns CUDA C into PTX (NVRTC).
type Compiler interface {
	// Version returns the compiler's major and minor version.
	Version() (major, minor int, err error)
	// Compile compiles src (named name in messages) with opts and returns
	// the PTX, or an error carrying the compiler's log.
	Compile(src, name string, opts []string) ([]byte, error)
}

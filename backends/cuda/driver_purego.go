//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// CUresult codes the backend distinguishes.
const (
	cuSuccess     = 0
	cuOutOfMemory = 2
	cuNotReady    = 600
)

// cudaDriver calls libcuda through purego. Its function fields are bound by
// newCudaDriver from the loaded library.
type cudaDriver struct {
	cuInit                func(flags uint32) int32
	cuDriverGetVersion    func(v *int32) int32
	cuDeviceGetCount      func(n *int32) int32
	cuDeviceGet           func(dev *int32, ordinal int32) int32
	cuDeviceGetName       func(name *byte, n int32, dev int32) int32
	cuDeviceTotalMem      func(bytes *uint64, dev int32) int32
	cuDeviceGetAttribute  func(v *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRet func(ctx *uintptr, dev int32) int32
	cuCtxSetCurrent       func(ctx uintptr) int32
	cuMemGetInfo          func(free, total *uint64) int32
	cuMemAlloc            func(p *uint64, bytes uint64) int32
	cuMemFree             func(p uint64) int32
	cuMemcpyHtoDAsync     func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) int32
	cuMemcpyDtoHAsync     func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) int32
	cuStreamCreate        func(s *uintptr, flags uint32) int32
	cuStreamSynchronize   func(s uintptr) int32
	cuEventCreate         func(e *uintptr, flags uint32) int32
	cuEventRecord         func(e, s uintptr) int32
	cuEventQuery          func(e uintptr) int32
	cuEventDestroy        func(e uintptr) int32
	cuStreamWaitEvent     func(s, e uintptr, flags uint32) int32
	cuModuleLoadData      func(m *uintptr, image unsafe.Pointer) int32
	cuModuleGetFunction   func(f *uintptr, m uintptr, name *byte) int32
	cuLaunchKernel        func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
	cuGetErrorString      func(code int32, s **byte) int32
}

// newCudaDriver binds the driver functions and calls cuInit.
func newCudaDriver(h uintptr) (*cudaDriver, error) {
	d := &cudaDriver{}
	err := bind(h, "libcuda", map[string]any{
		"cuInit": &d.cuInit, "cuDriverGetVersion": &d.cuDriverGetVersion,
		"cuDeviceGetCount": &d.cuDeviceGetCount, "cuDeviceGet": &d.cuDeviceGet,
		"cuDeviceGetName": &d.cuDeviceGetName, "cuDeviceTotalMem_v2": &d.cuDeviceTotalMem,
		"cuDeviceGetAttribute": &d.cuDeviceGetAttribute, "cuDevicePrimaryCtxRetain": &d.cuDevicePrimaryCtxRet,
		"cuCtxSetCurrent": &d.cuCtxSetCurrent, "cuMemGetInfo_v2": &d.cuMemGetInfo,
		"cuMemAlloc_v2": &d.cuMemAlloc, "cuMemFree_v2": &d.cuMemFree,
		"cuMemcpyHtoDAsync_v2": &d.cuMemcpyHtoDAsync, "cuMemcpyDtoHAsync_v2": &d.cuMemcpyDtoHAsync,
		"cuStreamCreate": &d.cuStreamCreate, "cuStreamSynchronize": &d.cuStreamSynchronize,
		"cuEventCreate": &d.cuEventCreate, "cuEventRecord": &d.cuEventRecord, "cuEventQuery": &d.cuEventQuery,
		"cuEventDestroy_v2": &d.cuEventDestroy, "cuStreamWaitEvent": &d.cuStreamWaitEvent,
		"cuModuleLoadData": &d.cuModuleLoadData, "cuModuleGetFunction": &d.cuModuleGetFunction,
		"cuLaunchKernel": &d.cuLaunchKernel, "cuGetErrorString": &d.cuGetErrorString,
	})
	if err != nil {
		return nil, err
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, fmt.Errorf("%w: %v (is a GPU visible? check nvidia-smi)", ErrNoDriver, err)
	}
	return d, nil
}

func (d *cudaDriver) check(call string, r int32) error {
	if r == cuSuccess {
		return nil
	}
	var s *byte
	msg := "unknown error"
	if d.cuGetErrorString(r, &s) == cuSuccess && s != nil {
		msg = cString(s)
	}
	if r == cuOutOfMemory {
		return fmt.Errorf("cuda: %s: %w (CUDA error %d: %s)", call, backends.ErrOutOfMemory, r, msg)
	}
	return fmt.Errorf("cuda: %s: CUDA error %d: %s", call, r, msg)
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

func cBytes(s string) []byte { return append([]byte(s), 0) }

func (d *cudaDriver) DeviceCount() (int, error) {
	var n int32
	err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n))
	return int(n), err
}

func (d *cudaDriver) Props(ordinal int) (Props, error) {
	var dev int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return Props{}, err
	}
	name := make([]byte, 256)
	var mem uint64
	var sm, major, minor, ver int32
	const attrSMCount, attrMajor, attrMinor = 16, 75, 76
	for _, e := range []error{
		d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev)),
		d.check("cuDeviceTotalMem", d.cuDeviceTotalMem(&mem, dev)),
		d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&sm, attrSMCount, dev)),
		d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&major, attrMajor, dev)),
		d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&minor, attrMinor, dev)),
		d.check("cuDriverGetVersion", d.cuDriverGetVersion(&ver)),
	} {
		if e != nil {
			return Props{}, e
		}
	}
	return Props{Name: cString(&name[0]), TotalMemory: int64(mem), SMCount: int(sm),
		Major: int(major), Minor: int(minor), DriverVer: int(ver)}, nil
}

func (d *cudaDriver) Init(ordinal int) error {
	var dev int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return err
	}
	var ctx uintptr
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRet(&ctx, dev)); err != nil {
		return err
	}
	return d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(ctx))
}

func (d *cudaDriver) MemGetInfo() (int64, int64, error) {
	var free, total uint64
	err := d.check("cuMemGetInfo", d.cuMemGetInfo(&free, &total))
	return int64(free), int64(total), err
}

func (d *cudaDriver) MemAlloc(bytes int64) (DevicePtr, error) {
	var p uint64
	err := d.check("cuMemAlloc", d.cuMemAlloc(&p, uint64(bytes)))
	return DevicePtr(p), err
}

func (d *cudaDriver) MemFree(p DevicePtr) error { return d.check("cuMemFree", d.cuMemFree(uint64(p))) }

func (d *cudaDriver) CopyHtoD(dst DevicePtr, src []byte, s Stream) error {
	if len(src) == 0 {
		return nil
	}
	// A pageable source is staged before the call returns, so src may be
	// reused afterwards.
	return d.check("cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src)), uintptr(s)))
}

func (d *cudaDriver) CopyDtoH(dst []byte, src DevicePtr, s Stream) error {
	if len(dst) == 0 {
		return nil
	}
	if err := d.check("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst)), uintptr(s))); err != nil {
		return err
	}
	return d.StreamSync(s)
}

func (d *cudaDriver) StreamCreate() (Stream, error) {
	var s uintptr
	err := d.check("cuStreamCreate", d.cuStreamCreate(&s, 1)) // CU_STREAM_NON_BLOCKING
	return Stream(s), err
}

func (d *cudaDriver) StreamSync(s Stream) error {
	return d.check("cuStreamSynchronize", d.cuStreamSynchronize(uintptr(s)))
}

func (d *cudaDriver) EventCreate() (Event, error) {
	var e uintptr
	err := d.check("cuEventCreate", d.cuEventCreate(&e, 2)) // CU_EVENT_DISABLE_TIMING
	return Event(e), err
}

func (d *cudaDriver) EventRecord(e Event, s Stream) error {
	return d.check("cuEventRecord", d.cuEventRecord(uintptr(e), uintptr(s)))
}

func (d *cudaDriver) EventDone(e Event) (bool, error) {
	r := d.cuEventQuery(uintptr(e))
	if r == cuNotReady {
		return false, nil
	}
	return r == cuSuccess, d.check("cuEventQuery", r)
}

func (d *cudaDriver) EventDestroy(e Event) error {
	return d.check("cuEventDestroy", d.cuEventDestroy(uintptr(e)))
}

func (d *cudaDriver) StreamWaitEvent(s Stream, e Event) error {
	return d.check("cuStreamWaitEvent", d.cuStreamWaitEvent(uintptr(s), uintptr(e), 0))
}

func (d *cudaDriver) ModuleLoad(image []byte) (Module, error) {
	img := append(append([]byte(nil), image...), 0)
	var m uintptr
	err := d.check("cuModuleLoadData", d.cuModuleLoadData(&m, unsafe.Pointer(&img[0])))
	return Module(m), err
}

func (d *cudaDriver) ModuleFunction(m Module, name string) (Function, error) {
	var f uintptr
	n := cBytes(name)
	err := d.check("cuModuleGetFunction "+name, d.cuModuleGetFunction(&f, uintptr(m), &n[0]))
	return Function(f), err
}

func (d *cudaDriver) Launch(f Function, grid, block [3]uint32, shared uint32, s Stream, params []unsafe.Pointer) error {
	var pp unsafe.Pointer
	if len(params) > 0 {
		pp = unsafe.Pointer(&params[0])
	}
	return d.check("cuLaunchKernel", d.cuLaunchKernel(uintptr(f), grid[0], grid[1], grid[2],
		block[0], block[1], block[2], shared, uintptr(s), pp, nil))
}

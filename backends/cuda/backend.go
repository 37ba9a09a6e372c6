//go:build !kiln_nocuda

package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// Backend drives one GPU. It implements backends.Backend: kernels are queued
// to the device's thread and run asynchronously on one stream; Read and Sync
// wait and return the first failure since the last one was reported.
type Backend struct {
	ordinal int
	props   Props
	drv     Driver
	thread  *deviceThread
	stream  Stream
	alloc   *allocator
	cache   *compileCache
	blas    gemmer // nil without cuBLAS
	metrics *nvml  // nil without NVML
	errFlag *block // int32 set by kernels on an index out of range

	funcs map[string]Function // on the thread only

	mu    sync.Mutex
	err   error
	fatal bool // a driver failure: keep reporting it
}

// buffer is device memory from the caching allocator.
type buffer struct {
	blk   *block
	bytes int64
	owner *Backend
}

// Bytes returns the buffer's size in bytes.
func (b *buffer) Bytes() int64 { return b.bytes }

// newBackend starts the device thread for GPU ordinal and prepares it.
// blas may be nil; newBlas, when not nil, is called on the thread to make it.
func newBackend(drv Driver, comp Compiler, ordinal int, cacheDirectory string, newBlas func(Stream) (gemmer, error), ml *nvml) (*Backend, error) {
	b := &Backend{ordinal: ordinal, drv: drv, funcs: map[string]Function{}, metrics: ml}
	var err error
	b.thread, err = newDeviceThread(func() error {
		if err := drv.Init(ordinal); err != nil {
			return err
		}
		if b.props, err = drv.Props(ordinal); err != nil {
			return err
		}
		if b.stream, err = drv.StreamCreate(); err != nil {
			return err
		}
		b.alloc = newAllocator(drv)
		if b.errFlag, err = b.alloc.alloc(4, b.stream); err != nil {
			return err
		}
		if err := drv.CopyHtoD(b.errFlag.ptr, make([]byte, 4), b.stream); err != nil {
			return err
		}
		if newBlas != nil {
			if g, err := newBlas(b.stream); err == nil {
				b.blas = g
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: open device %d: %w", ordinal, err)
	}
	if b.cache, err = newCompileCache(comp, b.props.Arch(), cacheDirectory); err != nil {
		b.thread.close()
		return nil, err
	}
	return b, nil
}

// Info describes the GPU.
func (b *Backend) Info() backends.DeviceInfo {
	gemm := "tiled GEMM kernel (no cuBLAS)"
	if b.blas != nil {
		gemm = "cuBLAS"
	}
	return backends.DeviceInfo{Kind: "cuda", Index: b.ordinal, Name: b.props.Name, MemoryBytes: b.props.TotalMemory,
		Cores: b.props.SMCount, Detail: fmt.Sprintf("compute capability %d.%d, CUDA driver %d.%d, %s",
			b.props.Major, b.props.Minor, b.props.DriverVer/1000, b.props.DriverVer%1000/10, gemm)}
}

// fail records err as the sticky error unless one is already pending.
func (b *Backend) fail(err error, fatal bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
	b.fatal = b.fatal || fatal
}

// takeErr returns the pending error, forgetting it unless it is fatal.
func (b *Backend) takeErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.err
	if !b.fatal {
		b.err = nil
	}
	return err
}

// Alloc returns a buffer for n elements of dtype, from the cache when it can.
func (b *Backend) Alloc(dtype backends.DType, n int) (backends.Buffer, error) {
	if n < 0 || !dtype.Valid() {
		return nil, fmt.Errorf("cuda: alloc %d elements of %s: bad request", n, dtype)
	}
	bytes := int64(n) * int64(dtype.Size())
	var blk *block
	var err error
	b.thread.call(func() { blk, err = b.alloc.alloc(max(bytes, 1), b.stream) })
	if err != nil {
		return nil, err
	}
	return &buffer{blk: blk, bytes: bytes, owner: b}, nil
}

// EmptyCache waits for queued work and returns every cached block to the driver.
func (b *Backend) EmptyCache() error {
	var err error
	b.thread.call(func() { err = b.alloc.emptyCache() })
	return err
}

func (b *Backend) buf(x backends.Buffer) *buffer {
	bb, ok := x.(*buffer)
	if !ok || bb.owner != b {
		panic(fmt.Sprintf("cuda: buffer %T does not belong to device cuda:%d", x, b.ordinal))
	}
	return bb
}

// Free queues buf's return to the cache after the work already queued.
func (b *Backend) Free(x backends.Buffer) {
	bb := b.buf(x)
	blk := bb.blk
	bb.blk = nil
	if blk == nil {
		return
	}
	b.thread.post(func() { b.alloc.release(blk, b.stream) })
}

// Write copies src into buf at byte offset off (src is copied first).
func (b *Backend) Write(x backends.Buffer, off int64, src []byte) {
	bb := b.buf(x)
	if off < 0 || off+int64(len(src)) > bb.bytes {
		b.fail(fmt.Errorf("cuda: write %d bytes at %d into a %d-byte buffer", len(src), off, bb.bytes), false)
		return
	}
	data := append([]byte(nil), src...)
	p := bb.blk.ptr + DevicePtr(off)
	b.thread.post(func() {
		if err := b.drv.CopyHtoD(p, data, b.stream); err != nil {
			b.fail(err, true)
		}
	})
}

// Read waits for queued work and copies len(dst) bytes at byte offset off.
func (b *Backend) Read(x backends.Buffer, off int64, dst []byte) error {
	bb := b.buf(x)
	if off < 0 || off+int64(len(dst)) > bb.bytes {
		return fmt.Errorf("cuda: read %d bytes at %d from a %d-byte buffer", len(dst), off, bb.bytes)
	}
	if err := b.Sync(); err != nil {
		return err
	}
	var err error
	b.thread.call(func() { err = b.drv.CopyDtoH(dst, bb.blk.ptr+DevicePtr(off), b.stream) })
	if err != nil {
		b.fail(err, true)
		return b.takeErr()
	}
	return nil
}

// Sync waits for queued work and returns the pending error, if any.
func (b *Backend) Sync() error {
	b.thread.call(func() {
		if err := b.drv.StreamSync(b.stream); err != nil {
			b.fail(err, true)
			return
		}
		var flag [4]byte
		if err := b.drv.CopyDtoH(flag[:], b.errFlag.ptr, b.stream); err != nil {
			b.fail(err, true)
			return
		}
		if binary.LittleEndian.Uint32(flag[:]) != 0 {
			b.fail(errors.New("cuda: index out of range in gather or scatter"), false)
			if err := b.drv.CopyHtoD(b.errFlag.ptr, make([]byte, 4), b.stream); err != nil {
				b.fail(err, true)
			}
		}
	})
	return b.takeErr()
}

// MemoryStats reports the caching allocator's counters.
func (b *Backend) MemoryStats() backends.MemoryStats { return b.alloc.memoryStats() }

// Close stops the device thread after queued work.
func (b *Backend) Close() { b.thread.close() }

// args packs kernel parameters; each value is kept alive until the launch.
type args struct{ vals [][]byte }

func (a *args) raw(p []byte) *args { a.vals = append(a.vals, p); return a }

func (a *args) u64(v uint64) *args {
	var p [8]byte
	binary.LittleEndian.PutUint64(p[:], v)
	return a.raw(p[:])
}

func (a *args) i64(v int) *args     { return a.u64(uint64(int64(v))) }
func (a *args) f64(v float64) *args { return a.u64(math.Float64bits(v)) }

func (a *args) i32(v int) *args {
	var p [4]byte
	binary.LittleEndian.PutUint32(p[:], uint32(int32(v)))
	return a.raw(p[:])
}

func (a *args) ptr(p DevicePtr) *args { return a.u64(uint64(p)) }

// kviewSize is sizeof(struct KView): off, shape[8], strides[8], ndim, padding.
const kviewSize = 8 + 8*maxDims*2 + 8

// kview encodes a shape, strides and offset as the kernels' KView.
func kview(shape, strides []int, off int) ([]byte, error) {
	if len(shape) > maxDims {
		return nil, fmt.Errorf("cuda: views of rank %d are not supported (at most %d)", len(shape), maxDims)
	}
	p := make([]byte, kviewSize)
	binary.LittleEndian.PutUint64(p, uint64(int64(off)))
	for i := range shape {
		binary.LittleEndian.PutUint64(p[8+8*i:], uint64(int64(shape[i])))
		binary.LittleEndian.PutUint64(p[8+8*maxDims+8*i:], uint64(int64(strides[i])))
	}
	binary.LittleEndian.PutUint32(p[8+16*maxDims:], uint32(len(shape)))
	return p, nil
}

// view appends v's pointer and its KView with v's own shape.
func (b *Backend) view(a *args, v backends.View) error {
	return b.viewAs(a, v, v.Shape, v.Strides)
}

// viewAs appends v's pointer and a KView with the given shape and strides.
func (b *Backend) viewAs(a *args, v backends.View, shape, strides []int) error {
	kv, err := kview(shape, strides, v.Offset)
	if err != nil {
		return err
	}
	a.ptr(b.buf(v.Buf).blk.ptr).raw(kv)
	return nil
}

// launch queues kernel k over n threads in a grid-stride loop.
func (b *Backend) launch(k func() kernel, grid, block [3]uint32, a *args) {
	params := make([]unsafe.Pointer, len(a.vals))
	for i, v := range a.vals {
		params[i] = unsafe.Pointer(&v[0])
	}
	b.thread.post(func() {
		f, err := b.function(k)
		if err == nil {
			err = b.drv.Launch(f, grid, block, 0, b.stream, params)
		}
		if err != nil {
			b.fail(err, false)
		}
		_ = a // keep the parameter values alive until the launch
	})
}

// launch1D queues a grid-stride kernel over n elements.
func (b *Backend) launch1D(k func() kernel, n int, a *args) {
	if n == 0 {
		return
	}
	blocks := min((n+255)/256, 1<<16)
	b.launch(k, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{256, 1, 1}, a.i64(n))
}

// function returns the loaded kernel, compiling it on first use.
func (b *Backend) function(gen func() kernel) (Function, error) {
	k := gen()
	if f, ok := b.funcs[k.Name]; ok {
		return f, nil
	}
	ptx, err := b.cache.ptx(k)
	if err != nil {
		return 0, err
	}
	m, err := b.drv.ModuleLoad(ptx)
	if err != nil {
		return 0, err
	}
	f, err := b.drv.ModuleFunction(m, k.Name)
	if err != nil {
		return 0, err
	}
	b.funcs[k.Name] = f
	return f, nil
}

// prep builds kernel arguments from views, recording a failure for a view
// the kernels cannot take.
func (b *Backend) prep(views ...backends.View) (*args, bool) {
	a := &args{}
	for _, v := range views {
		if err := b.view(a, v); err != nil {
			b.fail(err, false)
			return nil, false
		}
	}
	return a, true
}

// with returns shape with axis set to n.
func with(shape []int, axis, n int) []int {
	s := append([]int(nil), shape...)
	s[axis] = n
	return s
}

var _ backends.Backend = (*Backend)(nil)

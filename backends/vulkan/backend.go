//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// Backend drives one Vulkan device through one compute queue. It implements
// backends.Backend: kernels are recorded into command buffers and submitted
// in batches; Read and Sync wait for them and return the first failure since
// the last one was reported. A lost device keeps reporting ErrDeviceLost.
// Its methods may be called from several goroutines.
type Backend struct {
	index  int
	pd     *physicalDevice
	dev    uintptr
	fn     deviceFuncs
	queue  uintptr
	layout uint64 // the pipeline layout every shader shares: 16 bytes of push constants
	pool   uint64 // command pool
	sem    uint64 // timeline semaphore signalled by each submitted batch

	mu        sync.Mutex // guards everything below
	alloc     allocator
	stream    stream
	pipelines map[string]uint64
	modules   map[string]uint64
	errWord   *block         // the shaders' ErrRef: code, pad, detail
	hostOps   map[string]int // ops run on the host by onHost, by name
	cpu       *cpu.Backend   // runs onHost's fallbacks
	closed    bool           // by Close: every call fails with ErrClosed

	// subgroupGEMM selects matmul_subgroup.comp for float GEMMs; set where
	// the device supports it (tests switch it to compare the two paths).
	subgroupGEMM atomic.Bool

	errMu sync.Mutex
	err   error
	fatal bool
}

// buffer is device memory from the caching allocator.
type buffer struct {
	blk   *block
	bytes int64
	dtype backends.DType
	owner *Backend
}

// Bytes returns the buffer's size in bytes.
func (b *buffer) Bytes() int64 { return b.bytes }

var (
	openMu sync.Mutex
	opened = map[int]*Backend{}
)

// Open returns the backend of Vulkan device index (in Devices' order),
// creating its VkDevice on first use; later calls return the same backend.
// It fails, naming what is missing, when there is no Vulkan loader, no such
// device, or the device lacks a required feature (bufferDeviceAddress,
// shaderInt64, 8- and 16-bit storage, timeline semaphores) or a compute
// queue.
func Open(index int) (*Backend, error) {
	openMu.Lock()
	defer openMu.Unlock()
	if b := opened[index]; b != nil {
		return b, nil
	}
	ps, err := physicalDevices()
	if err != nil {
		return nil, fmt.Errorf("vulkan: open device %d: %w", index, err)
	}
	if index < 0 || index >= len(ps) {
		return nil, fmt.Errorf("vulkan: open device %d: no such device (%d Vulkan device(s) found)", index, len(ps))
	}
	p := ps[index]
	if p.apiVersion < apiVersion12 {
		return nil, fmt.Errorf("vulkan: open device %d (%s): Vulkan %d.%d; the backend needs Vulkan 1.2", index, p.name, p.apiVersion>>22, p.apiVersion>>12&0x3FF)
	}
	if m := p.features.missing(); m != "" {
		return nil, fmt.Errorf("vulkan: open device %d (%s): the device lacks the %s feature the backend requires", index, p.name, m)
	}
	if p.family < 0 {
		return nil, fmt.Errorf("vulkan: open device %d (%s): no queue family supports compute", index, p.name)
	}
	b, err := newBackend(index, p)
	if err != nil {
		return nil, fmt.Errorf("vulkan: open device %d (%s): %w", index, p.name, err)
	}
	opened[index] = b
	return b, nil
}

// newBackend creates the VkDevice, its queue and the shared objects.
func newBackend(index int, p *physicalDevice) (*Backend, error) {
	l := lib
	b := &Backend{index: index, pd: p, pipelines: map[string]uint64{}, modules: map[string]uint64{},
		hostOps: map[string]int{}, cpu: cpu.New(0)}
	b.alloc.free, b.alloc.live = map[int64][]*block{}, map[*block]bool{}
	b.subgroupGEMM.Store(p.subgroup.gemmSubgroup())

	f11 := &vkPhysicalDeviceVulkan11Features{sType: stVulkan11Features}
	f11.f[feat11StorageBuffer16] = 1
	f12 := &vkPhysicalDeviceVulkan12Features{sType: stVulkan12Features, pNext: ptrOf(f11)}
	f12.f[feat12StorageBuffer8] = 1
	f12.f[feat12Timeline] = 1
	f12.f[feat12BufferDeviceAddr] = 1
	if p.features.int8 {
		f12.f[feat12ShaderInt8] = 1
	}
	f2 := &vkPhysicalDeviceFeatures2{sType: stFeatures2, pNext: ptrOf(f12)}
	f2.features[featShaderInt64] = 1
	if p.features.float64 {
		f2.features[featShaderFloat64] = 1
	}
	if p.features.int16 {
		f2.features[featShaderInt16] = 1
	}
	prio := new(float32)
	*prio = 1
	qci := &vkDeviceQueueCreateInfo{sType: stDeviceQueueCreateInfo, queueFamilyIndex: uint32(p.family), queueCount: 1, pQueuePriorities: prio}
	dci := &vkDeviceCreateInfo{sType: stDeviceCreateInfo, pNext: ptrOf(f2), queueCreateInfoCount: 1, pQueueCreateInfos: qci}
	r := l.fn.vkCreateDevice(p.handle, dci, nil, &b.dev)
	runtime.KeepAlive(dci)
	runtime.KeepAlive(qci)
	runtime.KeepAlive(prio)
	runtime.KeepAlive(f2)
	runtime.KeepAlive(f12)
	runtime.KeepAlive(f11)
	if err := vkCheck("vkCreateDevice", r); err != nil {
		return nil, err
	}
	if err := bindProcs(func(name string) uintptr { return l.fn.vkGetDeviceProcAddr(b.dev, cstr(name)) }, &b.fn); err != nil {
		return nil, err
	}
	b.fn.vkGetDeviceQueue(b.dev, uint32(p.family), 0, &b.queue)

	pcr := &vkPushConstantRange{stageFlags: stageCompute, size: 16}
	lci := &vkPipelineLayoutCreateInfo{sType: stPipelineLayoutCreateInfo, pushConstantRangeCount: 1, pPushConstantRanges: pcr}
	err := vkCheck("vkCreatePipelineLayout", b.fn.vkCreatePipelineLayout(b.dev, lci, nil, &b.layout))
	runtime.KeepAlive(pcr)
	if err != nil {
		return nil, err
	}
	pci := &vkCommandPoolCreateInfo{sType: stCommandPoolCreateInfo, flags: cmdPoolResetCommandBuffer, queueFamilyIndex: uint32(p.family)}
	if err := vkCheck("vkCreateCommandPool", b.fn.vkCreateCommandPool(b.dev, pci, nil, &b.pool)); err != nil {
		return nil, err
	}
	tci := &vkSemaphoreTypeCreateInfo{sType: stSemaphoreTypeCreateInfo, semaphoreType: semaphoreTypeTimeline}
	sci := &vkSemaphoreCreateInfo{sType: stSemaphoreCreateInfo, pNext: ptrOf(tci)}
	err = vkCheck("vkCreateSemaphore", b.fn.vkCreateSemaphore(b.dev, sci, nil, &b.sem))
	runtime.KeepAlive(tci)
	if err != nil {
		return nil, err
	}
	if b.errWord, err = b.newBlock(minClass, stagingMemory); err != nil {
		return nil, err
	}
	clear(b.errWord.hostBytes())
	return b, nil
}

// Info describes the device.
func (b *Backend) Info() backends.DeviceInfo { return b.pd.info(b.index) }

// fail records err as the sticky error unless one is already pending. A
// lost device makes the error permanent.
func (b *Backend) fail(err error) {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	if errors.Is(err, ErrDeviceLost) {
		if !b.fatal {
			b.err = err
		}
		b.fatal = true
		return
	}
	if b.err == nil {
		b.err = err
	}
}

// lost reports whether the device was lost.
func (b *Backend) lost() bool {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	return b.fatal
}

// takeErr returns the pending error, forgetting it unless it is fatal.
func (b *Backend) takeErr() error {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	err := b.err
	if !b.fatal {
		b.err = nil
	}
	return err
}

// Alloc returns a buffer for n elements of dtype, from the cache when it can.
// Its error wraps backends.ErrOutOfMemory when the device is full.
func (b *Backend) Alloc(dtype backends.DType, n int) (backends.Buffer, error) {
	if n < 0 || !dtype.Valid() {
		return nil, fmt.Errorf("vulkan: alloc %d elements of %s: bad request", n, dtype)
	}
	bytes := int64(n) * int64(dtype.Size())
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("vulkan: alloc %d bytes on vulkan:%d: %w", bytes, b.index, ErrClosed)
	}
	blk, err := b.allocBlock(max(bytes, 1))
	if err != nil {
		return nil, err
	}
	b.alloc.live[blk] = true
	s := &b.alloc.stats
	s.LiveBytes += bytes
	s.PeakBytes = max(s.PeakBytes, s.LiveBytes)
	s.LiveBuffers++
	s.Allocations++
	return &buffer{blk: blk, bytes: bytes, dtype: dtype, owner: b}, nil
}

// buf returns x as this backend's buffer, or panics: a buffer of another
// device is a programming error.
func (b *Backend) buf(x backends.Buffer) *buffer {
	bb, ok := x.(*buffer)
	if !ok || bb.owner != b {
		panic(fmt.Sprintf("vulkan: buffer %T does not belong to device vulkan:%d", x, b.index))
	}
	return bb
}

// Free returns buf to the cache; it is reused once the work queued before
// this call has completed.
func (b *Backend) Free(x backends.Buffer) {
	bb := b.buf(x)
	b.mu.Lock()
	defer b.mu.Unlock()
	if bb.blk == nil || b.closed { // Close gave every block back
		bb.blk = nil
		return
	}
	delete(b.alloc.live, bb.blk)
	b.releaseBlock(bb.blk)
	bb.blk = nil
	b.alloc.stats.LiveBytes -= bb.bytes
	b.alloc.stats.LiveBuffers--
}

// EmptyCache waits for queued work and returns every cached block to the driver.
func (b *Backend) EmptyCache() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.waitIdle()
	b.emptyCache()
}

// Write copies src into buf at byte offset off. The bytes go through the
// stream (a staging copy), so the write is ordered after queued work that
// still reads buf.
func (b *Backend) Write(x backends.Buffer, off int64, src []byte) {
	bb := b.buf(x)
	if bb.blk == nil || off < 0 || off+int64(len(src)) > bb.bytes {
		b.fail(fmt.Errorf("vulkan: write %d bytes at %d into a %d-byte buffer", len(src), off, bb.bytes))
		return
	}
	if len(src) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return // the sticky ErrClosed reports it
	}
	b.upload(bb.blk, off, src)
}

// Read waits for queued work and copies len(dst) bytes at byte offset off
// of buf into dst. It returns the sticky error, if any.
func (b *Backend) Read(x backends.Buffer, off int64, dst []byte) error {
	bb := b.buf(x)
	if bb.blk == nil || off < 0 || off+int64(len(dst)) > bb.bytes {
		return fmt.Errorf("vulkan: read %d bytes at %d from a %d-byte buffer", len(dst), off, bb.bytes)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.takeErr()
	}
	b.waitIdle()
	b.checkErrWord()
	if err := b.takeErr(); err != nil {
		return err
	}
	b.download(bb.blk, off, dst)
	return b.takeErr()
}

// Sync waits for queued work and returns the pending error, if any.
func (b *Backend) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.takeErr()
	}
	b.waitIdle()
	b.checkErrWord()
	return b.takeErr()
}

// checkErrWord turns an error reported by a shader into the sticky error
// and clears the word. The stream is idle.
func (b *Backend) checkErrWord() {
	w := b.errWord.hostBytes()
	code := binary.LittleEndian.Uint32(w)
	if code == 0 {
		return
	}
	detail := int64(binary.LittleEndian.Uint64(w[8:]))
	switch code {
	case 1:
		b.fail(fmt.Errorf("vulkan: index %d out of range", detail))
	case 2:
		b.fail(fmt.Errorf("vulkan: %w", backends.ErrDivideByZero))
	default:
		b.fail(fmt.Errorf("vulkan: a shader reported error code %d (detail %d)", code, detail))
	}
	clear(w[:16])
}

// MemoryStats reports the caching allocator's counters.
func (b *Backend) MemoryStats() backends.MemoryStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.alloc.stats
}

// HostOps returns how many times each op ran on the host (the CPU backend)
// instead of in a shader, by op name: the ops this device still lacks.
func (b *Backend) HostOps() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int, len(b.hostOps))
	for k, v := range b.hostOps {
		out[k] = v
	}
	return out
}

var _ = unsafe.Pointer(nil)
var _ backends.Backend = (*Backend)(nil)

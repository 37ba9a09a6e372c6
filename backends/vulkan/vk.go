//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// This file binds the Vulkan calls the backend uses. The loader exports only
// vkGetInstanceProcAddr by contract; every other entry point is looked up
// through it (instance level) or through vkGetDeviceProcAddr (device level),
// so calls go straight to the driver. C structs are written as Go structs
// with explicit padding: on the 64-bit platforms purego supports, Go lays
// out uint32, uint64 and pointer fields exactly as C does.

// ErrNoVulkan is wrapped by every error caused by a missing Vulkan loader or
// a loader that lists no usable device.
var ErrNoVulkan = errors.New("no Vulkan")

// ErrDeviceLost is wrapped by the sticky error of a device that reported
// VK_ERROR_DEVICE_LOST: it keeps being reported, as the device cannot
// continue.
var ErrDeviceLost = errors.New("vulkan: device lost")

// vkResult is VkResult.
type vkResult int32

const (
	vkSuccess                 vkResult = 0
	vkNotReady                vkResult = 1
	vkTimeout                 vkResult = 2
	vkIncomplete              vkResult = 5
	vkErrorOutOfHostMemory    vkResult = -1
	vkErrorOutOfDeviceMemory  vkResult = -2
	vkErrorInitializationFail vkResult = -3
	vkErrorDeviceLost         vkResult = -4
	vkErrorFeatureNotPresent  vkResult = -8
	vkErrorIncompatibleDriver vkResult = -9
)

var resultNames = map[vkResult]string{
	vkNotReady: "VK_NOT_READY", vkTimeout: "VK_TIMEOUT", vkIncomplete: "VK_INCOMPLETE",
	vkErrorOutOfHostMemory: "VK_ERROR_OUT_OF_HOST_MEMORY", vkErrorOutOfDeviceMemory: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	vkErrorInitializationFail: "VK_ERROR_INITIALIZATION_FAILED", vkErrorDeviceLost: "VK_ERROR_DEVICE_LOST",
	-5: "VK_ERROR_MEMORY_MAP_FAILED", -6: "VK_ERROR_LAYER_NOT_PRESENT", -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
	vkErrorFeatureNotPresent: "VK_ERROR_FEATURE_NOT_PRESENT", vkErrorIncompatibleDriver: "VK_ERROR_INCOMPATIBLE_DRIVER",
	-10: "VK_ERROR_TOO_MANY_OBJECTS", -13: "VK_ERROR_UNKNOWN",
}

func (r vkResult) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// vkError is a failed Vulkan call.
type vkError struct {
	call string
	res  vkResult
}

func (e *vkError) Error() string { return fmt.Sprintf("vulkan: %s: %v", e.call, e.res) }

// Unwrap lets errors.Is find ErrDeviceLost and backends.ErrOutOfMemory.
func (e *vkError) Unwrap() error {
	switch e.res {
	case vkErrorDeviceLost:
		return ErrDeviceLost
	case vkErrorOutOfDeviceMemory, vkErrorOutOfHostMemory:
		return errOOM
	}
	return nil
}

// vkCheck turns a VkResult into an error naming call.
func vkCheck(call string, r vkResult) error {
	if r == vkSuccess {
		return nil
	}
	return &vkError{call, r}
}

// Structure types used below.
const (
	stApplicationInfo           = 0
	stInstanceCreateInfo        = 1
	stDeviceQueueCreateInfo     = 2
	stDeviceCreateInfo          = 3
	stSubmitInfo                = 4
	stMemoryAllocateInfo        = 5
	stSemaphoreCreateInfo       = 9
	stBufferCreateInfo          = 12
	stShaderModuleCreateInfo    = 16
	stPipelineShaderStageCreate = 18
	stComputePipelineCreateInfo = 29
	stPipelineLayoutCreateInfo  = 30
	stCommandPoolCreateInfo     = 39
	stCommandBufferAllocateInfo = 40
	stCommandBufferBeginInfo    = 42
	stMemoryBarrier             = 46
	stVulkan11Features          = 49
	stVulkan12Features          = 51
	stMemoryAllocateFlagsInfo   = 1000060000
	stFeatures2                 = 1000059000
	stProperties2               = 1000059001
	stDriverProperties          = 1000196000
	stSubgroupProperties        = 1000094000
	stSemaphoreTypeCreateInfo   = 1000207002
	stTimelineSubmitInfo        = 1000207003
	stSemaphoreWaitInfo         = 1000207004
	stBufferDeviceAddressInfo   = 1000244001
)

// Flags and enums used below.
const (
	apiVersion12 = 1<<22 | 2<<12

	queueCompute = 0x2

	memDeviceLocal  = 0x1
	memHostVisible  = 0x2
	memHostCoherent = 0x4
	memHostCached   = 0x8
	heapDeviceLocal = 0x1

	bufferUsageTransferSrc   = 0x1
	bufferUsageTransferDst   = 0x2
	bufferUsageStorage       = 0x20
	bufferUsageDeviceAddress = 0x20000

	memAllocateDeviceAddress = 0x2

	stageCompute         = 0x20 // VK_SHADER_STAGE_COMPUTE_BIT
	pipeStageCompute     = 0x800
	pipeStageTransfer    = 0x1000
	pipeStageHost        = 0x4000
	pipeStageAllCommands = 0x10000

	accessShaderRead    = 0x20
	accessShaderWrite   = 0x40
	accessTransferRead  = 0x800
	accessTransferWrite = 0x1000
	accessHostRead      = 0x2000
	accessHostWrite     = 0x4000

	bindPointCompute = 1

	cmdPoolResetCommandBuffer = 0x2
	cmdBufferOneTimeSubmit    = 0x1

	semaphoreTypeTimeline = 1
)

// Physical device types, as VkPhysicalDeviceType.
const (
	deviceTypeOther      = 0
	deviceTypeIntegrated = 1
	deviceTypeDiscrete   = 2
	deviceTypeVirtual    = 3
	deviceTypeCPU        = 4
)

type vkApplicationInfo struct {
	sType            uint32
	_                [4]byte
	_                unsafe.Pointer
	pApplicationName *byte
	_                uint32
	_                [4]byte
	pEngineName      *byte
	_                uint32
	apiVersion       uint32
}

type vkInstanceCreateInfo struct {
	sType            uint32
	_                [4]byte
	_                unsafe.Pointer
	_                uint32
	_                [4]byte
	pApplicationInfo *vkApplicationInfo
	_                uint32
	_                [4]byte
	_                unsafe.Pointer
	_                uint32
	_                [4]byte
	_                unsafe.Pointer
}

// vkPhysicalDeviceProperties is the start of VkPhysicalDeviceProperties
// (824 bytes); the rest (limits, sparse properties) is kept as raw bytes.
type vkPhysicalDeviceProperties struct {
	apiVersion uint32
	_          uint32
	vendorID   uint32
	_          uint32
	deviceType uint32
	deviceName [256]byte
	_          [16]byte
	_          [824 - 20 - 256 - 16]byte
}

type vkPhysicalDeviceProperties2 struct {
	sType      uint32
	_          [4]byte
	pNext      unsafe.Pointer
	properties vkPhysicalDeviceProperties
}

type vkPhysicalDeviceDriverProperties struct {
	sType      uint32
	_          [4]byte
	_          unsafe.Pointer
	_          uint32
	driverName [256]byte
	driverInfo [256]byte
	_          [4]uint8
}

type vkPhysicalDeviceSubgroupProperties struct {
	sType               uint32
	_                   [4]byte
	pNext               unsafe.Pointer
	subgroupSize        uint32
	supportedStages     uint32
	supportedOperations uint32
	_                   uint32 // quadOperationsInAllStages
}

type vkMemoryType struct {
	propertyFlags uint32
	_             uint32 // heapIndex
}

type vkMemoryHeap struct {
	size  uint64
	flags uint32
	_     [4]byte
}

type vkPhysicalDeviceMemoryProperties struct {
	memoryTypeCount uint32
	memoryTypes     [32]vkMemoryType
	memoryHeapCount uint32
	memoryHeaps     [16]vkMemoryHeap
}

type vkQueueFamilyProperties struct {
	queueFlags uint32
	_          [2]uint32 // queueCount, timestampValidBits
	_          [3]uint32
}

// Indices into VkPhysicalDeviceFeatures (55 VkBool32s).
const (
	featShaderFloat64 = 39
	featShaderInt64   = 40
	featShaderInt16   = 41
)

type vkPhysicalDeviceFeatures2 struct {
	sType    uint32
	_        [4]byte
	pNext    unsafe.Pointer
	features [55]uint32
	_        [4]byte
}

// Indices into VkPhysicalDeviceVulkan11Features after pNext (12 VkBool32s).
const feat11StorageBuffer16 = 0

type vkPhysicalDeviceVulkan11Features struct {
	sType uint32
	_     [4]byte
	_     unsafe.Pointer
	f     [12]uint32
}

// Indices into VkPhysicalDeviceVulkan12Features after pNext (47 VkBool32s).
const (
	feat12StorageBuffer8   = 2
	feat12ShaderFloat16    = 7
	feat12ShaderInt8       = 8
	feat12Timeline         = 37
	feat12BufferDeviceAddr = 38
)

type vkPhysicalDeviceVulkan12Features struct {
	sType uint32
	_     [4]byte
	pNext unsafe.Pointer
	f     [47]uint32
	_     [4]byte
}

type vkDeviceQueueCreateInfo struct {
	sType            uint32
	_                [4]byte
	_                unsafe.Pointer
	_                uint32
	queueFamilyIndex uint32
	queueCount       uint32
	_                [4]byte
	pQueuePriorities *float32
}

type vkDeviceCreateInfo struct {
	sType                uint32
	_                    [4]byte
	pNext                unsafe.Pointer
	_                    uint32
	queueCreateInfoCount uint32
	pQueueCreateInfos    *vkDeviceQueueCreateInfo
	_                    uint32
	_                    [4]byte
	_                    unsafe.Pointer
	_                    uint32
	_                    [4]byte
	_                    unsafe.Pointer
	_                    unsafe.Pointer
}

type vkBufferCreateInfo struct {
	sType uint32
	_     [4]byte
	_     unsafe.Pointer
	_     uint32
	_     [4]byte
	size  uint64
	usage uint32
	_     uint32
	_     uint32
	_     [4]byte
	_     unsafe.Pointer
}

type vkMemoryRequirements struct {
	size           uint64
	_              uint64 // alignment
	memoryTypeBits uint32
	_              [4]byte
}

type vkMemoryAllocateInfo struct {
	sType           uint32
	_               [4]byte
	pNext           unsafe.Pointer
	allocationSize  uint64
	memoryTypeIndex uint32
	_               [4]byte
}

type vkMemoryAllocateFlagsInfo struct {
	sType uint32
	_     [4]byte
	_     unsafe.Pointer
	flags uint32
	_     uint32
}

type vkBufferDeviceAddressInfo struct {
	sType  uint32
	_      [4]byte
	_      unsafe.Pointer
	buffer uint64
}

type vkShaderModuleCreateInfo struct {
	sType    uint32
	_        [4]byte
	_        unsafe.Pointer
	_        uint32
	_        [4]byte
	codeSize uintptr
	pCode    *byte
}

type vkSpecializationMapEntry struct {
	constantID, offset uint32
	size               uintptr
}

type vkSpecializationInfo struct {
	mapEntryCount uint32
	_             [4]byte
	pMapEntries   *vkSpecializationMapEntry
	dataSize      uintptr
	pData         unsafe.Pointer
}

type vkPipelineShaderStageCreateInfo struct {
	sType               uint32
	_                   [4]byte
	_                   unsafe.Pointer
	_                   uint32
	stage               uint32
	module              uint64
	pName               *byte
	pSpecializationInfo *vkSpecializationInfo
}

type vkComputePipelineCreateInfo struct {
	sType             uint32
	_                 [4]byte
	_                 unsafe.Pointer
	_                 uint32
	_                 [4]byte
	stage             vkPipelineShaderStageCreateInfo
	layout            uint64
	_                 uint64
	basePipelineIndex int32
	_                 [4]byte
}

type vkPushConstantRange struct {
	stageFlags uint32
	_          uint32 // offset (always 0)
	size       uint32
}

type vkPipelineLayoutCreateInfo struct {
	sType                  uint32
	_                      [4]byte
	_                      unsafe.Pointer
	_                      uint32
	_                      uint32
	_                      unsafe.Pointer
	pushConstantRangeCount uint32
	_                      [4]byte
	pPushConstantRanges    *vkPushConstantRange
}

type vkCommandPoolCreateInfo struct {
	sType            uint32
	_                [4]byte
	_                unsafe.Pointer
	flags            uint32
	queueFamilyIndex uint32
}

type vkCommandBufferAllocateInfo struct {
	sType              uint32
	_                  [4]byte
	_                  unsafe.Pointer
	commandPool        uint64
	_                  uint32
	commandBufferCount uint32
}

type vkCommandBufferBeginInfo struct {
	sType uint32
	_     [4]byte
	_     unsafe.Pointer
	flags uint32
	_     [4]byte
	_     unsafe.Pointer
}

type vkMemoryBarrier struct {
	sType         uint32
	_             [4]byte
	_             unsafe.Pointer
	srcAccessMask uint32
	dstAccessMask uint32
}

type vkBufferCopy struct{ srcOffset, dstOffset, size uint64 }

type vkSemaphoreTypeCreateInfo struct {
	sType         uint32
	_             [4]byte
	_             unsafe.Pointer
	semaphoreType uint32
	_             [4]byte
	_             uint64
}

type vkSemaphoreCreateInfo struct {
	sType uint32
	_     [4]byte
	pNext unsafe.Pointer
	_     uint32
	_     [4]byte
}

type vkTimelineSemaphoreSubmitInfo struct {
	sType                     uint32
	_                         [4]byte
	_                         unsafe.Pointer
	_                         uint32
	_                         [4]byte
	_                         *uint64
	signalSemaphoreValueCount uint32
	_                         [4]byte
	pSignalSemaphoreValues    *uint64
}

type vkSubmitInfo struct {
	sType                uint32
	_                    [4]byte
	pNext                unsafe.Pointer
	_                    uint32
	_                    [4]byte
	_                    unsafe.Pointer
	_                    unsafe.Pointer
	commandBufferCount   uint32
	_                    [4]byte
	pCommandBuffers      *uintptr
	signalSemaphoreCount uint32
	_                    [4]byte
	pSignalSemaphores    *uint64
}

type vkSemaphoreWaitInfo struct {
	sType          uint32
	_              [4]byte
	_              unsafe.Pointer
	_              uint32
	semaphoreCount uint32
	pSemaphores    *uint64
	pValues        *uint64
}

// instanceFuncs are the instance-level entry points.
type instanceFuncs struct {
	vkEnumeratePhysicalDevices               func(inst uintptr, n *uint32, devs *uintptr) vkResult
	vkGetPhysicalDeviceProperties2           func(pd uintptr, p *vkPhysicalDeviceProperties2)
	vkGetPhysicalDeviceMemoryProperties      func(pd uintptr, p *vkPhysicalDeviceMemoryProperties)
	vkGetPhysicalDeviceQueueFamilyProperties func(pd uintptr, n *uint32, p *vkQueueFamilyProperties)
	vkGetPhysicalDeviceFeatures2             func(pd uintptr, p *vkPhysicalDeviceFeatures2)
	vkCreateDevice                           func(pd uintptr, ci *vkDeviceCreateInfo, alloc unsafe.Pointer, dev *uintptr) vkResult
	vkGetDeviceProcAddr                      func(dev uintptr, name *byte) uintptr
}

// deviceFuncs are the device-level entry points of one VkDevice.
type deviceFuncs struct {
	vkGetDeviceQueue              func(dev uintptr, family, index uint32, q *uintptr)
	vkCreateBuffer                func(dev uintptr, ci *vkBufferCreateInfo, alloc unsafe.Pointer, buf *uint64) vkResult
	vkDestroyBuffer               func(dev uintptr, buf uint64, alloc unsafe.Pointer)
	vkGetBufferMemoryRequirements func(dev uintptr, buf uint64, req *vkMemoryRequirements)
	vkAllocateMemory              func(dev uintptr, ai *vkMemoryAllocateInfo, alloc unsafe.Pointer, mem *uint64) vkResult
	vkFreeMemory                  func(dev uintptr, mem uint64, alloc unsafe.Pointer)
	vkBindBufferMemory            func(dev uintptr, buf, mem, off uint64) vkResult
	vkMapMemory                   func(dev uintptr, mem, off, size uint64, flags uint32, p *unsafe.Pointer) vkResult
	vkGetBufferDeviceAddress      func(dev uintptr, info *vkBufferDeviceAddressInfo) uint64
	vkCreateShaderModule          func(dev uintptr, ci *vkShaderModuleCreateInfo, alloc unsafe.Pointer, m *uint64) vkResult
	vkCreatePipelineLayout        func(dev uintptr, ci *vkPipelineLayoutCreateInfo, alloc unsafe.Pointer, l *uint64) vkResult
	vkCreateComputePipelines      func(dev uintptr, cache uint64, n uint32, ci *vkComputePipelineCreateInfo, alloc unsafe.Pointer, p *uint64) vkResult
	vkCreateCommandPool           func(dev uintptr, ci *vkCommandPoolCreateInfo, alloc unsafe.Pointer, pool *uint64) vkResult
	vkAllocateCommandBuffers      func(dev uintptr, ai *vkCommandBufferAllocateInfo, cb *uintptr) vkResult
	vkBeginCommandBuffer          func(cb uintptr, bi *vkCommandBufferBeginInfo) vkResult
	vkEndCommandBuffer            func(cb uintptr) vkResult
	vkResetCommandBuffer          func(cb uintptr, flags uint32) vkResult
	vkCmdBindPipeline             func(cb uintptr, bind uint32, p uint64)
	vkCmdPushConstants            func(cb uintptr, layout uint64, stages, off, size uint32, vals unsafe.Pointer)
	vkCmdDispatch                 func(cb uintptr, x, y, z uint32)
	vkCmdPipelineBarrier          func(cb uintptr, src, dst, dep uint32, nm uint32, mb *vkMemoryBarrier, nb uint32, bb unsafe.Pointer, ni uint32, ib unsafe.Pointer)
	vkCmdCopyBuffer               func(cb uintptr, src, dst uint64, n uint32, r *vkBufferCopy)
	vkCreateSemaphore             func(dev uintptr, ci *vkSemaphoreCreateInfo, alloc unsafe.Pointer, s *uint64) vkResult
	vkGetSemaphoreCounterValue    func(dev uintptr, s uint64, v *uint64) vkResult
	vkWaitSemaphores              func(dev uintptr, wi *vkSemaphoreWaitInfo, timeout uint64) vkResult
	vkQueueSubmit                 func(q uintptr, n uint32, si *vkSubmitInfo, fence uint64) vkResult
	vkDeviceWaitIdle              func(dev uintptr) vkResult
	vkDestroyPipeline             func(dev uintptr, p uint64, alloc unsafe.Pointer)
	vkDestroyShaderModule         func(dev uintptr, m uint64, alloc unsafe.Pointer)
	vkDestroyPipelineLayout       func(dev uintptr, l uint64, alloc unsafe.Pointer)
	vkDestroyCommandPool          func(dev uintptr, pool uint64, alloc unsafe.Pointer)
	vkDestroySemaphore            func(dev uintptr, s uint64, alloc unsafe.Pointer)
	vkDestroyDevice               func(dev uintptr, alloc unsafe.Pointer)
}

// cstr returns a NUL-terminated copy of s.
func cstr(s string) *byte {
	b := append([]byte(s), 0)
	return &b[0]
}

// gostr converts a NUL-terminated C char array to a string.
func gostr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// vulkanLibrary is the loaded loader and its instance.
type vulkanLibrary struct {
	handle   uintptr
	getProc  func(inst uintptr, name *byte) uintptr
	instance uintptr
	fn       instanceFuncs
	physical []uintptr
}

var (
	libOnce sync.Once
	lib     *vulkanLibrary
	libErr  error
)

// libraryNames are the loader's file names, most preferred first;
// KILN_VULKAN_LIBRARY, when set, is tried first.
func libraryNames() []string {
	var names []string
	if p := os.Getenv("KILN_VULKAN_LIBRARY"); p != "" {
		names = append(names, p)
	}
	if runtime.GOOS == "darwin" {
		return append(names, "libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib")
	}
	return append(names, "libvulkan.so.1", "libvulkan.so")
}

// loadVulkan opens the loader and creates the process's instance once.
func loadVulkan() (*vulkanLibrary, error) {
	libOnce.Do(func() { lib, libErr = openLibrary() })
	return lib, libErr
}

func openLibrary() (*vulkanLibrary, error) {
	l := &vulkanLibrary{}
	var last error
	names := libraryNames()
	for _, name := range names {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			l.handle = h
			break
		}
		last = err
	}
	if l.handle == 0 {
		return nil, fmt.Errorf("%w: cannot load the Vulkan loader (tried %v): %v; to fix: install libvulkan1 and a "+
			"Vulkan driver (apt-get install libvulkan1 mesa-vulkan-drivers for Mesa's drivers and lavapipe)", ErrNoVulkan, names, last)
	}
	sym, err := purego.Dlsym(l.handle, "vkGetInstanceProcAddr")
	if err != nil {
		return nil, fmt.Errorf("%w: the Vulkan loader has no vkGetInstanceProcAddr: %v", ErrNoVulkan, err)
	}
	purego.RegisterFunc(&l.getProc, sym)
	var createInstance func(ci *vkInstanceCreateInfo, alloc unsafe.Pointer, inst *uintptr) vkResult
	if p := l.getProc(0, cstr("vkCreateInstance")); p != 0 {
		purego.RegisterFunc(&createInstance, p)
	} else {
		return nil, fmt.Errorf("%w: the Vulkan loader has no vkCreateInstance", ErrNoVulkan)
	}
	app := &vkApplicationInfo{sType: stApplicationInfo, pApplicationName: cstr("kiln"), pEngineName: cstr("kiln"),
		apiVersion: apiVersion12}
	ci := &vkInstanceCreateInfo{sType: stInstanceCreateInfo, pApplicationInfo: app}
	r := createInstance(ci, nil, &l.instance)
	runtime.KeepAlive(ci)
	runtime.KeepAlive(app)
	if r != vkSuccess {
		return nil, fmt.Errorf("%w: vkCreateInstance (Vulkan 1.2): %v (no Vulkan driver installed? "+
			"apt-get install mesa-vulkan-drivers)", ErrNoVulkan, r)
	}
	if err := bindProcs(func(name string) uintptr { return l.getProc(l.instance, cstr(name)) }, &l.fn); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoVulkan, err)
	}
	var n uint32
	if r := l.fn.vkEnumeratePhysicalDevices(l.instance, &n, nil); r != vkSuccess {
		return nil, fmt.Errorf("%w: vkEnumeratePhysicalDevices: %v", ErrNoVulkan, r)
	}
	if n > 0 {
		l.physical = make([]uintptr, n)
		if r := l.fn.vkEnumeratePhysicalDevices(l.instance, &n, &l.physical[0]); r != vkSuccess && r != vkIncomplete {
			return nil, fmt.Errorf("%w: vkEnumeratePhysicalDevices: %v", ErrNoVulkan, r)
		}
		l.physical = l.physical[:n]
	}
	return l, nil
}

// bindProcs fills every function field of the struct fns points to with the
// entry point of the same name that lookup returns.
func bindProcs(lookup func(name string) uintptr, fns any) error {
	v := reflect.ValueOf(fns).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Func {
			continue
		}
		p := lookup(f.Name)
		if p == 0 {
			return fmt.Errorf("the driver does not provide %s", f.Name)
		}
		ptr := reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr())).Interface()
		purego.RegisterFunc(ptr, p)
	}
	return nil
}

//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// physicalDevice is what the backend knows of one VkPhysicalDevice.
type physicalDevice struct {
	handle     uintptr
	name       string
	vendorID   uint32
	deviceType uint32
	apiVersion uint32
	driver     string // driver name and version, as the driver reports them
	heapBytes  int64  // the largest device-local heap
	mem        vkPhysicalDeviceMemoryProperties
	family     int // a queue family with compute, or -1
	features   deviceFeatures
	subgroup   subgroupInfo
}

// subgroupInfo is what the device reports of its subgroups (Vulkan 1.1's
// VkPhysicalDeviceSubgroupProperties).
type subgroupInfo struct {
	size       uint32 // invocations per subgroup (the default; a device may vary it)
	compute    bool   // subgroup operations are supported in compute shaders
	operations uint32 // VkSubgroupFeatureFlags
}

// Subgroup operation bits (VkSubgroupFeatureFlagBits).
const (
	subgroupBasic   = 0x1
	subgroupShuffle = 0x10
)

// gemmSubgroup reports whether the device can run matmul_subgroup.comp:
// basic and shuffle subgroup operations in compute shaders, with
// subgroups of 4 to 128 invocations (the shader's workgroup is 128 wide).
func (s subgroupInfo) gemmSubgroup() bool {
	const need = subgroupBasic | subgroupShuffle
	return s.compute && s.operations&need == need && s.size >= 4 && s.size <= 128 && 128%s.size == 0
}

// deviceFeatures are the features the backend asks about.
type deviceFeatures struct {
	bufferDeviceAddress, shaderInt64, storage8, storage16, timeline bool
	float64, int16, int8                                            bool
}

// missing names the first required feature absent, or "".
func (f deviceFeatures) missing() string {
	switch {
	case !f.bufferDeviceAddress:
		return "bufferDeviceAddress"
	case !f.shaderInt64:
		return "shaderInt64"
	case !f.storage8:
		return "storageBuffer8BitAccess"
	case !f.storage16:
		return "storageBuffer16BitAccess"
	case !f.timeline:
		return "timelineSemaphore"
	}
	return ""
}

// software reports whether the device is a CPU implementation of Vulkan.
func (p *physicalDevice) software() bool { return p.deviceType == deviceTypeCPU }

// vendorName maps a PCI vendor ID (and, for CPU devices, the device type)
// to a vendor's name.
func vendorName(id uint32, deviceType uint32) string {
	if deviceType == deviceTypeCPU {
		return "Mesa (software)"
	}
	switch id {
	case 0x10DE:
		return "NVIDIA"
	case 0x1002, 0x1022:
		return "AMD"
	case 0x8086:
		return "Intel"
	case 0x106B:
		return "Apple"
	case 0x13B5:
		return "ARM"
	case 0x5143:
		return "Qualcomm"
	case 0x1010:
		return "Imagination"
	case 0x10005:
		return "Mesa"
	case 0x1AE0:
		return "Google"
	}
	return fmt.Sprintf("vendor 0x%04x", id)
}

var deviceTypeNames = map[uint32]string{deviceTypeOther: "other", deviceTypeIntegrated: "integrated GPU",
	deviceTypeDiscrete: "discrete GPU", deviceTypeVirtual: "virtual GPU", deviceTypeCPU: "CPU (software)"}

// typeRank orders devices: discrete, integrated, virtual, other, CPU.
func typeRank(t uint32) int {
	switch t {
	case deviceTypeDiscrete:
		return 0
	case deviceTypeIntegrated:
		return 1
	case deviceTypeVirtual:
		return 2
	case deviceTypeCPU:
		return 4
	}
	return 3
}

// query reads a physical device's properties, memory, queues and features.
func (l *vulkanLibrary) query(h uintptr) *physicalDevice {
	p := &physicalDevice{handle: h, family: -1}
	drv := &vkPhysicalDeviceDriverProperties{sType: stDriverProperties}
	sg := &vkPhysicalDeviceSubgroupProperties{sType: stSubgroupProperties}
	props := &vkPhysicalDeviceProperties2{sType: stProperties2}
	if apiOf(l, h) >= apiVersion12 {
		props.pNext, sg.pNext = ptrOf(sg), ptrOf(drv)
	}
	l.fn.vkGetPhysicalDeviceProperties2(h, props)
	runtime.KeepAlive(drv)
	runtime.KeepAlive(sg)
	p.subgroup = subgroupInfo{size: sg.subgroupSize, compute: sg.supportedStages&stageCompute != 0,
		operations: sg.supportedOperations}
	pr := &props.properties
	p.name = gostr(pr.deviceName[:])
	p.vendorID, p.deviceType, p.apiVersion = pr.vendorID, pr.deviceType, pr.apiVersion
	p.driver = fmt.Sprintf("Vulkan %d.%d.%d", pr.apiVersion>>22, pr.apiVersion>>12&0x3FF, pr.apiVersion&0xFFF)
	if name := gostr(drv.driverName[:]); name != "" {
		p.driver += ", " + name + " " + gostr(drv.driverInfo[:])
	}
	l.fn.vkGetPhysicalDeviceMemoryProperties(h, &p.mem)
	for i := range p.mem.memoryHeapCount {
		hp := p.mem.memoryHeaps[i]
		if hp.flags&heapDeviceLocal != 0 && int64(hp.size) > p.heapBytes {
			p.heapBytes = int64(hp.size)
		}
	}
	var nf uint32
	l.fn.vkGetPhysicalDeviceQueueFamilyProperties(h, &nf, nil)
	if nf > 0 {
		fams := make([]vkQueueFamilyProperties, nf)
		l.fn.vkGetPhysicalDeviceQueueFamilyProperties(h, &nf, &fams[0])
		// Prefer a compute-only family (an async compute queue), else any with compute.
		for i, f := range fams[:nf] {
			if f.queueFlags&queueCompute != 0 && (p.family < 0 || f.queueFlags&0x1 == 0) {
				p.family = i
			}
		}
	}
	if p.apiVersion >= apiVersion12 {
		f11 := &vkPhysicalDeviceVulkan11Features{sType: stVulkan11Features}
		f12 := &vkPhysicalDeviceVulkan12Features{sType: stVulkan12Features, pNext: ptrOf(f11)}
		f2 := &vkPhysicalDeviceFeatures2{sType: stFeatures2, pNext: ptrOf(f12)}
		l.fn.vkGetPhysicalDeviceFeatures2(h, f2)
		runtime.KeepAlive(f11)
		runtime.KeepAlive(f12)
		p.features = deviceFeatures{
			bufferDeviceAddress: f12.f[feat12BufferDeviceAddr] != 0, shaderInt64: f2.features[featShaderInt64] != 0,
			storage8: f12.f[feat12StorageBuffer8] != 0, storage16: f11.f[feat11StorageBuffer16] != 0,
			timeline: f12.f[feat12Timeline] != 0, float64: f2.features[featShaderFloat64] != 0,
			int16: f2.features[featShaderInt16] != 0, int8: f12.f[feat12ShaderInt8] != 0,
		}
	}
	return p
}

// apiOf returns a physical device's Vulkan version, read with the core 1.0
// properties query so that pre-1.1 drivers are not handed a pNext chain.
func apiOf(l *vulkanLibrary, h uintptr) uint32 {
	props := &vkPhysicalDeviceProperties2{sType: stProperties2}
	l.fn.vkGetPhysicalDeviceProperties2(h, props)
	return props.properties.apiVersion
}

var (
	sortedOnce sync.Once
	sorted     []*physicalDevice
)

// physicalDevices lists the devices in the backend's order: discrete,
// integrated, virtual, other, CPU; ties keep the loader's order.
func physicalDevices() ([]*physicalDevice, error) {
	l, err := loadVulkan()
	if err != nil {
		return nil, err
	}
	sortedOnce.Do(func() {
		for _, h := range l.physical {
			sorted = append(sorted, l.query(h))
		}
		sort.SliceStable(sorted, func(i, j int) bool { return typeRank(sorted[i].deviceType) < typeRank(sorted[j].deviceType) })
	})
	return sorted, nil
}

// info describes device i as backends.DeviceInfo.
func (p *physicalDevice) info(i int) backends.DeviceInfo {
	d := backends.DeviceInfo{Kind: "vulkan", Index: i, Name: p.name, MemoryBytes: p.heapBytes,
		Vendor: vendorName(p.vendorID, p.deviceType), Software: p.software()}
	d.Detail = deviceTypeNames[p.deviceType] + ", " + p.driver
	if m := p.features.missing(); m != "" {
		d.Detail += ", unusable: lacks " + m
	} else if p.family < 0 {
		d.Detail += ", unusable: no compute queue"
	}
	if !p.features.float64 {
		d.Detail += ", no shaderFloat64 (float64 kernels run on the host)"
	}
	return d
}

// Devices lists every Vulkan device, discrete GPUs first and software
// devices (lavapipe) last, with Software set. It never fails: without a
// Vulkan loader or driver it returns an empty list.
func Devices() []backends.DeviceInfo {
	ps, err := physicalDevices()
	if err != nil {
		return nil
	}
	out := make([]backends.DeviceInfo, len(ps))
	for i, p := range ps {
		out[i] = p.info(i)
	}
	return out
}

// ptrOf returns p as an unsafe.Pointer, for pNext chains. The caller keeps
// the pointee alive across the Vulkan call with runtime.KeepAlive.
func ptrOf[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

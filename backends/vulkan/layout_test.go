//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"testing"
	"unsafe"
)

// TestStructLayouts checks the Go mirrors of Vulkan's C structs against
// sizeof in C (vulkan_core.h of Vulkan 1.3.239 on a 64-bit platform,
// printed by a C program): a wrong padding would corrupt every call.
func TestStructLayouts(t *testing.T) {
	for _, c := range []struct {
		name    string
		got, in uintptr
	}{
		{"VkApplicationInfo", unsafe.Sizeof(vkApplicationInfo{}), 48},
		{"VkInstanceCreateInfo", unsafe.Sizeof(vkInstanceCreateInfo{}), 64},
		{"VkPhysicalDeviceProperties", unsafe.Sizeof(vkPhysicalDeviceProperties{}), 824},
		{"VkPhysicalDeviceProperties2", unsafe.Sizeof(vkPhysicalDeviceProperties2{}), 840},
		{"VkPhysicalDeviceDriverProperties", unsafe.Sizeof(vkPhysicalDeviceDriverProperties{}), 536},
		{"VkPhysicalDeviceSubgroupProperties", unsafe.Sizeof(vkPhysicalDeviceSubgroupProperties{}), 32},
		{"VkPhysicalDeviceMemoryProperties", unsafe.Sizeof(vkPhysicalDeviceMemoryProperties{}), 520},
		{"VkPhysicalDeviceMemoryProperties.memoryHeaps", unsafe.Offsetof(vkPhysicalDeviceMemoryProperties{}.memoryHeaps), 264},
		{"VkQueueFamilyProperties", unsafe.Sizeof(vkQueueFamilyProperties{}), 24},
		{"VkPhysicalDeviceFeatures2", unsafe.Sizeof(vkPhysicalDeviceFeatures2{}), 240},
		{"VkPhysicalDeviceVulkan11Features", unsafe.Sizeof(vkPhysicalDeviceVulkan11Features{}), 64},
		{"VkPhysicalDeviceVulkan12Features", unsafe.Sizeof(vkPhysicalDeviceVulkan12Features{}), 208},
		{"VkDeviceQueueCreateInfo", unsafe.Sizeof(vkDeviceQueueCreateInfo{}), 40},
		{"VkDeviceCreateInfo", unsafe.Sizeof(vkDeviceCreateInfo{}), 72},
		{"VkBufferCreateInfo", unsafe.Sizeof(vkBufferCreateInfo{}), 56},
		{"VkMemoryRequirements", unsafe.Sizeof(vkMemoryRequirements{}), 24},
		{"VkMemoryAllocateInfo", unsafe.Sizeof(vkMemoryAllocateInfo{}), 32},
		{"VkMemoryAllocateFlagsInfo", unsafe.Sizeof(vkMemoryAllocateFlagsInfo{}), 24},
		{"VkBufferDeviceAddressInfo", unsafe.Sizeof(vkBufferDeviceAddressInfo{}), 24},
		{"VkShaderModuleCreateInfo", unsafe.Sizeof(vkShaderModuleCreateInfo{}), 40},
		{"VkSpecializationMapEntry", unsafe.Sizeof(vkSpecializationMapEntry{}), 16},
		{"VkSpecializationInfo", unsafe.Sizeof(vkSpecializationInfo{}), 32},
		{"VkPipelineShaderStageCreateInfo", unsafe.Sizeof(vkPipelineShaderStageCreateInfo{}), 48},
		{"VkComputePipelineCreateInfo", unsafe.Sizeof(vkComputePipelineCreateInfo{}), 96},
		{"VkPushConstantRange", unsafe.Sizeof(vkPushConstantRange{}), 12},
		{"VkPipelineLayoutCreateInfo", unsafe.Sizeof(vkPipelineLayoutCreateInfo{}), 48},
		{"VkCommandPoolCreateInfo", unsafe.Sizeof(vkCommandPoolCreateInfo{}), 24},
		{"VkCommandBufferAllocateInfo", unsafe.Sizeof(vkCommandBufferAllocateInfo{}), 32},
		{"VkCommandBufferBeginInfo", unsafe.Sizeof(vkCommandBufferBeginInfo{}), 32},
		{"VkMemoryBarrier", unsafe.Sizeof(vkMemoryBarrier{}), 24},
		{"VkBufferCopy", unsafe.Sizeof(vkBufferCopy{}), 24},
		{"VkSemaphoreTypeCreateInfo", unsafe.Sizeof(vkSemaphoreTypeCreateInfo{}), 32},
		{"VkSemaphoreCreateInfo", unsafe.Sizeof(vkSemaphoreCreateInfo{}), 24},
		{"VkTimelineSemaphoreSubmitInfo", unsafe.Sizeof(vkTimelineSemaphoreSubmitInfo{}), 48},
		{"VkSubmitInfo", unsafe.Sizeof(vkSubmitInfo{}), 72},
		{"VkSemaphoreWaitInfo", unsafe.Sizeof(vkSemaphoreWaitInfo{}), 40},
	} {
		if c.got != c.in {
			t.Errorf("%s: Go mirror is %d bytes, C's is %d", c.name, c.got, c.in)
		}
	}
}

//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"embed"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

//go:embed spv/*.spv
var spirv embed.FS

// module returns the shader module of spv/name.spv, creating it once.
// Caller holds b.mu.
func (b *Backend) module(name string) (uint64, error) {
	if m, ok := b.modules[name]; ok {
		return m, nil
	}
	code, err := spirv.ReadFile("spv/" + name + ".spv")
	if err != nil {
		return 0, fmt.Errorf("vulkan: no shader %q (spv/%s.spv is not embedded): %w", name, name, err)
	}
	if len(code)%4 != 0 || len(code) < 20 || binary.LittleEndian.Uint32(code) != 0x07230203 {
		return 0, fmt.Errorf("vulkan: spv/%s.spv is not SPIR-V", name)
	}
	words := make([]uint32, len(code)/4) // 4-byte aligned, as Vulkan requires
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	ci := &vkShaderModuleCreateInfo{sType: stShaderModuleCreateInfo, codeSize: uintptr(len(code)),
		pCode: (*byte)(unsafe.Pointer(&words[0]))}
	var m uint64
	err = vkCheck("vkCreateShaderModule", b.fn.vkCreateShaderModule(b.dev, ci, nil, &m))
	runtime.KeepAlive(words)
	if err != nil {
		return 0, fmt.Errorf("vulkan: shader %s: %w", name, err)
	}
	b.modules[name] = m
	return m, nil
}

// pipeline returns the compute pipeline of shader name specialised by spec
// (constant_id i = spec[i]), creating and caching it on first use. Caller
// holds b.mu.
func (b *Backend) pipeline(name string, spec []int32) (uint64, error) {
	var key strings.Builder
	key.WriteString(name)
	for _, s := range spec {
		fmt.Fprintf(&key, ",%d", s)
	}
	if p, ok := b.pipelines[key.String()]; ok {
		return p, nil
	}
	m, err := b.module(name)
	if err != nil {
		return 0, err
	}
	var si *vkSpecializationInfo
	var entries []vkSpecializationMapEntry
	var data []int32
	if len(spec) > 0 {
		entries = make([]vkSpecializationMapEntry, len(spec))
		data = append([]int32(nil), spec...)
		for i := range spec {
			entries[i] = vkSpecializationMapEntry{constantID: uint32(i), offset: uint32(4 * i), size: 4}
		}
		si = &vkSpecializationInfo{mapEntryCount: uint32(len(spec)), pMapEntries: &entries[0],
			dataSize: uintptr(4 * len(spec)), pData: unsafe.Pointer(&data[0])}
	}
	entry := cstr("main")
	ci := &vkComputePipelineCreateInfo{sType: stComputePipelineCreateInfo, layout: b.layout, basePipelineIndex: -1,
		stage: vkPipelineShaderStageCreateInfo{sType: stPipelineShaderStageCreate, stage: stageCompute, module: m,
			pName: entry, pSpecializationInfo: si}}
	var p uint64
	r := b.fn.vkCreateComputePipelines(b.dev, 0, 1, ci, nil, &p)
	runtime.KeepAlive(ci)
	runtime.KeepAlive(si)
	runtime.KeepAlive(entries)
	runtime.KeepAlive(data)
	runtime.KeepAlive(entry)
	if err := vkCheck("vkCreateComputePipelines", r); err != nil {
		return 0, fmt.Errorf("vulkan: shader %s %v: %w", name, spec, err)
	}
	b.pipelines[key.String()] = p
	return p, nil
}

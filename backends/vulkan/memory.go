//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/sizeclass"
)

// errOOM lets a vkError for VK_ERROR_OUT_OF_*_MEMORY match
// backends.ErrOutOfMemory with errors.Is.
var errOOM = backends.ErrOutOfMemory

// Size classes: powers of two from 256 B to 1 MiB, then multiples of 2 MiB.
// minClass is the smallest block (internal/sizeclass gives the others).
const minClass = 256

// sizeClass rounds a request up to the size of the block that serves it.
func sizeClass(n int64) int64 { return sizeclass.Of(n, minClass) }

// block is one VkBuffer bound to its own VkDeviceMemory.
type block struct {
	buf     uint64
	mem     uint64
	size    int64          // bytes reserved (the size class)
	addr    uint64         // buffer device address of byte 0
	host    unsafe.Pointer // mapped memory, nil when the memory is not host-visible
	freedAt uint64         // timeline value whose completion makes a freed block reusable
}

// hostBytes returns the mapped memory of blk as a byte slice.
func (blk *block) hostBytes() []byte { return unsafe.Slice((*byte)(blk.host), blk.size) }

// stagingOnly makes device memory behave as on a discrete GPU (never
// mapped, so reads and writes go through staging copies) even where it is
// host-visible; tests set it to exercise that path on lavapipe.
var stagingOnly = false

// memoryKind selects a memory type for a block.
type memoryKind int

const (
	deviceMemory  memoryKind = iota // device-local preferred, mapped when also host-visible
	stagingMemory                   // host-visible and coherent (args, uploads, downloads, the error word)
)

// pickMemoryType returns the memory type index for kind among bits, or -1.
func (p *physicalDevice) pickMemoryType(bits uint32, kind memoryKind) int {
	score := func(flags uint32) int {
		switch kind {
		case stagingMemory:
			if flags&(memHostVisible|memHostCoherent) != memHostVisible|memHostCoherent {
				return -1
			}
			s := 1
			if flags&memHostCached != 0 {
				s += 2 // reads back fast
			}
			return s
		default:
			s := 1
			if flags&memDeviceLocal != 0 {
				s += 4
			}
			if flags&(memHostVisible|memHostCoherent) == memHostVisible|memHostCoherent {
				s++ // mapped directly: no staging copies
			}
			return s
		}
	}
	best, bestScore := -1, 0
	for i := range p.mem.memoryTypeCount {
		if bits&(1<<i) == 0 {
			continue
		}
		if s := score(p.mem.memoryTypes[i].propertyFlags); s > bestScore {
			best, bestScore = int(i), s
		}
	}
	return best
}

// newBlock creates a buffer of size bytes with its own memory. Caller holds b.mu.
func (b *Backend) newBlock(size int64, kind memoryKind) (*block, error) {
	blk := &block{size: size}
	ci := &vkBufferCreateInfo{sType: stBufferCreateInfo, size: uint64(size),
		usage: bufferUsageTransferSrc | bufferUsageTransferDst | bufferUsageStorage | bufferUsageDeviceAddress}
	if err := vkCheck("vkCreateBuffer", b.fn.vkCreateBuffer(b.dev, ci, nil, &blk.buf)); err != nil {
		return nil, err
	}
	var req vkMemoryRequirements
	b.fn.vkGetBufferMemoryRequirements(b.dev, blk.buf, &req)
	ti := b.pd.pickMemoryType(req.memoryTypeBits, kind)
	if ti < 0 {
		b.fn.vkDestroyBuffer(b.dev, blk.buf, nil)
		return nil, fmt.Errorf("vulkan: no memory type for a %d-byte buffer (type bits %#x)", size, req.memoryTypeBits)
	}
	flags := &vkMemoryAllocateFlagsInfo{sType: stMemoryAllocateFlagsInfo, flags: memAllocateDeviceAddress}
	ai := &vkMemoryAllocateInfo{sType: stMemoryAllocateInfo, pNext: ptrOf(flags), allocationSize: req.size, memoryTypeIndex: uint32(ti)}
	err := vkCheck("vkAllocateMemory", b.fn.vkAllocateMemory(b.dev, ai, nil, &blk.mem))
	runtime.KeepAlive(flags)
	if err != nil {
		b.fn.vkDestroyBuffer(b.dev, blk.buf, nil)
		return nil, err
	}
	if err := vkCheck("vkBindBufferMemory", b.fn.vkBindBufferMemory(b.dev, blk.buf, blk.mem, 0)); err != nil {
		b.destroyBlock(blk)
		return nil, err
	}
	if f := b.pd.mem.memoryTypes[ti].propertyFlags; f&(memHostVisible|memHostCoherent) == memHostVisible|memHostCoherent &&
		(kind == stagingMemory || !stagingOnly) {
		if err := vkCheck("vkMapMemory", b.fn.vkMapMemory(b.dev, blk.mem, 0, uint64(size), 0, &blk.host)); err != nil {
			b.destroyBlock(blk)
			return nil, err
		}
	}
	blk.addr = b.fn.vkGetBufferDeviceAddress(b.dev, &vkBufferDeviceAddressInfo{sType: stBufferDeviceAddressInfo, buffer: blk.buf})
	return blk, nil
}

// destroyBlock gives a block's buffer and memory back to the driver.
func (b *Backend) destroyBlock(blk *block) {
	b.fn.vkDestroyBuffer(b.dev, blk.buf, nil)
	b.fn.vkFreeMemory(b.dev, blk.mem, nil) // unmaps implicitly
}

// allocator is a caching allocator: freed blocks wait in per-class lists
// and are reused once the work queued before their Free has completed.
// All its methods run with b.mu held.
type allocator struct {
	free  map[int64][]*block
	live  map[*block]bool // blocks of the buffers Alloc returned and Free has not taken back
	stats backends.MemoryStats
}

// allocBlock returns a block of at least n bytes: a cached one whose last
// use has completed, else a new one; on an out-of-memory error it waits for
// the queued work, empties the cache and tries once more.
func (b *Backend) allocBlock(n int64) (*block, error) {
	class := sizeClass(n)
	a := &b.alloc
	if blk := b.cachedBlock(class); blk != nil {
		return blk, nil
	}
	blk, err := b.newBlock(class, deviceMemory)
	if err != nil && errors.Is(err, backends.ErrOutOfMemory) {
		b.waitIdle()
		if blk = b.cachedBlock(class); blk != nil {
			return blk, nil
		}
		b.emptyCache()
		blk, err = b.newBlock(class, deviceMemory)
	}
	if err != nil {
		return nil, fmt.Errorf("vulkan: alloc %d bytes on vulkan:%d: %w", n, b.index, err)
	}
	a.stats.ReservedBytes += class
	return blk, nil
}

// cachedBlock pops a reusable block of class, or returns nil.
func (b *Backend) cachedBlock(class int64) *block {
	list := b.alloc.free[class]
	if len(list) == 0 {
		return nil
	}
	done := b.completedValue()
	for i, blk := range list {
		if blk.freedAt <= done {
			list[i] = list[len(list)-1]
			b.alloc.free[class] = list[:len(list)-1]
			return blk
		}
	}
	return nil
}

// releaseBlock caches blk for reuse after the work queued so far.
func (b *Backend) releaseBlock(blk *block) {
	blk.freedAt = b.pendingValue()
	b.alloc.free[blk.size] = append(b.alloc.free[blk.size], blk)
}

// emptyCache destroys every cached block whose last use has completed.
func (b *Backend) emptyCache() {
	done := b.completedValue()
	for class, list := range b.alloc.free {
		keep := list[:0]
		for _, blk := range list {
			if blk.freedAt <= done {
				b.destroyBlock(blk)
				b.alloc.stats.ReservedBytes -= blk.size
			} else {
				keep = append(keep, blk)
			}
		}
		b.alloc.free[class] = keep
	}
}

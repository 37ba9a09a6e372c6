//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"errors"
	"fmt"
)

// ErrClosed is the error of every call on a Backend after Close.
var ErrClosed = errors.New("vulkan: device closed")

// Close waits for the work queued on the device, then gives everything the
// backend created back to the driver: its buffers (live ones included:
// their contents are lost), the cached and staging memory, pipelines,
// shader modules, the command pool, the timeline semaphore, and the
// VkDevice with its queue. It returns the error the queued work recorded,
// if any. Afterwards Open(index) creates a new device; every call on b
// fails with an error wrapping ErrClosed (Alloc, Read and Sync return it,
// kernels record it as the sticky error) instead of touching freed memory;
// a second Close returns nil. The process's Vulkan instance stays: it is
// shared by every device, owns no memory of theirs, and lets Devices keep
// listing them.
//
// Close must not race with other calls on b (it waits for those in
// progress, but a call that starts after it fails).
func (b *Backend) Close() error {
	openMu.Lock()
	defer openMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	var pending error
	if !b.lost() {
		b.waitIdle()
		b.checkErrWord()
	}
	pending = b.takeErr()
	b.fn.vkDeviceWaitIdle(b.dev) // a lost device returns at once: nothing it ran can still be running
	s := &b.stream
	batches := append(append([]*batch(nil), s.inFlight...), s.idle...)
	if s.cur != nil {
		batches = append(batches, s.cur)
	}
	for _, bt := range batches {
		for _, c := range bt.chunks {
			b.destroyBlock(c)
		}
	}
	for _, c := range s.chunks {
		b.destroyBlock(c)
	}
	b.stream = stream{}
	for _, list := range b.alloc.free {
		for _, blk := range list {
			b.destroyBlock(blk)
		}
	}
	for blk := range b.alloc.live {
		b.destroyBlock(blk)
	}
	b.alloc.free, b.alloc.live = map[int64][]*block{}, map[*block]bool{}
	b.alloc.stats.LiveBytes, b.alloc.stats.LiveBuffers, b.alloc.stats.ReservedBytes = 0, 0, 0
	b.destroyBlock(b.errWord)
	for _, p := range b.pipelines {
		b.fn.vkDestroyPipeline(b.dev, p, nil)
	}
	for _, m := range b.modules {
		b.fn.vkDestroyShaderModule(b.dev, m, nil)
	}
	b.pipelines, b.modules = map[string]uint64{}, map[string]uint64{}
	b.fn.vkDestroyCommandPool(b.dev, b.pool, nil) // frees the command buffers
	b.fn.vkDestroySemaphore(b.dev, b.sem, nil)
	b.fn.vkDestroyPipelineLayout(b.dev, b.layout, nil)
	b.fn.vkDestroyDevice(b.dev, nil)
	b.dev, b.queue = 0, 0
	b.closed = true
	b.errMu.Lock()
	b.err, b.fatal = fmt.Errorf("vulkan:%d: %w", b.index, ErrClosed), true
	b.errMu.Unlock()
	if opened[b.index] == b {
		delete(opened, b.index)
	}
	return pending
}

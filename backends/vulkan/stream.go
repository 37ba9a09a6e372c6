//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// Tuning of the command stream.
const (
	batchCommands = 128     // commands recorded before a batch is submitted
	chunkBytes    = 1 << 20 // size of an arena chunk (args and uploads)
	keepChunks    = 16      // idle arena chunks kept for reuse
)

// batch is one command buffer and the host-visible arena chunks its
// commands read. It is recorded, submitted (signalling value on the
// timeline semaphore) and recycled once that value is reached.
type batch struct {
	cb       uintptr
	value    uint64
	chunks   []*block
	off      int64 // bytes used in the last chunk
	commands int
}

// stream is the backend's queue of work; all of it is guarded by b.mu.
type stream struct {
	cur       *batch   // being recorded, nil when none
	inFlight  []*batch // submitted, oldest first
	idle      []*batch // recycled, ready to record
	chunks    []*block // idle arena chunks
	submitted uint64   // value signalled by the last submitted batch
	completed uint64   // last value seen completed
}

// argWriter packs a shader's arguments: 8-byte little-endian words written
// in order, so that a std430 block of 8-byte members reads them back.
type argWriter struct{ buf []byte }

// u64 appends an unsigned word.
func (w *argWriter) u64(x uint64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, x) }

// i64 appends a signed word.
func (w *argWriter) i64(x int64) { w.u64(uint64(x)) }

// f64 appends a double.
func (w *argWriter) f64(x float64) { w.u64(math.Float64bits(x)) }

// view appends v as common.glsl's View: the buffer's device address, the
// offset, the rank, eight extents (unused = 1) and eight strides (unused =
// 0), all in elements. A view the backend does not own writes address 0:
// callers check views with ok first.
func (w *argWriter) view(v backends.View) {
	var addr uint64
	if bb, isOurs := v.Buf.(*buffer); isOurs && bb.blk != nil {
		addr = bb.blk.addr
	}
	w.u64(addr)
	w.i64(int64(v.Offset))
	w.i64(int64(len(v.Shape)))
	for k := range maxRank {
		if k < len(v.Shape) {
			w.i64(int64(v.Shape[k]))
		} else {
			w.i64(1)
		}
	}
	for k := range maxRank {
		if k < len(v.Strides) {
			w.i64(int64(v.Strides[k]))
		} else {
			w.i64(0)
		}
	}
}

// groups1D returns the workgroup count for n elements of a 256-wide
// grid-stride shader (at least 1, at most 65535).
func groups1D(n int) [3]uint32 {
	g := (n + 255) / 256
	return [3]uint32{uint32(min(max(g, 1), 65535)), 1, 1}
}

// launch records one dispatch of shader name with spec constants spec
// (constant_id 0, 1, … in order) and the arguments w, after a barrier that
// orders it behind earlier commands. Failures (a missing shader, a lost
// device) become the sticky error.
func (b *Backend) launch(name string, spec []int32, w *argWriter, groups [3]uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost() {
		return
	}
	pipe, err := b.pipeline(name, spec)
	if err != nil {
		b.fail(err)
		return
	}
	args := w.buf
	if len(args) == 0 {
		args = make([]byte, 8)
	}
	bt := b.recording()
	if bt == nil {
		return
	}
	chunk, off := b.arena(bt, int64(len(args)))
	if chunk == nil {
		return
	}
	copy(chunk.hostBytes()[off:], args)
	b.barrier(bt)
	push := [2]uint64{chunk.addr + uint64(off), b.errWord.addr}
	b.fn.vkCmdBindPipeline(bt.cb, bindPointCompute, pipe)
	b.fn.vkCmdPushConstants(bt.cb, b.layout, stageCompute, 0, 16, unsafe.Pointer(&push[0]))
	b.fn.vkCmdDispatch(bt.cb, groups[0], groups[1], groups[2])
	runtime.KeepAlive(&push)
	b.endCommand(bt)
}

// recording returns the batch being recorded, starting one if needed.
func (b *Backend) recording() *batch {
	s := &b.stream
	if s.cur != nil {
		return s.cur
	}
	b.reclaim()
	var bt *batch
	if n := len(s.idle); n > 0 {
		bt, s.idle = s.idle[n-1], s.idle[:n-1]
	} else {
		bt = &batch{}
		ai := &vkCommandBufferAllocateInfo{sType: stCommandBufferAllocateInfo, commandPool: b.pool, commandBufferCount: 1}
		if err := vkCheck("vkAllocateCommandBuffers", b.fn.vkAllocateCommandBuffers(b.dev, ai, &bt.cb)); err != nil {
			b.fail(err)
			return nil
		}
	}
	bi := &vkCommandBufferBeginInfo{sType: stCommandBufferBeginInfo, flags: cmdBufferOneTimeSubmit}
	if err := vkCheck("vkBeginCommandBuffer", b.fn.vkBeginCommandBuffer(bt.cb, bi)); err != nil {
		b.fail(err)
		return nil
	}
	s.cur = bt
	return bt
}

// barrier makes the writes of earlier commands in bt visible to the next.
func (b *Backend) barrier(bt *batch) {
	if bt.commands == 0 {
		return // vkQueueSubmit orders batches; the last barrier of the previous one covers them
	}
	mb := &vkMemoryBarrier{sType: stMemoryBarrier,
		srcAccessMask: accessShaderWrite | accessTransferWrite,
		dstAccessMask: accessShaderRead | accessShaderWrite | accessTransferRead | accessTransferWrite}
	b.fn.vkCmdPipelineBarrier(bt.cb, pipeStageCompute|pipeStageTransfer, pipeStageCompute|pipeStageTransfer, 0, 1, mb, 0, nil, 0, nil)
	runtime.KeepAlive(mb)
}

// endCommand counts a recorded command and submits a full batch.
func (b *Backend) endCommand(bt *batch) {
	bt.commands++
	if bt.commands >= batchCommands {
		b.submit()
	}
}

// arena returns n bytes (16-byte aligned) of host-visible memory that lives
// until bt has completed: a chunk and the offset in it, or a nil chunk
// (with the sticky error recorded) when no memory is left.
func (b *Backend) arena(bt *batch, n int64) (*block, int64) {
	n = (n + 15) &^ 15
	if k := len(bt.chunks); k > 0 && bt.off+n <= bt.chunks[k-1].size {
		off := bt.off
		bt.off += n
		return bt.chunks[k-1], off
	}
	s := &b.stream
	var chunk *block
	for i, c := range s.chunks {
		if c.size >= n {
			chunk = c
			s.chunks = append(s.chunks[:i], s.chunks[i+1:]...)
			break
		}
	}
	if chunk == nil {
		var err error
		if chunk, err = b.newBlock(max(chunkBytes, sizeClass(n)), stagingMemory); err != nil {
			b.fail(fmt.Errorf("vulkan: staging memory for %d bytes: %w", n, err))
			return nil, 0
		}
	}
	bt.chunks = append(bt.chunks, chunk)
	bt.off = n
	return chunk, 0
}

// submit ends the batch being recorded and queues it, signalling the next
// timeline value.
func (b *Backend) submit() {
	s := &b.stream
	bt := s.cur
	if bt == nil {
		return
	}
	s.cur = nil
	// Make every write of the batch visible to the host once it completes.
	mb := &vkMemoryBarrier{sType: stMemoryBarrier, srcAccessMask: accessShaderWrite | accessTransferWrite, dstAccessMask: accessHostRead}
	b.fn.vkCmdPipelineBarrier(bt.cb, pipeStageAllCommands, pipeStageHost, 0, 1, mb, 0, nil, 0, nil)
	runtime.KeepAlive(mb)
	if err := vkCheck("vkEndCommandBuffer", b.fn.vkEndCommandBuffer(bt.cb)); err != nil {
		b.fail(err)
		b.recycle(bt)
		return
	}
	value := new(uint64)
	*value = s.submitted + 1
	ts := &vkTimelineSemaphoreSubmitInfo{sType: stTimelineSubmitInfo, signalSemaphoreValueCount: 1, pSignalSemaphoreValues: value}
	cb := new(uintptr)
	*cb = bt.cb
	sem := new(uint64)
	*sem = b.sem
	si := &vkSubmitInfo{sType: stSubmitInfo, pNext: ptrOf(ts), commandBufferCount: 1, pCommandBuffers: cb,
		signalSemaphoreCount: 1, pSignalSemaphores: sem}
	r := b.fn.vkQueueSubmit(b.queue, 1, si, 0)
	runtime.KeepAlive(ts)
	runtime.KeepAlive(value)
	runtime.KeepAlive(cb)
	runtime.KeepAlive(sem)
	if err := vkCheck("vkQueueSubmit", r); err != nil {
		b.fail(err)
		b.recycle(bt)
		return
	}
	bt.value = *value
	s.submitted = bt.value
	s.inFlight = append(s.inFlight, bt)
}

// recycle resets a batch's command buffer and returns its arena chunks.
func (b *Backend) recycle(bt *batch) {
	s := &b.stream
	for _, c := range bt.chunks {
		if len(s.chunks) < keepChunks && c.size == chunkBytes {
			s.chunks = append(s.chunks, c)
		} else {
			b.destroyBlock(c)
		}
	}
	bt.chunks, bt.off, bt.commands = bt.chunks[:0], 0, 0
	if err := vkCheck("vkResetCommandBuffer", b.fn.vkResetCommandBuffer(bt.cb, 0)); err != nil {
		b.fail(err)
		return
	}
	s.idle = append(s.idle, bt)
}

// completedValue polls the timeline semaphore.
func (b *Backend) completedValue() uint64 {
	s := &b.stream
	if s.completed == s.submitted {
		return s.completed
	}
	var v uint64
	if err := vkCheck("vkGetSemaphoreCounterValue", b.fn.vkGetSemaphoreCounterValue(b.dev, b.sem, &v)); err != nil {
		b.fail(err)
		return s.completed
	}
	s.completed = max(s.completed, v)
	return s.completed
}

// pendingValue is the timeline value at which the work queued so far (the
// batch being recorded included) will have completed.
func (b *Backend) pendingValue() uint64 {
	if b.stream.cur != nil {
		return b.stream.submitted + 1
	}
	return b.stream.submitted
}

// reclaim recycles the batches that have completed.
func (b *Backend) reclaim() {
	s := &b.stream
	done := b.completedValue()
	n := 0
	for _, bt := range s.inFlight {
		if bt.value > done {
			break
		}
		b.recycle(bt)
		n++
	}
	s.inFlight = append(s.inFlight[:0], s.inFlight[n:]...)
}

// waitIdle submits the batch being recorded and waits for all queued work.
// A lost device makes the wait return at once (the work will never finish).
func (b *Backend) waitIdle() {
	b.submit()
	s := &b.stream
	if s.completed < s.submitted && !b.lost() {
		sem, val := new(uint64), new(uint64)
		*sem, *val = b.sem, s.submitted
		wi := &vkSemaphoreWaitInfo{sType: stSemaphoreWaitInfo, semaphoreCount: 1, pSemaphores: sem, pValues: val}
		r := b.fn.vkWaitSemaphores(b.dev, wi, math.MaxUint64)
		runtime.KeepAlive(sem)
		runtime.KeepAlive(val)
		if err := vkCheck("vkWaitSemaphores", r); err != nil {
			b.fail(err)
		}
	}
	if b.lost() {
		return
	}
	b.reclaim()
}

// upload records a copy of src into blk at byte offset off, through the
// arena, ordered with the other commands.
func (b *Backend) upload(blk *block, off int64, src []byte) {
	if b.lost() {
		return
	}
	for len(src) > 0 {
		n := int64(min(len(src), chunkBytes))
		bt := b.recording()
		if bt == nil {
			return
		}
		chunk, coff := b.arena(bt, n)
		if chunk == nil {
			return
		}
		copy(chunk.hostBytes()[coff:], src[:n])
		b.barrier(bt)
		region := &vkBufferCopy{srcOffset: uint64(coff), dstOffset: uint64(off), size: uint64(n)}
		b.fn.vkCmdCopyBuffer(bt.cb, chunk.buf, blk.buf, 1, region)
		runtime.KeepAlive(region)
		b.endCommand(bt)
		src, off = src[n:], off+n
	}
}

// download copies len(dst) bytes at byte offset off of blk into dst. The
// stream must be idle; a block that is not host-visible goes through a
// staging copy.
func (b *Backend) download(blk *block, off int64, dst []byte) {
	if b.lost() {
		return
	}
	if blk.host != nil {
		copy(dst, blk.hostBytes()[off:])
		return
	}
	staging, err := b.newBlock(sizeClass(int64(len(dst))), stagingMemory)
	if err != nil {
		b.fail(err)
		return
	}
	defer b.destroyBlock(staging)
	bt := b.recording()
	if bt == nil {
		return
	}
	b.barrier(bt)
	region := &vkBufferCopy{srcOffset: uint64(off), size: uint64(len(dst))}
	b.fn.vkCmdCopyBuffer(bt.cb, blk.buf, staging.buf, 1, region)
	runtime.KeepAlive(region)
	bt.commands++
	b.waitIdle()
	if !b.lost() {
		copy(dst, staging.hostBytes())
	}
}

//go:build !kiln_nocuda

package cuda

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// The two methods below let another CUDA library (NCCL, in package dist)
// work on tensor memory in the backend's stream order, without this package
// knowing about it. They are the whole interop surface: a device address,
// and a turn on the device's thread with its stream.

// DevicePointer returns the device address (a CUdeviceptr) of buf's first
// byte and buf's size in bytes, for handing tensor memory to another CUDA
// library. Get buf with tensor.BufferOf; the address stays valid while the
// tensor owning it is live, so hold the tensor until the work using the
// address has finished (Sync). It fails when buf belongs to another device
// or has been freed.
func (b *Backend) DevicePointer(buf backends.Buffer) (uintptr, int64, error) {
	bb, ok := buf.(*buffer)
	if !ok || bb.owner != b {
		return 0, 0, fmt.Errorf("cuda: DevicePointer: buffer %T does not belong to device cuda:%d", buf, b.ordinal)
	}
	blk := bb.blk
	if blk == nil {
		return 0, 0, fmt.Errorf("cuda: DevicePointer: the buffer on cuda:%d was freed", b.ordinal)
	}
	return uintptr(blk.ptr), bb.bytes, nil
}

// Submit runs f on the device's thread, where the device's CUDA context is
// current, once every operation queued before the call has been handed to
// the device's stream, and waits for f to return. f receives that stream (a
// CUstream) to enqueue work with another library: that work runs after the
// operations queued before Submit and before those queued after it. Submit
// does not wait for the enqueued work to finish (Sync does) and returns f's
// error. f must not call b's methods: it runs on b's only thread, which
// would wait for itself.
func (b *Backend) Submit(f func(stream uintptr) error) error {
	var err error
	b.thread.call(func() { err = f(uintptr(b.stream)) })
	return err
}

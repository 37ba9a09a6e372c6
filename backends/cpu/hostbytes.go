package cpu

// HostBytes returns the buffer's memory. Package tensor looks for this
// method (an optional interface of buffers in host memory) to let code that
// reads or writes host memory in place, such as MPI through package dist,
// use a tensor's storage without copying it through Read and Write. The
// slice is valid until the buffer is freed; kernels run synchronously, so
// it holds every result once the kernel writing it has returned.
func (b *buffer) HostBytes() []byte { return b.bytes }

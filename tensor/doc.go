// Package tensor is Kiln's user-facing array type: one Tensor type whose
// rank, shape, dtype and device are run-time properties, with NumPy/PyTorch
// semantics (broadcasting, type promotion, strided views) and reverse-mode
// gradients switched on per device.
//
//	dev := tensor.CPU().Autodiff()
//	w := tensor.Randn(dev, 784, 10).RequireGrad()
//	loss := x.Matmul(w).Square().Mean()
//	grads := loss.Backward()
//	dw := w.Grad(grads)
//
// # Devices
//
// A Device picks where tensors live and which backend runs their kernels:
// CPU() (pure Go, always present), Cuda(i), ParseDevice("cuda:1"), or
// DefaultDevice(), which honours KILN_DEVICE (an unknown or absent device is
// an error, never a silent fallback) and otherwise picks the best detected
// device, saying why in DefaultDeviceReason. dev.Autodiff() is a view of a
// device that records a graph node for each op whose inputs require
// gradients; dev.NoGrad() is a view on which nothing is recorded. Both are
// values, not global switches.
//
// # Execution and errors
//
// Backends may run kernels asynchronously. Host reads (Item, Float32s, …),
// dev.Sync() and errors are the synchronisation points, and a device failure
// is reported at the next one. An op that cannot succeed on its inputs (wrong
// shapes or dtypes) panics at once with a *Error naming the op, the shapes
// and dtypes; Try converts such a panic into an error. The sentinel errors
// (ErrShape, ErrDType, ErrOutOfMemory, …) are matched with errors.Is.
//
// # Memory
//
// Device memory is owned explicitly. Release frees a tensor's storage once no
// view shares it; Scope(fn) releases every tensor fn created on the calling
// goroutine except those marked Keep, which is how a training step keeps
// memory flat. A per-device budget (SetMemoryBudget; by default 80% of the
// device's memory) turns an oversized allocation into ErrOutOfMemory instead
// of a crash. Finalizers free forgotten tensors eventually, as a safety net.
//
// # What it does not do
//
// The public API has no generic functions (the yaegi interpreter that runs
// notebook cells cannot call them). Tensors are never modified in place by
// ops; only Assign writes into existing storage (for optimizers). Gradients
// are first order: backward rules run without recording.
package tensor

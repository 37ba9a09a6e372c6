// Package backends defines the contract between Kiln's tensors and the devices
// that run them: the Backend interface (opaque buffers plus a small set of
// kernels over strided views), element types (DType) with PyTorch's promotion
// rules, the element-wise op definitions every backend shares, the
// counter-based random generator, and the registry of device drivers.
//
// A backend implements primitives only. Composite operations (softmax, layer
// norm, convolution through Im2Col and Matmul, pooling, losses) are written
// once in package tensor on top of them, so a new backend needs just this
// interface. Where one kernel beats the composition, a backend may also
// implement optional fused interfaces (Fusion, ConvFusion,
// CrossEntropyFusion, AdamFusion, SGDFusion, BatchNormFusion, and for
// transformers AttentionFusion, NormFusion, EmbeddingFusion,
// MultiAdamFusion, LinearFusion and LinearActFusion; UnaryOutputGrad for
// backward passes from an op's output), which
// package tensor looks for with a type assertion, composing the same
// results from primitives where they are absent. Backend implementations
// live in sub-packages: cpu (pure Go, always present), strict (a checking
// decorator for tests) and cuda.
//
// Execution is asynchronous by contract: kernels may be queued, Read and Sync
// wait for them, and a failure is sticky and reported by the next Read or Sync.
//
// The package does not check shapes: package tensor validates every call and
// reports bad input as a *tensor.Error before a backend sees it.
package backends

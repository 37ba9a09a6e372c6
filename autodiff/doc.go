// Package autodiff is Kiln's reverse-mode differentiation engine: graph
// nodes recorded by package tensor, a topological backward pass and gradient
// accumulation. It knows nothing about tensors: values are opaque, and the
// tensor package supplies each op's backward rule as a closure and tells the
// engine how to add and release gradients (Ops).
//
// Recording is switched on per device (tensor.Device.Autodiff); a node is
// kept for every public op whose inputs require gradients, and the garbage
// collector frees a graph when no tensor refers to it. The same nodes carry
// op names, attributes, shapes and module scopes, which is what model graphs
// and ONNX export read (Walk).
//
// Only first-order gradients are supported: backward rules run without
// recording.
package autodiff

// Package onnx reads ONNX models, runs them as Kiln modules, and writes
// Kiln models as ONNX.
//
// Reading: Decode and ReadFile parse the protobuf file format with
// google.golang.org/protobuf's protowire over the schema's field numbers
// (ModelProto, GraphProto, NodeProto, AttributeProto of every type,
// TensorProto of every data type in typed fields or raw_data or external
// files, sparse tensors, ValueInfoProto shapes with dim_value and
// dim_param, opset imports). A truncated or corrupt file is an error
// wrapping ErrCorrupt naming the field where decoding stopped; decoding
// never panics. InferShapes types every value of a graph, keeping symbolic
// dimensions ("batch", "batch*seq") through the Shape → Gather → Concat →
// Reshape computations exporters emit; it never panics, whatever a
// decodable file holds (FuzzInferShapes checks that), leaving unknown what
// it cannot follow. Load and Describe check every node's attributes
// against its operator's definition (positive strides and kernels, pads
// of the right length, axes in range, a perm that is a permutation, shapes
// within 2^32 elements, …) and refuse a file that breaks one with an error
// wrapping ErrCorrupt that names the node, the attribute and the value.
// Describe summarises a file for `kiln inspect`.
//
// Running: Load returns a *Model, a Kiln module whose Params field holds
// the initializers as *nn.Param keyed by their ONNX names (made safe for
// dotted paths by ParamName: PyTorch's "fc1.weight" stays "fc1.weight"), so
// nn.Params, nn.StateDict, optimizers, checkpoints and Export work on it.
// Forward runs a one-input graph; Run takes and returns tensors by name,
// RunValues values of any kind.
// Nodes run as Kiln tensor ops (Gemm as one Linear, Conv as Conv1d,
// Conv2d or Conv3d by the input's rank, LayerNormalization as LayerNorm,
// Resize's nearest, linear and cubic modes as index selections and
// weighted sums, …), so on an autodiff device the outputs carry gradients
// back to the Params and the model can be fine-tuned:
//
//	m, err := onnx.Load("model.onnx", tensor.CPU().Autodiff())
//	if err != nil { ... }
//	defer nn.Release(m)
//	loss := nn.CrossEntropy(m.Forward(x), labels, nn.CrossEntropyOptions{})
//	opt.Step(m, loss.Backward())
//
// Small integer tensors (shapes, axes, indices of shape computations) are
// evaluated on the host, once at Load when they are constant and at each
// run when they depend on input shapes, so graphs with dynamic batch
// dimensions run on any batch size. Load reports every operator Kiln does
// not implement at once, by name and opset, wrapping ErrUnsupported.
// Opsets 7 to 17 are tested (against PyTorch 1.13's exports and NumPy
// references); later opsets load for the operators Kiln follows there.
// Opsets 1 to 6 are converted to opset 7 on load (legacy.go: broadcast
// and axis attributes, consumed_inputs, attribute forms of Reshape, Cast,
// Pad, Split and Tile).
//
// Conformance: TestConformance runs ONNX 1.12's own backend test suite
// (Debian's libonnx-testdata) on the CPU device and CONFORMANCE.md lists
// each case and operator as pass, fail or out of scope;
// testdata/conformance.txt holds the cases that must keep passing.
//
// Generating: Generate (and `kiln onnx gen MODEL.onnx -o DIR`, usable
// from //go:generate) writes a Go package that runs a model with no ONNX
// parsing at run time: a Model struct of nn.Params tagged with Load's
// names, New, Load, Compute, Forward and Run, and weights.safetensors.
// Every node becomes tensor calls under a "// name: Op" comment; shape
// arithmetic that inference follows becomes Go ints (literals, or x.Dim(i)
// for symbolic sizes); the recurrent operators loop over time. Where the
// runtime and the generator need the same rule (ConvTranspose padding,
// Resize's coordinate mapping, window and reduction arguments) one helper
// serves both; Einsum is tensor.Einsum in both. A node that cannot be
// translated runs through an Operator literal and is listed in the file's
// header and in Generated.Fallbacks.
//
// Writing: Export traces one Forward of a Kiln model through the autodiff
// tape and writes opset 17 with the parameters, buffers and the constants
// Forward builds as initializers; Encode serializes any ModelProto.
// tensor/OPS.md lists, per tensor op, whether it exports (measured by
// exporting it).
//
// Control flow, sequences, optionals and strings: If, Loop, Scan and
// SequenceMap run their graph attributes as nested plans that read the
// enclosing graphs' values by name; sequences and optionals are runtime
// values; string tensors live on the host, for Cast, CastLike and
// StringNormalizer. Graphs whose inputs or outputs are of those kinds run
// through Model.RunValues, which takes and returns Values. Quantized
// operators (QuantizeLinear, QLinearConv, MatMulInteger, …), detection
// and sampling operators (NonMaxSuppression, RoiAlign, GridSample,
// MaxUnpool), signal operators (DFT, STFT, window functions,
// MelWeightMatrix), Unique, Det, ReverseSequence and TfIdfVectorizer run
// on the host, outside autodiff: they have no gradient.
//
// The package does not run maps, MaxPool's column-major indices of
// pools that are not 2-D, convolutions and pools over more than three
// spatial dimensions, or Resize with antialias; such models are refused at Load with the
// operators named (CONFORMANCE.md lists what else the suite shows
// missing). Generate writes If, Loop and Scan as Go if statements and
// for loops, and refuses sequences, optionals and strings by name: they
// run in the runtime only. Export translates the
// ops of Kiln's layers (linear, convolutions and transposed convolutions,
// pooling, normalisation, recurrent layers unrolled, attention and the
// transformer stacks, activations, reductions, arithmetic, layout,
// resampling) and refuses the others by name.
package onnx

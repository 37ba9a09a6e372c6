//go:build !kiln_nocuda && !js && !wasip1

package tensor

// The CUDA backend registers the "cuda" device kind. It loads the NVIDIA
// libraries only when a cuda device is used, so linking it costs nothing on
// machines without a GPU; build with -tags kiln_nocuda to leave it out.
// WebAssembly builds leave it out too: a wasm module cannot load native
// libraries (purego has no wasm port).
import _ "github.com/kiln-ml/kiln/backends/cuda"

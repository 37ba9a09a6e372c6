//go:build !kiln_nocuda

package tensor

// The CUDA backend registers the "cuda" device kind. It loads the NVIDIA
// libraries only when a cuda device is used, so linking it costs nothing on
// machines without a GPU; build with -tags kiln_nocuda to leave it out.
import _ "github.com/kiln-ml/kiln/backends/cuda"

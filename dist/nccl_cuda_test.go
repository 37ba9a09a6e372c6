//go:build !kiln_nocuda

package dist

import "github.com/kiln-ml/kiln/backends/cuda"

// The CUDA backend gives NCCL what it needs.
var _ deviceMemory = (*cuda.Backend)(nil)

//go:build purego || !amd64

package cpu

import "github.com/kiln-ml/kiln/backends"

// vecAdamF32 has no vector kernel in the portable build.
func vecAdamF32[T float](outP, outM, outV, p, g, m, v []T, h backends.AdamHyper) int { return 0 }

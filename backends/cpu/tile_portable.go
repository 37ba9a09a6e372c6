//go:build !amd64 || purego

package cpu

import "github.com/kiln-ml/kiln/backends"

// tileF64Scalar has no vector kernels in this build: it does nothing.
func tileF64Scalar(op backends.BinaryOp, o, x []float32, s float64, reverse bool) int { return 0 }

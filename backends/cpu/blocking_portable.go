//go:build purego || !amd64

package cpu

// panelRowBytes returns the bytes in a row of B micro-panels that the
// cache blocking assumes (blocking.go): without the assembly kernels,
// 128, the blocking the portable kernels have always had.
func panelRowBytes() int { return 128 }

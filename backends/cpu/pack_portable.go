//go:build purego || !amd64

package cpu

// packPanels has no portable fast path: pack copies line by line.
func packPanels[T float](d, s []T, off, cs, cn, w, np int) bool { return false }

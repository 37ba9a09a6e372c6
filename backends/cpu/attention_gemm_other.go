//go:build purego || !amd64

package cpu

// Without assembly the fused attention packs its tiles (attnDirectF32
// stays nil).

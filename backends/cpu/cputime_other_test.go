//go:build !unix

package cpu

func cpuSeconds() float64 { return 0 }

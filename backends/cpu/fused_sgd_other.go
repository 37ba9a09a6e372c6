//go:build purego || !amd64

package cpu

// The portable build has no SGD kernel.

var sgdVector = false

func vecSGDMomentum(outP, outBuf, p, g, buf []float32, lr, mom, wd float64) int { return 0 }

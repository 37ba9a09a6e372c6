//go:build purego || !amd64

package cpu

// The portable build has no batch-normalisation kernels: these do nothing
// (bnChannelOK is false, so the channel ones are never called).

var bnVector = false

func vecBNSums(x []float32, x0 float64) (done int, acc [8]float64)           { return 0, acc }
func vecBNGradSums(dy, x []float32, mean float64) (done int, acc [8]float64) { return 0, acc }
func vecBNAffine(y, x []float32, m, a, b float32) int                        { return 0 }
func vecBNInputGrad(dx, dy, x []float32, m, a, b, c float32) int             { return 0 }

func bnChannelOK(s int) bool { return false }

func vecBNChannelSums(x []float32, segs, s, stride int, x0 float64) (sum, sq float64) { return 0, 0 }

func vecBNChannelGradSums(dy, x []float32, segs, s, stride int, mean float64) (g, h float64) {
	return 0, 0
}

func vecBNChannelAffine(y, x []float32, segs, s, stride int, m, a, b float32) {}

func vecBNChannelInputGrad(dx, dy, x []float32, segs, s, stride int, m, a, b, c float32) {}

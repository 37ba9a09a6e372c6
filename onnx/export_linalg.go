package onnx

import (
	"github.com/kiln-ml/kiln/autodiff"
)

// ONNX forms of the linear-algebra ops of tensor/linalg_*.go that opset 17
// has: Tril and Triu (Trilu with the diagonal offset as its k input) and
// Det. tensor.Einsum needs no entry: it records the Diagonal, Sum,
// Permute, Reshape and Matmul it is composed of. The decompositions (QR,
// SVD, eigh, Cholesky, LU), Inv and Solve have no ONNX operator.
func init() {
	trilu := func(upper int) func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		return func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
			k := tr.constant("int64", []int{}, float64(attrI(n, "diagonal")))
			tr.emit("Trilu", []string{in[0], k}, out, aInt("upper", upper))
			return keepsBatch
		}
	}
	registerExport("tril", trilu(0))
	registerExport("triu", trilu(1))
	registerExport("linalg_det", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		tr.emit("Det", in[:1], out)
		return keepsBatch
	})
}

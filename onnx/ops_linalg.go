package onnx

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

func init() {
	// Det runs on the host, by LU decomposition with partial pivoting in
	// float64: determinants come up in small geometric computations, not
	// in the bulk of a network.
	ops["Det"] = hostOp(func(c *call) []*hostTensor {
		x := c.h(0)
		r := len(x.shape)
		if r < 2 || x.shape[r-1] != x.shape[r-2] {
			c.fail(tensor.ErrShape, "input %v must be [..., M, M]", x.shape)
		}
		m := x.shape[r-1]
		out := newHost(x.dtype, x.shape[:r-2])
		a := make([]float64, m*m)
		for b := range out.size() {
			copy(a, x.floats()[b*m*m:(b+1)*m*m])
			out.set(b, luDet(a, m))
		}
		return hosts(out)
	})
}

// luDet returns the determinant of the m×m matrix a, overwriting a.
func luDet(a []float64, m int) float64 {
	det := 1.0
	for col := range m {
		p := col
		for r := col + 1; r < m; r++ {
			if math.Abs(a[r*m+col]) > math.Abs(a[p*m+col]) {
				p = r
			}
		}
		if a[p*m+col] == 0 {
			return 0
		}
		if p != col {
			for k := range m {
				a[p*m+k], a[col*m+k] = a[col*m+k], a[p*m+k]
			}
			det = -det
		}
		det *= a[col*m+col]
		for r := col + 1; r < m; r++ {
			f := a[r*m+col] / a[col*m+col]
			for k := col; k < m; k++ {
				a[r*m+k] -= f * a[col*m+k]
			}
		}
	}
	return det
}

package strict

import "github.com/kiln-ml/kiln/backends"

var _ backends.BatchNormFusion = (*Backend)(nil)

// BatchNormForward implements backends.BatchNormFusion by forwarding.
func (s *Backend) BatchNormForward(y, mean, variance, rstd, x, weight, bias backends.View, eps float64) {
	if f, ok := wrapped[backends.BatchNormFusion](s, "batch norm", "fused batch normalisation"); ok {
		s.enqueueOptional("batch norm", []backends.View{y, mean, variance, rstd, x, weight, bias}, func(vs []backends.View) {
			f.BatchNormForward(vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], eps)
		})
	}
}

// BatchNormBackward implements backends.BatchNormFusion by forwarding.
func (s *Backend) BatchNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight backends.View) {
	if f, ok := wrapped[backends.BatchNormFusion](s, "batch norm grad", "fused batch normalisation"); ok {
		s.enqueueOptional("batch norm grad", []backends.View{dx, dweight, dbias, dy, x, mean, rstd, weight}, func(vs []backends.View) {
			f.BatchNormBackward(vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], vs[7])
		})
	}
}
